///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../exercises/Ex07Check.java

// Solution of exercise 7, "Move money without losing it" (the task: java-examples/exercises/Ex07MoveMoney.java).
//
//   jbang ex07-solution [host] [port]     (defaults: 127.0.0.1 and the lab's port)

import java.util.List;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Transaction;

public class Ex07MoveMoney {

    public static void main(String[] args) {
        Ex07Check.ex07(args, Ex07MoveMoney::transfer);
    }

    static boolean transfer(Jedis jedis, String src, String dst, long amount) {
        while (true) {
            jedis.watch(src, dst); // from here, a write to either account by anyone aborts our EXEC
            List<String> held = jedis.mget(src, dst);
            long from = Long.parseLong(held.get(0));
            long to = Long.parseLong(held.get(1));
            if (from < amount) {
                jedis.unwatch();
                return false;
            }
            Transaction tx = jedis.multi();
            tx.set(src, Long.toString(from - amount));
            tx.set(dst, Long.toString(to + amount));
            if (tx.exec() != null) {
                return true;
            }
            // null: an account changed after the WATCH, so the balances read are stale; read again
        }
    }
}
