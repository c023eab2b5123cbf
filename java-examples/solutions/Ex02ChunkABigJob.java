///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../exercises/Ex02Check.java

// Solution of exercise 2, "Chunk a big job" (the task: java-examples/exercises/Ex02ChunkABigJob.java).
//
//   jbang ex02-solution [host] [port]     (defaults: 127.0.0.1 and the lab's port)

import java.util.List;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;

public class Ex02ChunkABigJob {

    public static void main(String[] args) {
        Ex02Check.ex02(args, Ex02ChunkABigJob::setInChunks);
    }

    static int setInChunks(Jedis jedis, List<String> keys, String value, int depth) {
        int synced = 0;
        // One Pipeline serves every chunk: after sync() it is empty and takes the next one.
        try (Pipeline pipeline = jedis.pipelined()) {
            for (int from = 0; from < keys.size(); from += depth) {
                for (String key : keys.subList(from, Math.min(from + depth, keys.size()))) {
                    pipeline.set(key, value);
                }
                pipeline.sync(); // at most `depth` replies are ever held in memory
                synced++;
            }
        }
        return synced;
    }
}
