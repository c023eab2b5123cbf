///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES Ex06Check.java

// Exercise 6, "Stay under the reply budget" (chapter 6, 'Limits that cut a pipeline'). A
// server queues a pipeline's replies until the client reads them, and a server with an
// output buffer limit cuts the connection once they pass it. Write getAll so that it returns
// every key's value, in order, fetched by GETs in pipelines whose values add up to at most
// `budget` bytes each. The values range from 1,000 to 100,000 bytes, and you do not know
// which is which: ask for the sizes first (STRLEN sends a number, not the value).
//
// The check stores 300 values under pipelab:ex06:, hands getAll a Jedis whose pipelines record
// the GETs of every sync(), and checks each value, one GET per key, no sync() over the 256 KiB
// budget, and at most twice the pipelines that filling each up to the budget takes.
//
//   jbang ex06 [host] [port]     (defaults: 127.0.0.1 and the lab's port; needs a Redis with no keys but the lab's)
//
// Exit code 0 when solved, 1 while not (with a sentence saying why), 2 when Redis cannot be
// used. A solution: java-examples/solutions/Ex06StayUnderTheBudget.java (jbang ex06-solution).

import java.util.List;

import redis.clients.jedis.Jedis;

public class Ex06StayUnderTheBudget {

    public static void main(String[] args) {
        Ex06Check.ex06(args, Ex06StayUnderTheBudget::getAll);
    }

    /** Every key's value, in order, by GETs in pipelines of at most `budget` bytes of values each. */
    static List<String> getAll(Jedis jedis, List<String> keys, int budget) {
        // TODO: 1. one pipeline of STRLEN for every key gives the sizes (sync(), then read the Responses);
        //       2. queue GETs on a new jedis.pipelined(), and sync() before the next GET would pass the budget;
        //       3. return the values in the order of the keys.
        throw new UnsupportedOperationException("TODO getAll: STRLEN first, then GETs in pipelines under the budget");
    }
}
