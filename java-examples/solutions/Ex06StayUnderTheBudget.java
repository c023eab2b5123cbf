///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../exercises/Ex06Check.java

// Solution of exercise 6, "Stay under the reply budget" (the task: java-examples/exercises/Ex06StayUnderTheBudget.java).
//
//   jbang ex06-solution [host] [port]     (defaults: 127.0.0.1 and the lab's port)

import java.util.ArrayList;
import java.util.List;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;

public class Ex06StayUnderTheBudget {

    public static void main(String[] args) {
        Ex06Check.ex06(args, Ex06StayUnderTheBudget::getAll);
    }

    static List<String> getAll(Jedis jedis, List<String> keys, int budget) {
        List<Response<Long>> sizes = new ArrayList<>();
        try (Pipeline sizing = jedis.pipelined()) {
            for (String key : keys) {
                sizes.add(sizing.strlen(key)); // a number per key, whatever the value's size
            }
            sizing.sync();
        }
        List<Response<String>> values = new ArrayList<>();
        Pipeline pipeline = jedis.pipelined();
        long queued = 0;
        for (int i = 0; i < keys.size(); i++) {
            long size = sizes.get(i).get();
            if (queued > 0 && queued + size > budget) { // this GET would pass the budget: send what is queued
                pipeline.sync();
                pipeline = jedis.pipelined();
                queued = 0;
            }
            values.add(pipeline.get(keys.get(i)));
            queued += size;
        }
        pipeline.sync();
        List<String> out = new ArrayList<>(values.size());
        for (Response<String> value : values) {
            out.add(value.get());
        }
        return out;
    }
}
