///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.redisson:redisson:4.7.0
//DEPS org.apache.commons:commons-pool2:2.13.1
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -XX:+UseG1GC -Xmx768m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LettuceSupport.java
//SOURCES ../common/RedissonSupport.java
//SOURCES ../ch05-cluster/ClusterSupport.java
//SOURCES LettuceHang.java
//SOURCES JedisClusterHang.java
//SOURCES RedissonSkipResult.java

// Chapter 8: batches that hang. Three ways a batch's caller waits for something that will not come,
// each run until the example's own bound (it stands in for an operator who gives up), then fixed and
// measured the same way.
//
// 1. Lettuce 7.7.0, auto-flush off, never flushed. N async INCRs on one counter with
//    setAutoFlushCommands(false) stay in DefaultEndpoint's commandBuffer; awaiting their futures
//    waits for the command timeout, which the default TimeoutOptions apply to every command from the
//    moment it is written to the endpoint. With the default timeout (RedisURI, 60 s) no future is
//    done at the bound; with a 1 s timeout the futures fail, the last of them well after the timeout.
//    The fix: a flushCommands() every FLUSH_EVERY commands and one after the last.
// 2. Jedis 8.0.2 ClusterPipeline on a pool of one connection per node (maxTotal=1). A ClusterPipeline
//    borrows a node's connection the first time a command goes to that node and keeps it until
//    close(). Two pipelines on two threads, each first writing to one master and then to the other
//    (Jedis #4557): each waits for the connection the other holds. With commons-pool2's default
//    maxWait (-1, wait forever) both wait until the bound, when the example interrupts them; with a
//    bounded maxWait one borrow fails after that wait. The fix sizes the pool for the pipelines that
//    run at once (maxTotal=2) and keeps the bounded wait.
// 3. Redisson 4.7.0, RBatch with BatchOptions.skipResult(). The batch is wrapped in CLIENT REPLY
//    OFF/ON; execute() returns an empty BatchResult once the last reply is in, and the commands' own
//    RFutures are never completed. Waiting on them waits until the bound. The fix: wait on execute(),
//    or drop skipResult() where the replies are wanted.
//
//   jbang ch08-hangs [host] [port] [size] [repeat] [warmup] boundMs skipN [cluster host:port or -]
//   e.g.  jbang ch08-hangs 127.0.0.1 "$PIPELAB_PORT" 500000 1 0 2000 10000 127.0.0.1:17000
//
// size is part 1's N; boundMs how long a wait may last before the example gives up on it; skipN the
// commands of part 3's batch. Without a cluster node part 2 is skipped and a fact says so. repeat
// and warmup are not used: every case runs once.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import io.lettuce.core.RedisClient;

import org.apache.commons.pool2.impl.GenericObjectPool;
import org.redisson.Redisson;

import redis.clients.jedis.Jedis;

public class Hangs {

    static final String EXAMPLE = "ch08-hangs";
    static final String USAGE = "usage: jbang " + EXAMPLE
            + " [host] [port] [size] [repeat] [warmup] boundMs skipN [cluster host:port or -]";

    public static void main(String[] args) {
        String[] extra = LabSupport.extra(args);
        LabSupport.run(EXAMPLE, LabSupport.usual(args), 500_000, 1, s -> run(s, extra));
    }

    /** The arguments after the usual five. */
    record Options(Duration bound, int skipN, LabSupport.Settings clusterSeed) {
    }

    static Options options(LabSupport.Settings s, String[] extra) {
        if (extra.length < 2 || extra.length > 3) {
            throw new LabSupport.Stop(2, EXAMPLE + ": expected 2 or 3 arguments after the usual five (boundMs skipN"
                    + " [cluster]) but got " + extra.length + "; " + USAGE + ".");
        }
        int bound = positive(extra[0], "boundMs");
        int skipN = positive(extra[1], "skipN");
        return new Options(Duration.ofMillis(bound), skipN,
                extra.length == 3 ? ClusterSupport.seedAt(s, extra[2]) : null);
    }

    static int positive(String text, String name) {
        try {
            int value = Integer.parseInt(text.strip());
            if (value > 0) {
                return value;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new LabSupport.Stop(2, EXAMPLE + ": " + name + " must be a positive whole number, not '" + text + "'; "
                + USAGE + ".");
    }

    static void run(LabSupport.Settings s, String[] extra) throws Exception {
        Options o = options(s, extra);
        LabSupport.Report report = new LabSupport.Report(s)
                .client("lettuce", LabSupport.versionOf(RedisClient.class, "io.lettuce", "lettuce-core",
                        "7.7.0.RELEASE").split("/")[0])
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"))
                .client("commons-pool2", LabSupport.versionOf(GenericObjectPool.class, "org.apache.commons",
                        "commons-pool2", "2.13.1"))
                .client("redisson", LabSupport.versionOf(Redisson.class, "org.redisson", "redisson", "4.7.0"))
                .withoutSpeedUps(); // every case is a fact, timed once
        List<String> keys = new ArrayList<>(LettuceHang.keys());
        keys.addAll(RedissonSkipResult.keys(o.skipN()));
        try (Jedis control = LabSupport.connect(s);
             ClusterSupport.Cluster cluster = o.clusterSeed() == null ? null : ClusterSupport.Cluster.open(o.clusterSeed())) {
            LabSupport.requireLabOnly(control, s);
            if (cluster != null) {
                LabSupport.against(o.clusterSeed(), () -> {
                    cluster.requireLabOnly();
                    ClusterSupport.requireStable(cluster);
                });
                if (cluster.masters.size() < 2) {
                    throw new LabSupport.Stop(2, "Part 2 needs a cluster of at least two masters; the one at "
                            + o.clusterSeed().where() + " has one.");
                }
            }
            LabSupport.deleteKeys(control, keys); // leftovers of an interrupted run would skew the counts
            report.header(s.size() + " Lettuce INCRs left unflushed, crossed ClusterPipelines on pools of one"
                    + (cluster == null ? " (no cluster: skipped)" : " via " + o.clusterSeed().where()) + ", a Redisson"
                    + " batch of " + o.skipN() + " with skipResult; every wait bounded at " + o.bound().toMillis() + " ms");
            report.fact("bound_ms", o.bound().toMillis());
            try {
                LettuceHang.run(report, s, control, o.bound());
                RedissonSkipResult.run(report, s, control, o.bound(), o.skipN());
            } finally {
                LabSupport.cleanup(s, keys);
            }
            if (cluster == null) {
                report.fact("jedis_skipped", "no cluster node given (8th argument); part 2 needs a Redis Cluster");
            } else {
                LabSupport.against(o.clusterSeed(), () -> JedisClusterHang.run(report, o.clusterSeed(), cluster, o.bound()));
            }
        }
        report.finish();
    }

    // ================================================================ helpers

    /** What a set of futures came to at a moment: succeeded, failed, not done. */
    record Tally(long ok, long failed, long pending) {
        static Tally of(List<? extends CompletableFuture<?>> futures) {
            long ok = 0;
            long failed = 0;
            long pending = 0;
            for (CompletableFuture<?> f : futures) {
                if (!f.isDone()) {
                    pending++;
                } else if (f.isCompletedExceptionally()) {
                    failed++;
                } else {
                    ok++;
                }
            }
            return new Tally(ok, failed, pending);
        }

        void report(LabSupport.Report report, String prefix) {
            report.fact(prefix + "_futures_ok", ok);
            report.fact(prefix + "_futures_failed", failed);
            report.fact(prefix + "_futures_pending", pending);
        }
    }

    /**
     * Waits for every future until `bound` has passed since `start` (System.nanoTime()): the
     * milliseconds from start until the last was done, or -1 when some were still pending at the
     * bound. A failed future counts as done: the caller has heard back.
     */
    static long awaitAll(List<? extends CompletableFuture<?>> futures, long start, Duration bound)
            throws InterruptedException {
        long deadline = start + bound.toNanos();
        for (CompletableFuture<?> f : futures) {
            long left = deadline - System.nanoTime();
            try {
                f.handle((v, e) -> null).get(Math.max(0, left), java.util.concurrent.TimeUnit.NANOSECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                return -1;
            } catch (java.util.concurrent.ExecutionException e) {
                throw new IllegalStateException(e); // handle() never fails
            }
        }
        return (System.nanoTime() - start) / 1_000_000;
    }

    /** The first failure among the futures, as one line, or "none". */
    static String firstFailure(List<? extends CompletableFuture<?>> futures) {
        for (CompletableFuture<?> f : futures) {
            if (f.isCompletedExceptionally()) {
                try {
                    f.getNow(null);
                } catch (RuntimeException e) {
                    Throwable cause = e.getCause() != null ? e.getCause() : e;
                    return oneLine(cause);
                }
            }
        }
        return "none";
    }

    /** "JedisException: Could not get a resource from the pool (NoSuchElementException: ...)", one line, at most 160 characters. */
    static String oneLine(Throwable e) {
        String text = plain(e) + (e.getCause() != null && e.getCause() != e ? " (" + plain(e.getCause()) + ")" : "");
        return text.length() > 160 ? text.substring(0, 157) + "..." : text;
    }

    static String plain(Throwable e) {
        String message = e.getMessage() == null ? "" : e.getMessage().strip().replaceAll("\\s+", " ")
                .replaceAll(", maxWaitDuration=PT[0-9.]+S", ""); // the time left to wait, which varies
        return e.getClass().getSimpleName() + (message.isEmpty() ? "" : ": " + message);
    }

    static long counter(Jedis control, String key) {
        String value = control.get(key);
        return value == null ? 0 : Long.parseLong(value);
    }

    static long msSince(long start) {
        return (System.nanoTime() - start) / 1_000_000;
    }
}
