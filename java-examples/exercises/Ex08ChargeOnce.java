///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES Ex08Check.java

// Exercise 8, "Charge once" (chapter 8, 'Lettuce: a reconnect writes again what was in flight').
// An order is charged to an account: a few amounts, each added to the balance with INCRBY, in one
// pipeline. Write charge so that it builds its client from host and port, adds every amount to
// the balance at `account` in one pipeline (a MULTI/EXEC is one), and returns normally, once per
// chargeId: when a reply is lost, a resend, by the client or by you, must not charge again, and a
// call with a chargeId already charged charges nothing. The code below runs, with Lettuce's
// defaults: run the check on it first and read what it says.
//
// The check hands charge the address of a small proxy of its own in front of Redis and calls it
// four times with 7, 12, 19, 25 and 37 (100 in all) on pipelab:ex08:account:42: with no fault;
// with the replies to its first write to the account dropped (the server runs the commands, the
// client hears nothing, and after 6 s the proxy closes that connection); with the same chargeId
// again; with that first write dropped before it reaches the server. Each time it reads how far
// the balance moved (200: the charge ran twice) and checks that charge returned normally.
//
//   jbang ex08 [host] [port]     (defaults: 127.0.0.1 and the lab's port; needs a Redis with no keys but the lab's)
//
// Exit code 0 when solved, 1 while not (with a sentence saying why), 2 when Redis cannot be
// used. A solution: java-examples/solutions/Ex08ChargeOnce.java (jbang ex08-solution).

import java.util.List;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TransactionResult;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;

import pipelab.LettuceSupport;

public class Ex08ChargeOnce {

    public static void main(String[] args) {
        Ex08Check.ex08(args, Ex08ChargeOnce::charge);
    }

    /** Adds every amount to the balance at `account` in one pipeline, once per chargeId, and returns normally. */
    static void charge(String host, int port, String account, String chargeId, List<Long> amounts) throws Exception {
        // TODO: as it stands this charges again whenever a reply is lost (run the check to see how often).
        //       1. A marker keyed by chargeId (under pipelab:ex08:), SET in the same MULTI/EXEC as the INCRBYs.
        //       2. Before each send, look for the marker: present means the charge already ran.
        //       3. Decide yourself when to send again: client.getOptions().mutate().autoReconnect(false), a
        //          command timeout of your own (RedisURI.Builder.withTimeout), catch the failure, go back to 2.
        // LettuceSupport.uri is RedisURI.builder() with host and port, and REDIS_URL's user, password,
        // database and TLS; LettuceSupport.client is RedisClient.create trusting REDIS_URL's CA.
        RedisClient client = LettuceSupport.client(LettuceSupport.uri(host, port).build()); // Lettuce's defaults
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            connection.setAutoFlushCommands(false); // queue everything, then one write: a pipeline
            RedisAsyncCommands<String, String> async = connection.async();
            async.multi();
            for (long amount : amounts) {
                async.incrby(account, amount);
            }
            RedisFuture<TransactionResult> exec = async.exec();
            connection.flushCommands();
            exec.get(); // EXEC's reply (Lettuce fails the future after its default timeout, 60 s)
        } finally {
            client.shutdown();
        }
    }
}
