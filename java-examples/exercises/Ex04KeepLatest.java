///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES Ex04Check.java

// Exercise 4, "Keep the latest 100, cheaply" (chapter 4, 'LREM against LTRIM: a pipeline does
// not make a command cheaper'). A pipeline saves round trips, not the server's work per
// command. Write pushKeepLatest so that, in a pipeline, it pushes each item to the head of
// the list and keeps only the newest `keep` elements, without LREM (which scans the list for
// its value): LPUSH, then trim by position.
//
// The check pushes 5,000 items with keep = 100 onto an empty list: the list must be the last
// 100 items, newest first; INFO commandstats must show no LREM and at least one LTRIM. It
// prints the server's microseconds per LTRIM call.
//
//   jbang ex04 [host] [port]     (defaults: 127.0.0.1 and the lab's port; needs a Redis with no keys but the lab's)
//
// Exit code 0 when solved, 1 while not (with a sentence saying why), 2 when Redis cannot be
// used. A solution: java-examples/solutions/Ex04KeepLatest.java (jbang ex04-solution).

import java.util.List;

import redis.clients.jedis.Jedis;

public class Ex04KeepLatest {

    public static void main(String[] args) {
        Ex04Check.ex04(args, Ex04KeepLatest::pushKeepLatest);
    }

    /** LPUSH each item and keep the newest `keep` elements of the list, in one pipeline, without LREM. */
    static void pushKeepLatest(Jedis jedis, String key, List<String> items, int keep) {
        // TODO: on a Pipeline, LPUSH each item; LTRIM key 0 keep-1 keeps the head of the list,
        //       the newest elements. sync() at the end.
        throw new UnsupportedOperationException("TODO pushKeepLatest: LPUSH and LTRIM in a pipeline");
    }
}
