///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES Ex02Check.java

// Exercise 2, "Chunk a big job" (chapter 2, 'Throughput against depth').
// One pipeline of a million commands holds a million replies in memory; one command per
// round trip pays a system call pair per command. Write setInChunks so that it SETs every key
// to value in pipelines of at most `depth` commands, syncing (reading the replies) after each
// chunk, and returns how many pipelines it synced.
//
// The check runs it on 20,000 keys at depths 1, 10, 100 and 1000 (1 warm-up, 3 runs each):
// every key must hold the value, the count must be ceil(20,000 / depth), and depth 100 must
// move at least 3x the SETs per second of depth 1.
//
//   jbang ex02 [host] [port]     (defaults: 127.0.0.1 and the lab's port; needs a Redis with no keys but the lab's)
//
// Exit code 0 when solved, 1 while not (with a sentence saying why), 2 when Redis cannot be
// used. A solution: java-examples/solutions/Ex02ChunkABigJob.java (jbang ex02-solution).

import java.util.List;

import redis.clients.jedis.Jedis;

public class Ex02ChunkABigJob {

    public static void main(String[] args) {
        Ex02Check.ex02(args, Ex02ChunkABigJob::setInChunks);
    }

    /** SET every key to value, at most `depth` commands per pipeline; the number of pipelines synced. */
    static int setInChunks(Jedis jedis, List<String> keys, String value, int depth) {
        // TODO: walk the keys in steps of depth (keys.subList helps); queue that chunk's SETs on a
        //       Pipeline, sync() it, count it. The last chunk may be shorter.
        throw new UnsupportedOperationException("TODO setInChunks: SET the keys in chunks of depth");
    }
}
