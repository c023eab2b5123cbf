///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../ch05-cluster/ClusterSupport.java
//SOURCES JedisPoolTrap.java
//SOURCES JedisClusterTrap.java

// Chapter 8: three traps in Jedis 8.0.2 pipelines, each reproduced, measured, fixed and
// measured again.
//
// 1. A pooled connection given back with a pipeline never synced. Borrower 1 queues N SETs in
//    a pipeline on a pool of ONE connection and leaves before sync() (an early return or an
//    exception); borrower 2 then sets and gets a key of its own. Three pools:
//      jedispool  the legacy JedisPool (deprecated in Jedis 8): Jedis.close() hands the Jedis to
//                 JedisPool.returnResource(), which calls Jedis.resetState(), which closes, and
//                 so syncs, the pipeline. Borrower 2 is safe; borrower 1's SETs all ran anyway.
//      poison     Jedis 8's RedisClient, a Connection taken from its pool (getPool()) and closed
//                 with a Pipeline on it unsynced: Connection.close() returns it as it is (the
//                 pool's ConnectionFactory resets nothing), and every later command on it reads
//                 the reply of the command N commands before it.
//      leak       RedisClient.pipelined() never closed: its connection never goes back, and
//                 borrower 2 waits for the pool (forever by default; here 1 s).
//    The fix, try-with-resources on the Pipeline, is measured the same way.
//    An unsynced pipeline has sent all but the last 8 KB or less of its commands: RedisOutputStream
//    writes its 8,192-byte buffer to the socket whenever the next piece does not fit, and the server
//    runs what arrives. Facts poison_b1_applied_before_b2, leak_b1_applied_while_lost, *_set_bytes
//    and output_buffer_bytes measure that remainder.
// 2. ClusterPipeline.sync() when one master's connection fails. N SETs across every master;
//    before sync() the example kills the pipeline's connection on one master (CLIENT KILL ID).
//    sync() does not throw: it logs the failure, and that master's Responses stay empty,
//    although the SETs that had left the client's 8 KB buffer ran. The worker that failed
//    also tidies up with Iterator.remove() on the iterator the calling thread used to hand
//    out the work (MultiNodePipelineBase.sync(), "TODO these operations not thread-safe"):
//    that removes whichever master's queue the iterator returned last, by then usually
//    another master's, while the failed master's connection is what goes. close()'s second
//    sync() then dies in a pool thread on the queue left without a connection. The fix reads
//    every Response and sends the SETs that got no reply (they are idempotent) again in a
//    new pipeline.
// 3. A thread pool per cluster sync(). When a pipeline spans more than one master,
//    MultiNodePipelineBase.sync() makes Executors.newFixedThreadPool(
//    MULTI_NODE_PIPELINE_SYNC_WORKERS, 3 by default) and shuts it down (shutdownNow) on every
//    call, unless the pipeline came from RedisClusterClient.pipelined(ExecutorService).
//    close() syncs again, and sync() does not forget the masters it has seen, so sync()
//    inside try-with-resources makes two pools. Threads started and time per pipeline for
//    small pipelines (one SET per master): sync_then_close, close_only, shared_pool, and
//    one_node (keys in one slot: sync() reads on the calling thread).
//
//   jbang ch08-jedis [host] [port] [size] [repeat] [warmup] [cluster]
//   e.g.  jbang ch08-jedis 127.0.0.1 "$PIPELAB_PORT" 1000 5 1 127.0.0.1:17000
//
// size is N (default 1000). cluster is host:port of one node of a Redis Cluster, or - for
// none; without it parts 2 and 3 are skipped and a fact says so. The cluster is reached with its
// own settings, REDIS_CLUSTER_URL (else REDIS_URL's), the server with REDIS_URL's. repeat and warmup apply to
// part 3's timings; parts 1 and 2 happen once.

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import redis.clients.jedis.ClusterPipeline;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisPool;
import redis.clients.jedis.JedisPoolConfig;
import redis.clients.jedis.MultiNodePipelineBase;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.util.JedisClusterCRC16;
import redis.clients.jedis.util.RedisOutputStream;

public class JedisTraps {

    static final String EXAMPLE = "ch08-jedis";
    /** How long borrower 2 waits for the pool; commons-pool2's default (-1) waits forever. */
    static final Duration POOL_WAIT = Duration.ofSeconds(1);
    /** Read timeout of every Jedis connection here: Jedis's default, stated so the bound is visible. */
    static final int SOCKET_TIMEOUT_MS = Protocol.DEFAULT_TIMEOUT;
    /** CLIENT SETNAME of part 2's connections, so the example can find and kill the pipeline's. */
    static final String CLUSTER_CLIENT_NAME = "pipelab-ch08-jedis-cluster";
    static final String B1_VALUE = "borrower-1";
    static final String B2_VALUE = "borrower-2";
    static final String PROBE = "pipelab-probe-";
    /** Small cluster pipelines per sample in part 3. */
    static final int PIPELINES_PER_SAMPLE = 200;
    /** Rounds of re-sending in part 2's fix before it gives up. */
    static final int RETRY_ROUNDS = 3;
    /** How long part 2 waits for the uncaught exception of a worker thread of close()'s sync(). */
    static final Duration UNCAUGHT_WAIT = Duration.ofSeconds(2);
    /** Characters of an exception message kept in a fact. */
    static final int MESSAGE_CHARS = 160;
    /**
     * How long part 1 waits before counting what an abandoned pipeline's flushes ran: they reach
     * the server on another connection than the count, so the server may read the count first.
     */
    static final long FLUSHED_SETTLE_MS = 100;

    public static void main(String[] args) {
        String[] extra = LabSupport.extra(args);
        LabSupport.run(EXAMPLE, LabSupport.usual(args), 1_000, 5, s -> run(s, extra));
    }

    /** "host:port" of a cluster node as Settings, or null for "-" or nothing. */
    static LabSupport.Settings clusterNode(LabSupport.Settings s, String[] extra) {
        if (extra.length > 1) {
            throw new LabSupport.Stop(2, EXAMPLE + ": expected at most 1 argument after the usual five (cluster"
                    + " host:port or -) but got " + extra.length + ".");
        }
        return extra.length == 0 ? null : ClusterSupport.seedAt(s, extra[0]);
    }

    static void run(LabSupport.Settings s, String[] extra) throws Exception {
        LabSupport.Settings clusterSeed = clusterNode(s, extra);
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"))
                .withoutSpeedUps(); // part 3's modes are compared in facts, per pipeline
        // Both servers checked before anything is written: reachable, and holding only lab keys.
        try (Jedis control = LabSupport.connect(s);
             ClusterSupport.Cluster cluster = clusterSeed == null ? null : ClusterSupport.Cluster.open(clusterSeed)) {
            LabSupport.requireLabOnly(control, s);
            if (cluster != null) {
                LabSupport.against(clusterSeed, () -> {
                    cluster.requireLabOnly();
                    ClusterSupport.requireStable(cluster);
                });
                if (cluster.masters.size() < 2) {
                    throw new LabSupport.Stop(2, "Parts 2 and 3 need a cluster of at least two masters; the one at "
                            + clusterSeed.where() + " has one.");
                }
            }
            report.header("a pipeline left unsynced on a pool of one connection (" + s.size() + " SETs)"
                    + (clusterSeed == null ? "" : ", and ClusterPipeline via " + clusterSeed.where()));
            List<String> keys = new ArrayList<>();
            try {
                report.fact("socket_timeout_ms", SOCKET_TIMEOUT_MS);
                report.fact("pool_max_wait_ms", POOL_WAIT.toMillis());
                report.fact("pool_max_wait_default_ms", new ConnectionPoolConfig().getMaxWaitDuration().toMillis());
                report.fact("output_buffer_bytes", outputBufferBytes());
                JedisPoolTrap.legacyPool(report, s, control, keys);
                JedisPoolTrap.poisonedConnection(report, s, control, keys);
                JedisPoolTrap.leakedPipeline(report, s, control, keys);
                JedisPoolTrap.fixedPipeline(report, s, control, keys);
            } finally {
                LabSupport.cleanup(s, keys);
            }
            if (cluster == null) {
                report.fact("cluster_skipped", "no cluster node given (6th argument); parts 2 and 3 need a Redis Cluster");
            } else {
                LabSupport.against(clusterSeed,
                        () -> JedisClusterTrap.clusterParts(report, clusterSeed, cluster));
            }
        }
        report.finish();
    }

    // ================================================================ helpers

    /**
     * What `step` printed on System.err (slf4j-simple looks System.err up at every line, so
     * Jedis's log goes to the buffer too) instead of showing it.
     */
    static String stderrOf(LabSupport.Step step) throws Exception {
        PrintStream real = System.err;
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        System.setErr(new PrintStream(buffer, true, StandardCharsets.UTF_8));
        try {
            step.run();
        } finally {
            System.setErr(real);
        }
        return buffer.toString(StandardCharsets.UTF_8);
    }

    static String secondLine(String text) {
        String[] lines = text.strip().split("\r?\n");
        return lines.length > 1 ? lines[1].strip() : "nothing";
    }

    /**
     * A private map field of MultiNodePipelineBase, read by reflection: the example's window on
     * the pipeline's bookkeeping (Jedis is on the class path, not a named module, so this works).
     */
    static Map<?, ?> privateMap(MultiNodePipelineBase pipeline, String field) throws ReflectiveOperationException {
        java.lang.reflect.Field f = MultiNodePipelineBase.class.getDeclaredField(field);
        f.setAccessible(true);
        return (Map<?, ?>) f.get(pipeline);
    }

    /**
     * RedisOutputStream's buffer, the bytes a pipeline holds back before it writes them to the
     * socket: 8,192 unless the jedis.bufferSize.output property says otherwise (read by reflection).
     */
    static int outputBufferBytes() throws ReflectiveOperationException {
        java.lang.reflect.Field f = RedisOutputStream.class.getDeclaredField("OUTPUT_BUFFER_SIZE");
        f.setAccessible(true);
        return f.getInt(null);
    }

    /** The bytes of one command in RESP, as Jedis writes it: *count, then $length and each argument. */
    static int respBytes(String... args) {
        int total = 1 + String.valueOf(args.length).length() + 2;
        for (String arg : args) {
            int length = arg.getBytes(StandardCharsets.UTF_8).length;
            total += 1 + String.valueOf(length).length() + 2 + length + 2;
        }
        return total;
    }

    static String firstLine(String text) {
        String line = text.strip().split("\r?\n", 2)[0].strip();
        return line.isEmpty() ? "nothing" : line;
    }

    /**
     * "JedisException: Could not get a resource from the pool (NoSuchElementException: ...)",
     * the exception and its cause, one line, shortened.
     */
    static String describe(Throwable e) {
        String text = oneLine(e);
        if (e.getCause() != null && e.getCause() != e) {
            text += " (" + oneLine(e.getCause()) + ")";
        }
        return text.length() > MESSAGE_CHARS ? text.substring(0, MESSAGE_CHARS - 3) + "..." : text;
    }

    static String oneLine(Throwable e) {
        String message = e.getMessage();
        if (message != null) {
            // commons-pool2 prints the time left to wait (", maxWaitDuration=PT0.99998S"); leak_b2_waited_ms has it
            message = message.strip().replaceAll("\\s+", " ").replaceAll(", maxWaitDuration=PT[0-9.]+S", "");
        }
        return e.getClass().getSimpleName() + (message == null ? "" : ": " + message);
    }
}
