///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../ch05-cluster/ClusterSupport.java

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
// none; without it parts 2 and 3 are skipped and a fact says so. repeat and warmup apply to
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
        return extra.length == 0 ? null : LabSupport.serverAt(s, extra[0], "cluster must be host:port of one cluster node");
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
                cluster.requireLabOnly();
                ClusterSupport.requireStable(cluster);
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
                legacyPool(report, s, control, keys);
                poisonedConnection(report, s, control, keys);
                leakedPipeline(report, s, control, keys);
                fixedPipeline(report, s, control, keys);
            } finally {
                LabSupport.cleanup(s, keys);
            }
            if (cluster == null) {
                report.fact("cluster_skipped", "no cluster node given (6th argument); parts 2 and 3 need a Redis Cluster");
            } else {
                clusterParts(report, clusterSeed, cluster);
            }
        }
        report.finish();
    }

    // ================================================================ part 1: a pool of one

    /** Thrown where the application would return early or fail, between the commands and sync(). */
    static final class GaveUp extends RuntimeException {
        private static final long serialVersionUID = 1L;

        GaveUp() {
            super("borrower 1 gave up before sync()", null, false, false);
        }
    }

    /** What borrower 2's SET and GET returned (a value, or "Exception: message"), and whether both are right. */
    record Seen(String set, String get) {
        boolean correct() {
            return "OK".equals(set) && B2_VALUE.equals(get);
        }

        void report(LabSupport.Report report, String prefix) {
            report.fact(prefix + "_b2_set", set);
            report.fact(prefix + "_b2_get", get);
            report.fact(prefix + "_b2_correct", correct());
        }
    }

    static Seen seen(Supplier<String> set, Supplier<String> get) {
        return new Seen(outcome(set), outcome(get));
    }

    /** The value a call returned, or the exception it threw as "Class: message", one line. */
    static String outcome(Supplier<?> call) {
        try {
            return String.valueOf(call.get());
        } catch (RuntimeException e) {
            return describe(e);
        }
    }

    // --8<-- [start:jedispool]
    /**
     * Borrower 1 on the legacy JedisPool. Jedis.close() returns the Jedis through
     * JedisPool.returnResource(), which calls Jedis.resetState(): that closes the pipeline,
     * and Pipeline.close() is sync(). Borrower 2 is safe, and the "abandoned" SETs all run.
     */
    static void legacyBorrower(JedisPool pool, List<String> keys) {
        try (Jedis jedis = pool.getResource()) {
            Pipeline pipeline = jedis.pipelined();
            for (String key : keys) {
                pipeline.set(key, B1_VALUE);
            }
            throw new GaveUp(); // leaves before sync()
        }
    }
    // --8<-- [end:jedispool]

    /** Part 1, legacy JedisPool(maxTotal 1). Facts jedispool_*. */
    static void legacyPool(LabSupport.Report report, LabSupport.Settings s, Jedis control, List<String> all) {
        List<String> keys = LabSupport.keys(s.size(), "ch08", "jedis", "jedispool");
        String b2Key = LabSupport.key("ch08", "jedis", "jedispool", "b2");
        all.addAll(keys);
        all.add(b2Key);
        JedisPoolConfig config = new JedisPoolConfig();
        config.setMaxTotal(1);
        config.setMaxWait(POOL_WAIT);
        try (JedisPool pool = new JedisPool(config, s.host(), s.port(), SOCKET_TIMEOUT_MS)) {
            try {
                legacyBorrower(pool, keys);
            } catch (GaveUp expected) {
                // the application's early exit; the pool has the Jedis back by now
            }
            Seen seen;
            try (Jedis jedis = pool.getResource()) {
                seen = seen(() -> jedis.set(b2Key, B2_VALUE), () -> jedis.get(b2Key));
            }
            seen.report(report, "jedispool");
            report.fact("jedispool_b1_applied", LabSupport.countExisting(control, keys));
            report.fact("jedispool_connections_created", pool.getCreatedCount());
        }
    }

    /** A RedisClient whose pool holds at most one connection and waits POOL_WAIT for it. */
    static RedisClient poolOfOne(LabSupport.Settings s) {
        ConnectionPoolConfig pool = new ConnectionPoolConfig();
        pool.setMaxTotal(1);
        pool.setMaxWait(POOL_WAIT);
        JedisClientConfig config = DefaultJedisClientConfig.builder().socketTimeoutMillis(SOCKET_TIMEOUT_MS).build();
        return RedisClient.builder().hostAndPort(s.host(), s.port()).poolConfig(pool).clientConfig(config).build();
    }

    // --8<-- [start:poison]
    /**
     * Borrower 1 with the connection, not the pipeline, as the resource. Connection.close()
     * returns it to the pool as it is: replies unread, and commands that did not fill the
     * 8 KB output buffer not even sent. The next borrower's command flushes them and reads
     * the first stale reply.
     */
    static void poisoningBorrower(RedisClient client, List<String> keys) {
        try (Connection connection = client.getPool().getResource()) {
            Pipeline pipeline = new Pipeline(connection);
            for (String key : keys) {
                pipeline.set(key, B1_VALUE);
            }
            throw new GaveUp(); // leaves before sync()
        }
    }
    // --8<-- [end:poison]

    /**
     * Part 1, RedisClient with a pool of one, connection returned unsynced. Facts poison_*:
     * what borrower 2 saw, how many replies behind the pooled connection stays afterwards,
     * what the server holds for borrower 2's key, and borrower 1's SETs the server ran.
     */
    static void poisonedConnection(LabSupport.Report report, LabSupport.Settings s, Jedis control, List<String> all) {
        List<String> keys = LabSupport.keys(s.size(), "ch08", "jedis", "poison");
        String b2Key = LabSupport.key("ch08", "jedis", "poison", "b2");
        all.addAll(keys);
        all.add(b2Key);
        try (RedisClient client = poolOfOne(s)) {
            try {
                poisoningBorrower(client, keys);
            } catch (GaveUp expected) {
                // back in the pool, unsynced
            }
            Seen seen = seen(() -> client.set(b2Key, B2_VALUE), () -> client.get(b2Key));
            seen.report(report, "poison");
            report.fact("poison_replies_behind", repliesBehind(client, s.size() + 10));
            // Read after the ECHOs' round trips, so borrower 2's SET has surely run by now (its
            // set() returned at once, on a stale reply, possibly before the server ran it).
            report.fact("poison_b2_key_value", String.valueOf(control.get(b2Key)));
            report.fact("poison_b1_applied", LabSupport.countExisting(control, keys));
            report.fact("poison_connections_created", client.getPool().getCreatedCount());
        }
    }

    /**
     * How far behind the pooled connection is: ECHOs numbered 0, 1, 2 ... through the client;
     * the first one that comes back with an ECHO's text (its own or an earlier one's) tells:
     * ECHO i reading "pipelab-probe-j" is i - j replies behind. Each command reads the oldest
     * unread reply and leaves its own, so the lag never shrinks while the connection lives.
     * -1 if no ECHO text came back within `limit` ECHOs.
     */
    static int repliesBehind(RedisClient client, int limit) {
        for (int i = 0; i <= limit; i++) {
            Object reply = client.sendCommand(Protocol.Command.ECHO, PROBE + i);
            String text = reply instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : "";
            if (text.startsWith(PROBE)) {
                return i - Integer.parseInt(text.substring(PROBE.length()));
            }
        }
        return -1;
    }

    // --8<-- [start:leak]
    /**
     * Borrower 1 with RedisClient.pipelined() and no try-with-resources: the Pipeline holds a
     * pooled connection until its close(), which never comes. (Returned here only so the
     * example can close it afterwards; the application has lost it.)
     */
    static Pipeline leakingBorrower(RedisClient client, List<String> keys) {
        Pipeline pipeline = client.pipelined();
        for (String key : keys) {
            pipeline.set(key, B1_VALUE);
        }
        return pipeline; // no sync(), no close()
    }
    // --8<-- [end:leak]

    /** Part 1, the leaked pipeline. Facts leak_*. */
    static void leakedPipeline(LabSupport.Report report, LabSupport.Settings s, Jedis control, List<String> all) {
        List<String> keys = LabSupport.keys(s.size(), "ch08", "jedis", "leak");
        String b2Key = LabSupport.key("ch08", "jedis", "leak", "b2");
        all.addAll(keys);
        all.add(b2Key);
        try (RedisClient client = poolOfOne(s)) {
            Pipeline lost = leakingBorrower(client, keys);
            long start = System.nanoTime();
            String set = outcome(() -> client.set(b2Key, B2_VALUE));
            report.fact("leak_b2_waited_ms", (System.nanoTime() - start) / 1_000_000);
            report.fact("leak_b2_set", set);
            // What the server ran of the SETs that sit in the leaked connection's buffer:
            // only what overflowed the 8 KB output buffer was ever written.
            report.fact("leak_b1_applied_while_lost", LabSupport.countExisting(control, keys));
            lost.close(); // sync() and give the connection back
            report.fact("leak_b1_applied_after_close", LabSupport.countExisting(control, keys));
            Seen after = seen(() -> client.set(b2Key, B2_VALUE), () -> client.get(b2Key));
            report.fact("leak_b2_correct_after_close", after.correct());
        }
    }

    // --8<-- [start:pool_fix]
    /**
     * The fix: the Pipeline is the resource. Pipeline.close() is sync() (every reply read),
     * and then, for a pipeline from RedisClient.pipelined(), the connection goes back to the
     * pool in step. Borrower 1's SETs still run: a pipeline cannot be taken back.
     */
    static void carefulBorrower(RedisClient client, List<String> keys) {
        try (Pipeline pipeline = client.pipelined()) {
            for (String key : keys) {
                pipeline.set(key, B1_VALUE);
            }
            throw new GaveUp(); // leaves before sync(); close() syncs
        }
    }
    // --8<-- [end:pool_fix]

    /** Part 1, the fix, measured as the poison case was. Facts pool_fix_*. */
    static void fixedPipeline(LabSupport.Report report, LabSupport.Settings s, Jedis control, List<String> all) {
        List<String> keys = LabSupport.keys(s.size(), "ch08", "jedis", "fix");
        String b2Key = LabSupport.key("ch08", "jedis", "fix", "b2");
        all.addAll(keys);
        all.add(b2Key);
        try (RedisClient client = poolOfOne(s)) {
            try {
                carefulBorrower(client, keys);
            } catch (GaveUp expected) {
                // the pipeline was synced and the connection returned on the way out
            }
            Seen seen = seen(() -> client.set(b2Key, B2_VALUE), () -> client.get(b2Key));
            seen.report(report, "pool_fix");
            report.fact("pool_fix_b1_applied", LabSupport.countExisting(control, keys));
            report.fact("pool_fix_replies_behind", repliesBehind(client, s.size() + 10));
        }
    }

    // ================================================================ parts 2 and 3: the cluster

    static void clusterParts(LabSupport.Report report, LabSupport.Settings seed, ClusterSupport.Cluster cluster)
            throws Exception {
        List<String> keys = LabSupport.keys(seed.size(), "ch08", "jedis", "cluster");
        List<String> syncKeys = onePerMaster(cluster, "sync");
        List<String> oneNodeKeys = LabSupport.keys(cluster.masters.size(), "ch08", "jedis", "{one-node}");
        List<String> all = new ArrayList<>(keys);
        all.addAll(syncKeys);
        all.addAll(oneNodeKeys);
        try {
            report.fact("cluster_masters", cluster.masters.size());
            partialSync(report, seed, cluster, keys);
            threadsPerSync(report, seed, syncKeys, oneNodeKeys);
        } finally {
            try {
                cluster.deleteKeys(all);
            } catch (RuntimeException e) {
                System.err.println("Warning: could not delete the lab's keys on the cluster at " + seed.where()
                        + ": " + describe(e) + ".");
            }
        }
    }

    /** One key per master (pipelab:ch08:jedis:<tag>:<i>, the first i that lands on each). */
    static List<String> onePerMaster(ClusterSupport.Cluster cluster, String tag) {
        Map<ClusterSupport.Node, String> keys = new LinkedHashMap<>();
        for (int i = 0; keys.size() < cluster.masters.size(); i++) {
            String key = LabSupport.key("ch08", "jedis", tag, i);
            keys.putIfAbsent(cluster.ownerOf(JedisClusterCRC16.getSlot(key)), key);
        }
        return new ArrayList<>(keys.values());
    }

    static ClusterSupport.Node ownerOf(ClusterSupport.Cluster cluster, String key) {
        return cluster.ownerOf(JedisClusterCRC16.getSlot(key));
    }

    static RedisClusterClient clusterClient(LabSupport.Settings seed, String name) {
        DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder().socketTimeoutMillis(SOCKET_TIMEOUT_MS);
        if (name != null) {
            config.clientName(name); // CLIENT SETNAME on every connection the client opens
        }
        return RedisClusterClient.builder().nodes(Set.of(new HostAndPort(seed.host(), seed.port())))
                .clientConfig(config.build()).build();
    }

    /**
     * Part 2. N SETs in one ClusterPipeline; the victim is the master of the first key, so its
     * queue is the first of the pipeline's (a LinkedHashMap, in the order masters were first
     * used), as it is for two masters in three with a victim chosen at random. Facts
     * cluster_*: whether sync() threw, Responses with and without a value, the empty ones'
     * exception, what the victim and the others applied, what Jedis logged, the bookkeeping
     * sync() left and what close() did with it; then cluster_fix_*.
     */
    static void partialSync(LabSupport.Report report, LabSupport.Settings seed, ClusterSupport.Cluster cluster,
                            List<String> keys) throws Exception {
        int n = keys.size();
        ClusterSupport.Node victim = ownerOf(cluster, keys.get(0));
        List<String> victimKeys = new ArrayList<>();
        List<String> otherKeys = new ArrayList<>();
        for (String key : keys) {
            (ownerOf(cluster, key).equals(victim) ? victimKeys : otherKeys).add(key);
        }
        try (RedisClusterClient client = clusterClient(seed, CLUSTER_CLIENT_NAME)) {
            ClusterPipeline pipeline = client.pipelined();
            List<Response<String>> replies = new ArrayList<>(n);
            int[] killed = {0};
            RuntimeException[] thrown = {null};
            String logged = stderrOf(() -> thrown[0] = sendAndSync(pipeline, keys, replies,
                    () -> killed[0] = killNamed(cluster.on(victim), CLUSTER_CLIENT_NAME)));
            int ok = 0;
            int empty = 0;
            int victimOk = 0;
            String emptyError = null;
            List<Integer> failed = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                try {
                    replies.get(i).get();
                    ok++;
                    victimOk += ownerOf(cluster, keys.get(i)).equals(victim) ? 1 : 0;
                } catch (RuntimeException e) {
                    empty++;
                    failed.add(i);
                    emptyError = emptyError == null ? describe(e) : emptyError;
                }
            }
            report.fact("cluster_victim", victim.where());
            report.fact("cluster_connections_killed", killed[0]);
            report.fact("cluster_sync_threw", thrown[0] == null ? "nothing" : describe(thrown[0]));
            report.fact("cluster_responses_ok", ok);
            report.fact("cluster_responses_empty", empty);
            report.fact("cluster_response_error", emptyError == null ? "none" : emptyError);
            report.fact("cluster_victim_sent", victimKeys.size());
            report.fact("cluster_victim_responses_ok", victimOk);
            report.fact("cluster_victim_applied", cluster.countExisting(victimKeys));
            report.fact("cluster_others_sent", otherKeys.size());
            report.fact("cluster_others_applied", cluster.countExisting(otherKeys));
            report.fact("cluster_applied_per_master", appliedPerMaster(cluster, keys));
            report.fact("cluster_logged", firstLine(logged));
            report.fact("cluster_logged_exception", secondLine(logged));

            // What sync() left in the pipeline's bookkeeping for close() (and any reuse) to work on.
            Set<?> queued = privateMap(pipeline, "pipelinedResponses").keySet();
            Set<?> connected = privateMap(pipeline, "connections").keySet();
            report.fact("cluster_queues_after_sync", String.valueOf(queued));
            report.fact("cluster_connections_after_sync", String.valueOf(connected));
            boolean orphanQueue = !connected.containsAll(queued);
            report.fact("cluster_queue_without_connection", orphanQueue);

            // try-with-resources would do this: close() is sync() again, then the connections go
            // back. A queue whose connection is gone makes that sync's worker throw, in a pool
            // thread, where only the thread's uncaught-exception handler sees it.
            List<String> uncaught = new java.util.concurrent.CopyOnWriteArrayList<>();
            Thread.UncaughtExceptionHandler previous = Thread.getDefaultUncaughtExceptionHandler();
            Thread.setDefaultUncaughtExceptionHandler((thread, e) -> uncaught.add(thread.getName() + ": " + describe(e)));
            String closeThrew = "nothing";
            try {
                try {
                    pipeline.close();
                } catch (RuntimeException e) {
                    closeThrew = describe(e);
                }
                // The latch is counted down before the worker's exception leaves it: wait for the handler.
                long deadline = System.nanoTime() + UNCAUGHT_WAIT.toNanos();
                while (orphanQueue && uncaught.isEmpty() && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
            } finally {
                Thread.setDefaultUncaughtExceptionHandler(previous);
            }
            report.fact("cluster_close_threw", closeThrew);
            report.fact("cluster_close_uncaught", uncaught.isEmpty() ? "none" : uncaught.get(0));

            resendFailed(report, client, cluster, keys, failed);
        }
    }

    // --8<-- [start:cluster_trap]
    /**
     * N SETs in one ClusterPipeline, and one master's connection dies before sync() (here a
     * CLIENT KILL; a failover or a network blip in real life). sync() reads each master's
     * replies on a worker thread; a JedisConnectionException there is logged ("Error with
     * connection to ...") and swallowed, and that master's Responses stay empty. The SETs
     * that had left the 8 KB output buffer before the kill have run all the same.
     */
    static RuntimeException sendAndSync(ClusterPipeline pipeline, List<String> keys, List<Response<String>> replies,
                                        Runnable failure) {
        for (int i = 0; i < keys.size(); i++) {
            replies.add(pipeline.set(keys.get(i), value(i)));
        }
        failure.run();
        try {
            pipeline.sync();
            return null; // no exception, whatever happened to one master
        } catch (RuntimeException e) {
            return e;
        }
    }
    // --8<-- [end:cluster_trap]

    // --8<-- [start:cluster_fix]
    /**
     * The fix: after sync(), read every Response. An IllegalStateException ("Please close
     * pipeline or multi block ...") means no reply was ever read for it: the SET may or may
     * not have run. SET of a fixed value is idempotent, so send those again, in a new
     * pipeline, until every one has a reply. (Not safe for INCR, LPUSH, XADD ...)
     */
    static List<Integer> resend(RedisClusterClient client, List<String> keys, List<Integer> failed) {
        List<Integer> stillFailed = new ArrayList<>();
        List<Response<String>> replies = new ArrayList<>(failed.size());
        try (ClusterPipeline pipeline = client.pipelined()) {
            for (int i : failed) {
                replies.add(pipeline.set(keys.get(i), value(i)));
            }
            pipeline.sync();
        }
        for (int j = 0; j < replies.size(); j++) {
            try {
                replies.get(j).get();
            } catch (IllegalStateException noReply) {
                stillFailed.add(failed.get(j));
            }
        }
        return stillFailed;
    }
    // --8<-- [end:cluster_fix]

    static void resendFailed(LabSupport.Report report, RedisClusterClient client, ClusterSupport.Cluster cluster,
                             List<String> keys, List<Integer> failed) {
        int resent = failed.size();
        int rounds = 0;
        while (!failed.isEmpty() && rounds < RETRY_ROUNDS) {
            failed = resend(client, keys, failed);
            rounds++;
        }
        report.fact("cluster_fix_resent", resent);
        report.fact("cluster_fix_rounds", rounds);
        report.fact("cluster_fix_unanswered", failed.size());
        report.fact("cluster_fix_applied", cluster.countExisting(keys));
    }

    /** "127.0.0.1:7000 274/331, ...": keys present / SETs sent, per master. */
    static String appliedPerMaster(ClusterSupport.Cluster cluster, List<String> keys) {
        StringBuilder text = new StringBuilder();
        for (ClusterSupport.Node node : cluster.masters) {
            List<String> own = keys.stream().filter(key -> ownerOf(cluster, key).equals(node)).toList();
            text.append(text.length() == 0 ? "" : ", ").append(node.where()).append(' ')
                    .append(cluster.countExisting(own)).append('/').append(own.size());
        }
        return text.toString();
    }

    /** SET value of key i: fixed, so sending the SET twice leaves the same result. */
    static String value(int i) {
        return "v" + i;
    }

    /** CLIENT KILL ID of every connection named `name` on this server; returns how many. */
    static int killNamed(Jedis node, String name) {
        int killed = 0;
        for (String line : node.clientList().split("\r?\n")) {
            if (line.contains(" name=" + name + " ")) {
                String id = line.substring(line.indexOf("id=") + 3, line.indexOf(' ', line.indexOf("id=")));
                killed += node.clientKill(new redis.clients.jedis.params.ClientKillParams().id(id)) > 0 ? 1 : 0;
            }
        }
        if (killed == 0) {
            throw LabSupport.failure("no connection named " + name + " on " + node.getConnection().getHostAndPort()
                    + " to kill");
        }
        return killed;
    }

    // --8<-- [start:threads]
    /** The idiom: sync() for the replies, close() by try-with-resources. */
    static void syncThenClose(RedisClusterClient client, List<String> keys) {
        try (ClusterPipeline pipeline = client.pipelined()) {
            for (String key : keys) {
                pipeline.set(key, "v");
            }
            pipeline.sync();
        }
    }

    /** The same with a pool the application owns: sync() borrows its threads, never shuts it down. */
    static void withSharedPool(RedisClusterClient client, ExecutorService workers, List<String> keys) {
        try (ClusterPipeline pipeline = client.pipelined(workers)) {
            for (String key : keys) {
                pipeline.set(key, "v");
            }
            pipeline.sync();
        }
    }
    // --8<-- [end:threads]

    /** close() alone, which syncs: one sync per pipeline instead of two. */
    static void closeOnly(RedisClusterClient client, List<String> keys) {
        try (ClusterPipeline pipeline = client.pipelined()) {
            for (String key : keys) {
                pipeline.set(key, "v");
            }
        }
    }

    /**
     * Part 3. Small pipelines, PIPELINES_PER_SAMPLE per sample, in four modes: sync_then_close,
     * close_only and shared_pool (a fixed pool of MULTI_NODE_PIPELINE_SYNC_WORKERS threads made
     * once) with one SET per master, and one_node, sync_then_close with keys of one slot.
     * Facts per mode: threads_per_pipeline_<mode> (threads the JVM started, recorded
     * iterations only) and us_per_pipeline_<mode> (the median sample over its pipelines).
     */
    static void threadsPerSync(LabSupport.Report report, LabSupport.Settings seed, List<String> keys,
                               List<String> oneNodeKeys) throws Exception {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        int workers = MultiNodePipelineBase.MULTI_NODE_PIPELINE_SYNC_WORKERS;
        report.fact("sync_workers", workers);
        ExecutorService shared = Executors.newFixedThreadPool(workers);
        try (RedisClusterClient client = clusterClient(seed, null)) {
            Map<String, LabSupport.Step> modes = new LinkedHashMap<>();
            modes.put("sync_then_close", () -> syncThenClose(client, keys));
            modes.put("close_only", () -> closeOnly(client, keys));
            modes.put("shared_pool", () -> withSharedPool(client, shared, keys));
            modes.put("one_node", () -> syncThenClose(client, oneNodeKeys));
            for (Map.Entry<String, LabSupport.Step> mode : modes.entrySet()) {
                long[] started = {0};
                long[] mark = {0};
                int[] iteration = {0};
                LabSupport.Samples samples = LabSupport.measure(seed, () -> mark[0] = threads.getTotalStartedThreadCount(),
                        () -> {
                            for (int i = 0; i < PIPELINES_PER_SAMPLE; i++) {
                                mode.getValue().run();
                            }
                        }, () -> {
                            if (iteration[0]++ >= seed.warmup()) {
                                started[0] += threads.getTotalStartedThreadCount() - mark[0];
                            }
                        });
                report.add(mode.getKey(), mode.getKey().replace('_', ' '), "pipelines", PIPELINES_PER_SAMPLE, samples);
                double perPipeline = (double) started[0] / ((long) seed.repeat() * PIPELINES_PER_SAMPLE);
                report.fact("threads_per_pipeline_" + mode.getKey(), LabSupport.round2(perPipeline));
                report.fact("us_per_pipeline_" + mode.getKey(), Math.round(median(samples) * 1e6 / PIPELINES_PER_SAMPLE));
            }
        } finally {
            shared.shutdown();
            shared.awaitTermination(2, TimeUnit.SECONDS);
        }
    }

    static double median(List<Double> samples) {
        List<Double> sorted = new ArrayList<>(samples);
        sorted.sort(null);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
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
