///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES Ex01Check.java

// Exercise 1, "Pipeline the loop" (chapter 1, 'One request, one reply, one wait').
// A loop of jedis.incr(key) waits one round trip per key. Write incrAll so that it sends
// every INCR in one Jedis Pipeline (a plain pipeline, not a MULTI/EXEC transaction) and
// returns the replies in the order of the keys.
//
// The check runs it on 10,000 new keys: every reply must be 1 and every key must hold "1";
// then it times its own one-INCR-at-a-time loop against yours (1 warm-up, 3 runs each,
// medians) and wants yours at least 3x faster.
//
//   jbang ex01 [host] [port]     (defaults: 127.0.0.1 and the lab's port; needs a Redis with no keys but the lab's)
//
// Exit code 0 when solved, 1 while not (with a sentence saying why), 2 when Redis cannot be
// used. A solution: java-examples/solutions/Ex01PipelineTheLoop.java (jbang ex01-solution).

import java.util.List;

import redis.clients.jedis.Jedis;

public class Ex01PipelineTheLoop {

    public static void main(String[] args) {
        Ex01Check.ex01(args, Ex01PipelineTheLoop::incrAll);
    }

    /** INCR every key in one pipeline; the replies (each key's new value), in key order. */
    static List<Long> incrAll(Jedis jedis, List<String> keys) {
        // TODO: jedis.pipelined() queues commands and hands back a Response for each; sync() sends
        //       them and reads every reply. Collect the Responses, then their get() values.
        throw new UnsupportedOperationException("TODO incrAll: INCR every key in one Pipeline");
    }
}
