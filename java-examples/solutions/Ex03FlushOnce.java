///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../exercises/Ex03Check.java

// Solution of exercise 3, "Flush once" (the task: java-examples/exercises/Ex03FlushOnce.java).
//
//   jbang ex03-solution [host] [port]     (defaults: 127.0.0.1 and the lab's port)

import java.util.ArrayList;
import java.util.List;

import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.async.RedisAsyncCommands;

public class Ex03FlushOnce {

    public static void main(String[] args) {
        Ex03Check.ex03(args, Ex03FlushOnce::queueAll);
    }

    static List<RedisFuture<Long>> queueAll(RedisAsyncCommands<String, String> async, String key,
                                            List<String> members) {
        List<RedisFuture<Long>> futures = new ArrayList<>(members.size());
        for (String member : members) {
            // With auto-flush off this only appends to the endpoint's command buffer.
            futures.add(async.sadd(key, member));
        }
        return futures;
    }
}
