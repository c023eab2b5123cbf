///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../exercises/Ex01Check.java

// Solution of exercise 1, "Pipeline the loop" (the task: java-examples/exercises/Ex01PipelineTheLoop.java).
//
//   jbang ex01-solution [host] [port]     (defaults: 127.0.0.1 and the lab's port)

import java.util.ArrayList;
import java.util.List;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;

public class Ex01PipelineTheLoop {

    public static void main(String[] args) {
        Ex01Check.ex01(args, Ex01PipelineTheLoop::incrAll);
    }

    static List<Long> incrAll(Jedis jedis, List<String> keys) {
        List<Response<Long>> replies = new ArrayList<>(keys.size());
        try (Pipeline pipeline = jedis.pipelined()) {
            for (String key : keys) {
                replies.add(pipeline.incr(key)); // only buffered: nothing waits here
            }
            pipeline.sync(); // the one wait: send the buffer, read every reply
        }
        return replies.stream().map(Response::get).toList();
    }
}
