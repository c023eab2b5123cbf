///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES Ex07Check.java

// Exercise 7, "Move money without losing it" (chapter 7, 'WATCH: optimistic transactions and
// pipelines'). Accounts are keys holding whole numbers as strings. Write transfer so that it moves
// `amount` from src to dst and stays right while other clients move money between the same
// accounts: read both balances, return false (writing nothing) if src would go negative, else
// write both new balances in MULTI/EXEC under a WATCH on both keys, and when the EXEC is aborted
// start again from the read. Jedis's Transaction.exec() does not throw on an aborted EXEC.
//
// The check runs 4 writers, each on a connection of its own, doing 300 transfers of 1 to 10
// between 10 accounts of 1,000 under pipelab:ex07:, and pays 1 into the source of every 4th
// transfer between its read and its EXEC. It checks the refusals first, then that the money in
// the accounts is what went in, that every balance is what the transfers that returned true make
// it, that no payable transfer was refused, and that each EXEC ran under a WATCH on both accounts.
//
//   jbang ex07 [host] [port]     (defaults: 127.0.0.1 and the lab's port; needs a Redis with no keys but the lab's)
//
// Exit code 0 when solved, 1 while not (with a sentence saying why), 2 when Redis cannot be
// used. A solution: java-examples/solutions/Ex07MoveMoney.java (jbang ex07-solution).

import redis.clients.jedis.Jedis;

public class Ex07MoveMoney {

    public static void main(String[] args) {
        Ex07Check.ex07(args, Ex07MoveMoney::transfer);
    }

    /** Moves amount from src to dst and returns true, or returns false if src holds less than amount. */
    static boolean transfer(Jedis jedis, String src, String dst, long amount) {
        // TODO: 1. jedis.watch(src, dst), then read both balances (Long.parseLong);
        //       2. too little in src: jedis.unwatch() and return false;
        //       3. Transaction tx = jedis.multi(); set both new balances; tx.exec();
        //       4. exec() returned null: another client changed an account, so go back to 1.
        throw new UnsupportedOperationException("TODO transfer: WATCH, read, MULTI/EXEC, again while exec() is null");
    }
}
