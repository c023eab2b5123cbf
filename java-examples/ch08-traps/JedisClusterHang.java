// Hangs, part 2: Jedis ClusterPipelines on a pool of one connection per node; run by Hangs.run, whose
// helpers it reaches by name.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import redis.clients.jedis.ClusterPipeline;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.util.JedisClusterCRC16;

final class JedisClusterHang extends Hangs {

    /** The bounded wait of the second case and of the fix (commons-pool2's default, -1, waits forever). */
    static final Duration MAX_WAIT = Duration.ofMillis(500);
    /** How long the example waits for an interrupted pipeline to give its connections back. */
    static final Duration RELEASE_WAIT = Duration.ofSeconds(5);

    /** Pool per node: connections, and how long a borrow may wait (null: commons-pool2's default). */
    record Case(String name, int maxTotal, Duration maxWait) {
    }

    static final List<Case> CASES = List.of(
            new Case("default_wait", 1, null),
            new Case("bounded_wait", 1, MAX_WAIT),
            new Case("sized_pool", 2, MAX_WAIT));

    static void run(LabSupport.Report report, LabSupport.Settings seed, ClusterSupport.Cluster cluster, Duration bound)
            throws Exception {
        // pipeline 0 writes to master A, then B; pipeline 1 to B, then A
        List<List<String>> orders = List.of(onMasters(cluster, "p0", 0, 1), onMasters(cluster, "p1", 1, 0));
        List<String> written = orders.stream().flatMap(List::stream).toList();
        report.fact("jedis_pool_max_wait_default_ms", new ConnectionPoolConfig().getMaxWaitDuration().toMillis());
        report.fact("jedis_pool_max_total_default", new ConnectionPoolConfig().getMaxTotal());
        report.fact("jedis_max_wait_ms", MAX_WAIT.toMillis());
        report.fact("jedis_pipelines", orders.size());
        try {
            for (Case c : CASES) {
                cluster.deleteKeys(written);
                crossed(report, seed, c, orders, bound);
                report.fact("jedis_" + c.name() + "_keys_written", cluster.countExisting(written));
            }
        } finally {
            cluster.deleteKeys(written);
        }
    }

    /** One key per named master (indexes into cluster.masters), in that order: the first of the tag's keys on each. */
    static List<String> onMasters(ClusterSupport.Cluster cluster, String tag, int... masters) {
        List<String> keys = new ArrayList<>();
        for (int m : masters) {
            ClusterSupport.Node master = cluster.masters.get(m);
            int i = 0;
            while (!cluster.ownerOf(JedisClusterCRC16.getSlot(LabSupport.key("ch08", "hangs", "jedis", tag, i))).equals(master)) {
                i++;
            }
            keys.add(LabSupport.key("ch08", "hangs", "jedis", tag, i));
        }
        return keys;
    }

    static RedisClusterClient client(LabSupport.Settings seed, Case c) {
        ConnectionPoolConfig pool = new ConnectionPoolConfig();
        pool.setMaxTotal(c.maxTotal());
        if (c.maxWait() != null) {
            pool.setMaxWait(c.maxWait());
        }
        return RedisClusterClient.builder().nodes(Set.of(new HostAndPort(seed.host(), seed.port())))
                .poolConfig(pool).clientConfig(LabSupport.jedisConfig(seed, DefaultJedisClientConfig.builder())).build();
    }

    /**
     * The two pipelines of one case on two threads, each bounded: per pipeline, whether it was still
     * waiting at the bound (then the example interrupts it), what it ended with and after how long.
     */
    static void crossed(LabSupport.Report report, LabSupport.Settings seed, Case c, List<List<String>> orders,
                        Duration bound)
            throws Exception {
        String prefix = "jedis_" + c.name();
        report.fact(prefix + "_max_total", c.maxTotal());
        report.fact(prefix + "_max_wait_ms", c.maxWait() == null ? -1 : c.maxWait().toMillis());
        ExecutorService threads = Executors.newFixedThreadPool(orders.size());
        try (RedisClusterClient client = client(seed, c)) {
            CountDownLatch firstWritten = new CountDownLatch(orders.size());
            long start = System.nanoTime();
            List<Future<String>> pipelines = new ArrayList<>();
            for (List<String> order : orders) {
                pipelines.add(threads.submit(() -> {
                    try {
                        crossedPipeline(client, order, firstWritten);
                        return "ok";
                    } catch (RuntimeException | InterruptedException e) {
                        return oneLine(e);
                    }
                }));
            }
            long deadline = start + bound.toNanos();
            int hung = 0;
            int ok = 0;
            long lastMs = 0;
            List<String> outcomes = new ArrayList<>();
            for (Future<String> f : pipelines) {
                try {
                    String outcome = f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                    outcomes.add(outcome);
                    ok += outcome.equals("ok") ? 1 : 0;
                    lastMs = msSince(start);
                } catch (TimeoutException e) {
                    hung++;
                    outcomes.add("still waiting at the bound");
                }
            }
            long waited = msSince(start);
            threads.shutdownNow(); // interrupts the borrows that still wait: their pipelines close and give back
            if (!threads.awaitTermination(RELEASE_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw LabSupport.failure("interrupted ClusterPipelines did not end within " + RELEASE_WAIT.toSeconds() + " s");
            }
            report.fact(prefix + "_hung", hung);
            report.fact(prefix + "_ok", ok);
            report.fact(prefix + "_failed", pipelines.size() - hung - ok);
            report.fact(prefix + "_ms", hung > 0 ? waited : lastMs);
            report.fact(prefix + "_outcome", String.join("; ", new java.util.LinkedHashSet<>(outcomes)));
        } finally {
            threads.shutdownNow();
        }
    }

    // --8<-- [start:jedis_hang]
    /**
     * One thread's pipeline: a SET on its first master, then, once the other thread's pipeline has
     * written too, a SET on the other master. The first SET keeps that master's connection in the
     * pipeline until close(); with one connection per master, each second SET waits for the other's.
     */
    static void crossedPipeline(RedisClusterClient client, List<String> order, CountDownLatch written)
            throws InterruptedException {
        try (ClusterPipeline pipeline = client.pipelined()) {
            pipeline.set(order.get(0), "1"); // borrows master A's connection
            written.countDown();
            written.await();
            pipeline.set(order.get(1), "1"); // needs master B's, which the other pipeline holds
            pipeline.sync();
        }
    }
    // --8<-- [end:jedis_hang]
}
