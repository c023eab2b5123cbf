///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../exercises/Ex04Check.java

// Solution of exercise 4, "Keep the latest 100, cheaply" (the task: java-examples/exercises/Ex04KeepLatest.java).
//
//   jbang ex04-solution [host] [port]     (defaults: 127.0.0.1 and the lab's port)

import java.util.List;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;

public class Ex04KeepLatest {

    public static void main(String[] args) {
        Ex04Check.ex04(args, Ex04KeepLatest::pushKeepLatest);
    }

    static void pushKeepLatest(Jedis jedis, String key, List<String> items, int keep) {
        try (Pipeline pipeline = jedis.pipelined()) {
            for (String item : items) {
                pipeline.lpush(key, item);
                // By position: drops the one element past `keep`, whatever the list's length.
                pipeline.ltrim(key, 0, keep - 1);
            }
            pipeline.sync();
        }
    }
}
