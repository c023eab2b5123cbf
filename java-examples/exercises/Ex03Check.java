//SOURCES ExerciseCheck.java

// Exercise 3's check, beside the exercise: the shared plumbing (arguments, the lab's Redis,
// the verdict) is ExerciseCheck's, whose static members this class reaches by name.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.StatefulRedisConnection;
import redis.clients.jedis.Jedis;

import pipelab.LettuceSupport;

final class Ex03Check extends ExerciseCheck {

    private static final int EX03_MEMBERS = 10_000;

    /** How long bytes that did leave the client get to reach the server before the check looks. */
    private static final long EX03_SETTLE_MS = 200;

    static void ex03(String[] args, QueueAll queueAll) {
        run(EX03, args, EX03_MEMBERS, s -> inLab(EX03, s, jedis -> checkQueueAll(s, jedis, queueAll)));
    }

    private static String checkQueueAll(LabSupport.Settings s, Jedis jedis, QueueAll queueAll) throws Exception {
        String key = LabSupport.key(EX03.alias(), "set");
        List<String> members = new ArrayList<>(EX03_MEMBERS);
        for (int i = 0; i < EX03_MEMBERS; i++) {
            members.add("member:" + i);
        }
        System.out.println(String.format(Locale.ROOT, "Exercise 3: queueAll of %,d SADDs on a Lettuce connection"
                + " with auto-flush off, at %s", EX03_MEMBERS, s.where()));
        RedisClient client = null;
        try {
            client = LettuceSupport.client(LettuceSupport.uri(s.host(), s.port()).build());
            StatefulRedisConnection<String, String> connection = client.connect();
            connection.setAutoFlushCommands(false);
            warmUp(connection, LabSupport.key(EX03.alias(), "warm-up"), members);
            List<RedisFuture<Long>> futures = student(EX03, () -> queueAll.queueAll(connection.async(), key, members));

            // Nothing may have reached Redis yet: read the set on the other connection (Jedis).
            Thread.sleep(EX03_SETTLE_MS);
            long early = jedis.scard(key);
            long done = futures == null ? 0 : futures.stream().filter(Future::isDone).count();
            if (early > 0 || done > 0) {
                throw EX03.notSolved(String.format(Locale.ROOT, "bytes left before the flush: when queueAll returned"
                        + " the set already had %,d members and %,d futures were done; only queue the SADDs (no"
                        + " flushCommands(), no waiting on futures, auto-flush stays off) and return the futures",
                        early, done));
            }
            if (futures == null || futures.size() != members.size()) {
                throw EX03.notSolved(String.format(Locale.ROOT, "queueAll returned %s for %,d members; return one"
                        + " SADD future per member, in order", futures == null ? "null"
                        : String.format(Locale.ROOT, "%,d futures", futures.size()), members.size()));
            }

            long start = System.nanoTime();
            connection.flushCommands();
            boolean all;
            try {
                all = LettuceFutures.awaitAll(Duration.ofSeconds(30), futures.toArray(new Future<?>[0]));
            } catch (RedisCommandExecutionException e) { // Redis answered a queued command with an error
                throw EX03.notSolved("a queued command failed after the flush (" + e.getMessage()
                        + "); queue SADD key member, one per member");
            }
            double flushToLast = (System.nanoTime() - start) / 1e9;
            if (!all) {
                throw EX03.notSolved("not every future completed within 30 s of flushCommands(); return the"
                        + " futures of the SADDs you queued");
            }
            for (int i = 0; i < futures.size(); i++) {
                Long reply = futures.get(i).get();
                if (!Long.valueOf(1).equals(reply)) {
                    throw EX03.notSolved("future " + i + " holds " + reply + ", but SADD of a new member replies 1;"
                            + " return the SADD futures in the order of the members");
                }
            }
            long scard = jedis.scard(key);
            if (scard != EX03_MEMBERS) {
                throw EX03.notSolved(String.format(Locale.ROOT, "after the flush the set has %,d members, not %,d;"
                        + " SADD every member to the given key", scard, EX03_MEMBERS));
            }
            System.out.println(String.format(Locale.ROOT, "before flushCommands(): SCARD 0, no future done;"
                    + " after: %,d replies of 1, SCARD %,d", EX03_MEMBERS, scard));
            System.out.println("flushCommands() to the last reply: " + millis(flushToLast));
            return String.format(Locale.ROOT, "%,d SADDs held back until one flushCommands(), the last reply %s"
                    + " after it", EX03_MEMBERS, millis(flushToLast));
        } catch (ExecutionException e) {
            throw EX03.notSolved("a future failed (" + e.getCause() + "); queue SADD key member, one per member");
        } finally {
            if (client != null) {
                // No quiet period: nothing is in flight once the check is over.
                client.shutdown(0, 2, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * The same SADDs once, flushed and awaited, to another key: the first flush of a fresh JVM
     * spends most of its time compiling Lettuce's encoding path, and the figure reported is
     * meant to be the flush's. The key goes with the rest of the prefix at the end.
     */
    private static void warmUp(StatefulRedisConnection<String, String> connection, String key, List<String> members)
            throws Exception {
        List<RedisFuture<Long>> futures = new ArrayList<>(members.size());
        for (String member : members) {
            futures.add(connection.async().sadd(key, member));
        }
        connection.flushCommands();
        if (!LettuceFutures.awaitAll(Duration.ofSeconds(30), futures.toArray(new Future<?>[0]))) {
            throw LabSupport.failure("the checker's warm-up SADDs did not complete within 30 s");
        }
    }
}
