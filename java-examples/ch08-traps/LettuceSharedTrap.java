// LettuceTraps, 3. a shared connection's state: one trap of the example, run by LettuceTraps.run, whose static
// members (the report, the clients, the helpers) it reaches by name.

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.resource.ClientResources;
import redis.clients.jedis.Jedis;

final class LettuceSharedTrap extends LettuceTraps {

    static void sharedTrap(LabSupport.Report report, LabSupport.Settings s, ClientResources resources, Jedis control)
            throws Exception {
        String keyA = LabSupport.key("ch08", "lettuce", "multi:a");
        String keyB = LabSupport.key("ch08", "lettuce", "multi:b");
        String list = LabSupport.key("ch08", "lettuce", "blpop:list");
        String keyG = LabSupport.key("ch08", "lettuce", "blpop:b");
        control.set(keyG, "b");
        RedisClient client = client(resources, s.host(), s.port(), BLOCKING_TIMEOUT, ClientOptions.create());
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try (StatefulRedisConnection<String, String> shared = client.connect();
             StatefulRedisConnection<String, String> dedicated = client.connect()) {
            for (boolean exec : new boolean[] {false, true}) {
                String p = exec ? "multi_exec_" : "multi_shared_";
                control.del(keyA, keyB);
                long[] result = multiBeside(threads, shared, shared, keyA, keyB, exec);
                report.fact(p + "b_returned", result[0] == Long.MIN_VALUE ? "null" : String.valueOf(result[0]));
                report.fact(p + "b_applied", control.get(keyB) != null);
                report.fact(p + "b_ms", round1(result[1] / 1e3));
                if (exec) {
                    report.fact(p + "results", result[2]); // EXEC's replies: A queued one command
                }
            }
            control.del(keyA, keyB);
            long[] fixed = multiBeside(threads, dedicated, shared, keyA, keyB, false);
            report.fact("multi_dedicated_b_returned", fixed[0] == Long.MIN_VALUE ? "null" : String.valueOf(fixed[0]));
            report.fact("multi_dedicated_b_applied", control.get(keyB) != null);
            report.fact("multi_dedicated_b_ms", round1(fixed[1] / 1e3));

            report.fact("blpop_timeout_s", 1);
            report.fact("blpop_shared_get_ms", round1(getBesideBlpop(threads, shared, shared, list, keyG)));
            report.fact("blpop_dedicated_get_ms", round1(getBesideBlpop(threads, dedicated, shared, list, keyG)));
        } finally {
            threads.shutdownNow();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    // --8<-- [start:shared_multi]
    /**
     * Thread A: MULTI, SET, 200 ms of work, then DISCARD (or EXEC) on connection `a`. Thread B,
     * meanwhile, INCR on connection `b`. With a == b, StatefulRedisConnectionImpl sees a
     * transaction open (isMulti()) and queues B's INCR in it; the sync API then returns null at once.
     * Returns B's reply (Long.MIN_VALUE for null), B's microseconds and EXEC's reply count.
     */
    static long[] multiBeside(ExecutorService threads, StatefulRedisConnection<String, String> a,
                              StatefulRedisConnection<String, String> b, String keyA, String keyB, boolean exec)
            throws Exception {
        CountDownLatch inTransaction = new CountDownLatch(1);
        Future<Integer> threadA = threads.submit(() -> {
            RedisCommands<String, String> sync = a.sync();
            sync.multi();
            sync.set(keyA, "a");
            inTransaction.countDown();
            Thread.sleep(200);
            return exec ? sync.exec().size() : (sync.discard() == null ? -1 : 0);
        });
        inTransaction.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        long start = System.nanoTime();
        Long reply = b.sync().incr(keyB);
        long micros = (System.nanoTime() - start) / 1_000;
        int results = LabSupport.await(threadA);
        return new long[] {reply == null ? Long.MIN_VALUE : reply, micros, results};
    }
    // --8<-- [end:shared_multi]

    // --8<-- [start:shared_blpop]
    /** Thread A blocks for 1 s in BLPOP on `a`; 100 ms in, B's GET on `b`: B's wait in ms. */
    static double getBesideBlpop(ExecutorService threads, StatefulRedisConnection<String, String> a,
                                 StatefulRedisConnection<String, String> b, String list, String key) throws Exception {
        Future<?> threadA = threads.submit(() -> a.sync().blpop(1, list)); // the list stays empty
        Thread.sleep(100);
        long start = System.nanoTime();
        b.sync().get(key); // on the same connection it waits behind BLPOP's reply
        double ms = (System.nanoTime() - start) / 1e6;
        LabSupport.await(threadA);
        return ms;
    }
    // --8<-- [end:shared_blpop]
}
