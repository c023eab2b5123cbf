///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS io.valkey:valkey-glide:2.3.1:${os.detected.classifier}
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LabTiming.java
//SOURCES ../common/SaddWorkload.java
//SOURCES ../ch05-cluster/ClusterSupport.java
//SOURCES ../common/GlideSupport.java

// Chapter 7: Valkey GLIDE for Java, whose Rust core keeps ONE multiplexed connection per node
// and whose Batch is the only explicit pipeline it offers. GLIDE ships a native library, so the
// jar comes per platform; ${os.detected.classifier} picks this machine's (linux-x86_64 here).
//   1. One GlideClient shared by T threads, `incrs` INCRs of one key split over them, each
//      thread waiting on its own future: the same work as ch07-mux, whose Lettuce connection
//      is shared the same way. Commands per server read, and GLIDE's connections, per T.
//   2. The book's N SADDs to distinct keys as one Batch(false), a pipeline, and one
//      Batch(true), MULTI ... EXEC, with what reached the server.
//   3. One WRONGTYPE inside a non-atomic batch, with raiseOnError true and false.
//   4. A batch of `bigBatch` SADDs with no batch timeout: the client's default request
//      timeout covers the whole batch, and the server runs it all the same.
//   5. Given a cluster node: a non-atomic ClusterBatch of SETs across slots, the SETs and reads
//      each master saw per batch, and an atomic ClusterBatch of the same keys. The cluster is
//      reached with its own settings, REDIS_CLUSTER_URL (else REDIS_URL's), the server with REDIS_URL's.
// Jedis connections (never GLIDE's) check, count and clean up.
//
//   jbang ch07-glide [host] [port] [size] [repeat] [warmup] threads [cluster] [incrs] [bigBatch] [clusterSets] [clusterCalls]
//   e.g.  jbang ch07-glide 127.0.0.1 "$PIPELAB_PORT" 100000 3 1 1,8,64 127.0.0.1:17000 10000 400000 300 20
//
// size: SADDs per batch (default 100000); threads: default 1,8,64; cluster: host:port of one
// node of a Redis Cluster, or - for none (the default); incrs: INCRs per thread count (default
// size); bigBatch: default 400000; clusterSets and clusterCalls: SETs per ClusterBatch and how
// many batches are counted after one warm-up (defaults 300 and 20). The notebook passes chapter 7's.

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import glide.api.BaseClient;
import glide.api.GlideClient;
import glide.api.GlideClusterClient;
import glide.api.models.Batch;
import glide.api.models.ClusterBatch;
import glide.api.models.commands.batch.BatchOptions;
import glide.api.models.configuration.GlideClientConfiguration;
import glide.api.models.exceptions.GlideException;

import redis.clients.jedis.Jedis;

import pipelab.GlideSupport;
import pipelab.LabConnection;

public class GlideBatch {

    static final String EXAMPLE = "ch07-glide";
    static final String GLIDE_VERSION = "2.3.1";
    /** More threads than this measure the scheduler, not Redis. */
    static final int MAX_THREADS = 512;
    /** The timed batches get their own timeout, so the client's default (part 4) cannot cut them short. */
    static final int BATCH_TIMEOUT_MS = 60_000;
    /** Between two counts of the keys the server has applied; equal twice in a row means it has finished. */
    static final long SETTLE_POLL_MS = 200;

    public static void main(String[] args) {
        String[] extra = LabSupport.extra(args);
        LabSupport.run(EXAMPLE, LabSupport.usual(args), 100_000, 3, s -> bench(s, extra));
    }

    record Params(List<Integer> threads, LabSupport.Settings cluster, int incrs, int bigBatch, int clusterSets,
                  int clusterCalls) {
    }

    static Params params(LabSupport.Settings s, String[] extra) {
        if (extra.length > 6) {
            throw new LabSupport.Stop(2, EXAMPLE + ": expected at most 6 arguments after the usual five (threads"
                    + " cluster incrs bigBatch clusterSets clusterCalls) but got " + extra.length + ".");
        }
        List<Integer> threads = extra.length > 0 ? LabSupport.intList(EXAMPLE, "threads", extra[0]) : List.of(1, 8, 64);
        if (threads.stream().anyMatch(t -> t > MAX_THREADS)) {
            throw new LabSupport.Stop(2, EXAMPLE + ": threads must be at most " + MAX_THREADS + ", not " + threads + ".");
        }
        LabSupport.Settings cluster = extra.length > 1 ? ClusterSupport.seedAt(s, extra[1]) : null;
        int incrs = extra.length > 2 ? LabSupport.intList(EXAMPLE, "incrs", extra[2]).get(0) : s.size();
        int bigBatch = extra.length > 3 ? LabSupport.intList(EXAMPLE, "bigBatch", extra[3]).get(0) : 400_000;
        int clusterSets = extra.length > 4 ? LabSupport.intList(EXAMPLE, "clusterSets", extra[4]).get(0) : 300;
        int clusterCalls = extra.length > 5 ? LabSupport.intList(EXAMPLE, "clusterCalls", extra[5]).get(0) : 20;
        return new Params(threads, cluster, incrs, bigBatch, clusterSets, clusterCalls);
    }

    static void bench(LabSupport.Settings s, String[] extra) throws Exception {
        Params p = params(s, extra);
        String counter = LabSupport.key("ch07", "glide", "incr");
        List<String> saddKeys = LabSupport.keys(s.size(), "ch07", "glide", "sadd");
        String wrongType = LabSupport.key("ch07", "glide", "wrongtype");
        String ran = LabSupport.key("ch07", "glide", "ran");
        List<String> bigKeys = LabSupport.keys(p.bigBatch(), "ch07", "glide", "big");
        List<String> keys = new ArrayList<>(saddKeys);
        keys.addAll(bigKeys);
        keys.addAll(List.of(counter, wrongType, ran));
        LabSupport.Report report = new LabSupport.Report(s)
                .client("valkey-glide", LabSupport.versionOf(GlideClient.class, "io.valkey", "valkey-glide", GLIDE_VERSION))
                .withoutSpeedUps(); // INCRs from threads and SADD batches are different work

        try (Jedis control = LabSupport.connect(s);
             ClusterSupport.Cluster cluster = p.cluster() == null ? null : ClusterSupport.Cluster.open(p.cluster())) {
            // Before anything is written, here and on every master of the cluster.
            LabSupport.requireLabOnly(control, s);
            if (cluster != null) {
                LabSupport.against(p.cluster(), cluster::requireLabOnly);
            }
            GlideClient client = null;
            try {
                // GLIDE's defaults, with REDIS_URL's user, password, database and TLS.
                GlideClientConfiguration config = GlideSupport.config(s.host(), s.port()).build();
                client = GlideSupport.client(config);
                report.header(p.incrs() + " INCRs from " + p.threads() + " threads on one GlideClient, " + s.size()
                        + " SADDs per Batch, a WRONGTYPE in a batch, " + p.bigBatch() + " SADDs under the default"
                        + " request timeout" + (cluster == null ? "" : ", and a ClusterBatch of " + p.clusterSets()
                        + " SETs via " + p.cluster().where()));
                defaults(report, control, config);
                multiplexed(report, s, control, client, p, counter);
                batches(report, s, control, client, saddKeys);
                raiseOnError(report, control, client, wrongType, ran);
                defaultTimeout(report, control, client, bigKeys);
            } finally {
                LabSupport.cleanup(s, keys, client, GlideBatch::close);
            }
            if (cluster != null) {
                LabSupport.against(p.cluster(), () -> clusterBatches(report, cluster, p));
            }
        }
        report.finish();
    }

    /**
     * The request timeout the configuration leaves unset, as the Rust core fills it in (only an
     * internal class asks the core), and what the server records as GLIDE's library.
     */
    static void defaults(LabSupport.Report report, Jedis control, GlideClientConfiguration config) {
        report.fact("config_request_timeout", String.valueOf(config.getRequestTimeout()));
        try {
            report.fact("default_request_timeout_ms", glide.internal.GlideNativeBridge.getGlideCoreDefaultRequestTimeoutMs());
        } catch (LinkageError notInThisVersion) {
            report.fact("default_request_timeout_ms", "not exposed by this GLIDE version");
        }
        for (String line : control.clientList().split("\r?\n")) {
            if (line.contains(" lib-name=Glide")) {
                report.fact("glide_lib", field(line, "lib-name") + " " + field(line, "lib-ver"));
                break;
            }
        }
    }

    // ---------------------------------------------------------------- 1. one client, many threads

    /**
     * Per thread count, mode glide_t<T>: INCRs of one key split over T threads, and, around all
     * of its iterations, facts glide_t<T>_cmds_per_read, _server_reads and _connections (GLIDE's
     * connections open right after).
     */
    static void multiplexed(LabSupport.Report report, LabSupport.Settings s, Jedis control, GlideClient client,
                            Params p, String counter) throws Exception {
        for (int threads : p.threads()) {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                String mode = "glide_t" + threads;
                control.del(counter);
                Map<String, Long> callsBefore = LabSupport.commandCalls(s);
                Map<String, Long> before = LabSupport.infoNumbers(control, "stats");
                LabSupport.Samples samples = LabSupport.measure(s, null,
                        () -> LabSupport.split(pool, threads, p.incrs(), () -> incr(client, counter)), null);
                Map<String, Long> after = LabSupport.infoNumbers(control, "stats");
                int open = glideConnections(control); // before commandCalls opens a connection of its own
                Map<String, Long> calls = LabSupport.callsBetween(callsBefore, LabSupport.commandCalls(s));
                calls.remove("client|list"); // the count just above, not GLIDE's
                long expected = (long) p.incrs() * samples.iterations();
                long value = Long.parseLong(control.get(counter));
                if (value != expected) {
                    throw LabSupport.failure(mode + " left the counter at " + value + " instead of " + expected);
                }
                report.add(mode, "glide 1 client t" + threads, "INCRs", p.incrs(), samples);
                report.wire(mode, calls);
                long commands = after.get("total_commands_processed") - before.get("total_commands_processed");
                long reads = after.get("total_reads_processed") - before.get("total_reads_processed");
                report.fact(mode + "_cmds_per_read", LabSupport.round2((double) commands / Math.max(1, reads)));
                report.fact(mode + "_server_reads", reads);
                report.fact(mode + "_connections", open);
            } finally {
                pool.shutdownNow();
            }
        }
    }

    // ---------------------------------------------------------------- 2. Batch, non-atomic and atomic

    /**
     * Modes glide_batch and glide_atomic, the keys emptied before and checked after each
     * iteration; facts <mode>_sadd, _multi and _exec: what the server ran per iteration.
     */
    static void batches(LabSupport.Report report, LabSupport.Settings s, Jedis control, GlideClient client,
                        List<String> keys) throws Exception {
        BatchOptions options = BatchOptions.builder().timeout(BATCH_TIMEOUT_MS).build();
        for (boolean atomic : new boolean[] {false, true}) {
            String mode = atomic ? "glide_atomic" : "glide_batch";
            long[] added = new long[1];
            Map<String, Long> before = LabSupport.commandCalls(s);
            LabSupport.Samples samples = LabSupport.measure(s,
                    () -> LabSupport.deleteKeys(control, keys),
                    () -> added[0] = exec(client, saddBatch(keys, atomic), options),
                    () -> SaddWorkload.verifyMember(control, keys, added[0]));
            Map<String, Long> calls = LabSupport.callsBetween(before, LabSupport.commandCalls(s));
            report.add(mode, atomic ? "glide Batch(true)" : "glide Batch(false)", "SADDs", samples);
            report.wire(mode, calls);
            int runs = samples.iterations();
            for (String command : List.of("sadd", "multi", "exec")) {
                long total = calls.getOrDefault(command, 0L);
                report.fact(mode + "_" + command, total % runs == 0 ? (Number) (total / runs) : LabSupport.round2((double) total / runs));
            }
        }
    }

    // --8<-- [start:glide]
    /** Every thread calls this on the same client; GLIDE's core writes what is queued whenever the socket is free. */
    static long incr(GlideClient client, String key) throws Exception {
        return LabSupport.await(client.incr(key)); // a CompletableFuture; waiting on it is what makes the call blocking
    }

    /** One SADD per key; atomic wraps them in MULTI ... EXEC, non-atomic sends them as a plain pipeline. */
    static Batch saddBatch(List<String> keys, boolean atomic) {
        Batch batch = new Batch(atomic);
        for (String key : keys) {
            batch.sadd(key, new String[] {SaddWorkload.MEMBER});
        }
        return batch;
    }

    /**
     * Sends the batch and sums the replies (1 = member added). Without options the client's
     * request timeout covers the whole batch; raiseOnError true turns a failed command into
     * an exception instead of an element of the result.
     */
    static long exec(GlideClient client, Batch batch, BatchOptions options) throws Exception {
        Object[] replies = LabSupport.await(options == null ? client.exec(batch, true) : client.exec(batch, true, options));
        long added = 0;
        for (Object reply : replies) {
            added += (Long) reply;
        }
        return added;
    }

    /** SET, then LPUSH to the same key (WRONGTYPE: it holds a string), INCR of another key, GET. */
    static Object[] batchWithError(GlideClient client, String key, String counter, boolean raiseOnError)
            throws Exception {
        Batch batch = new Batch(false)
                .set(key, "a string")
                .lpush(key, new String[] {"x"})
                .incr(counter)
                .get(key);
        return LabSupport.await(client.exec(batch, raiseOnError));
    }
    // --8<-- [end:glide]

    // ---------------------------------------------------------------- 3. an error inside a batch

    /**
     * Facts raise_true_outcome (what exec() did), raise_true_counter (the counter after: 1 if the
     * INCR after the failed LPUSH ran), raise_false_results (the replies, an error shown as its
     * class and message) and raise_false_counter.
     */
    static void raiseOnError(LabSupport.Report report, Jedis control, GlideClient client, String key, String counter)
            throws Exception {
        for (boolean raise : new boolean[] {true, false}) {
            control.del(key, counter);
            String outcome;
            try {
                outcome = render(batchWithError(client, key, counter, raise));
            } catch (GlideException e) {
                outcome = e.getClass().getSimpleName() + ": " + e.getMessage();
            }
            report.fact(raise ? "raise_true_outcome" : "raise_false_results", outcome);
            String value = control.get(counter);
            report.fact(raise ? "raise_true_counter" : "raise_false_counter", value == null ? 0 : Long.parseLong(value));
        }
        control.del(key, counter);
    }

    /** The replies as a list; an error element as its class and message, so it cannot pass for a value. */
    static String render(Object[] replies) {
        List<String> out = new ArrayList<>(replies.length);
        for (Object reply : replies) {
            out.add(reply instanceof Throwable t ? t.getClass().getSimpleName() + "(\"" + t.getMessage() + "\")"
                    : String.valueOf(reply));
        }
        return out.toString();
    }

    // ---------------------------------------------------------------- 4. the default request timeout

    /**
     * One non-atomic batch of bigKeys.size() SADDs with no batch timeout. Facts timeout_batch,
     * timeout_outcome, timeout_seconds (exec() alone, the batch already built) and timeout_ran:
     * how many keys exist once the server has stopped adding them.
     */
    static void defaultTimeout(LabSupport.Report report, Jedis control, GlideClient client, List<String> bigKeys)
            throws Exception {
        LabSupport.deleteKeys(control, bigKeys);
        Batch batch = saddBatch(bigKeys, false);
        String outcome;
        long start = System.nanoTime();
        try {
            outcome = "completed, " + exec(client, batch, null) + " members added";
        } catch (GlideException e) {
            outcome = e.getClass().getSimpleName() + ": " + e.getMessage();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        report.fact("timeout_batch", bigKeys.size());
        report.fact("timeout_outcome", outcome);
        report.fact("timeout_seconds", Math.round(1000 * seconds) / 1000.0);
        report.fact("timeout_ran", settledCount(control, bigKeys));
        LabSupport.deleteKeys(control, bigKeys);
    }

    /** How many of the keys exist, counted until two counts in a row agree: the server runs what it was sent. */
    static long settledCount(Jedis control, List<String> keys) throws InterruptedException {
        long count = -1;
        while (true) {
            long now = LabSupport.countExisting(control, keys);
            if (now == count) {
                return now;
            }
            count = now;
            Thread.sleep(SETTLE_POLL_MS);
        }
    }

    // ---------------------------------------------------------------- 5. ClusterBatch

    /**
     * A GlideClusterClient seeded with the given node. After one warm-up batch, `clusterCalls`
     * non-atomic batches; per master i the SETs and the socket reads per batch, the cost of
     * reading the counters taken out: facts cluster_master<i> (its address), cluster_master<i>_sets,
     * cluster_master<i>_reads; GLIDE's connections to the masters. Then an atomic batch of the same
     * keys, the keys deleted first: cluster_atomic_outcome, cluster_atomic_server_commands (what
     * the masters ran meanwhile) and cluster_atomic_keys_written.
     */
    static void clusterBatches(LabSupport.Report report, ClusterSupport.Cluster cluster, Params p) throws Exception {
        List<String> keys = LabSupport.keys(p.clusterSets(), "ch07", "glide", "cluster");
        GlideClusterClient client = null;
        try {
            LabConnection url = p.cluster().url(); // the cluster's, not the server's
            client = GlideSupport.clusterClient(url,
                    GlideSupport.clusterConfig(url, p.cluster().host(), p.cluster().port()).build());
            clusterSets(client, keys, false); // warm-up: GLIDE has its slot map and a connection per master
            List<ClusterSupport.Stats> cost = ClusterSupport.readingCost(cluster); // reads the counters twice
            List<ClusterSupport.Stats> before = cluster.stats();
            for (int i = 0; i < p.clusterCalls(); i++) {
                clusterSets(client, keys, false);
            }
            List<ClusterSupport.Stats> delta = ClusterSupport.between(before, cluster.stats(), cost);
            long sets = ClusterSupport.sum(delta, "calls.set");
            if (sets != (long) keys.size() * p.clusterCalls()) {
                throw LabSupport.failure(p.clusterCalls() + " ClusterBatches of " + keys.size() + " SETs ran " + sets
                        + " SETs on the masters");
            }
            report.fact("cluster_masters", cluster.masters.size());
            report.fact("cluster_sets_per_batch", keys.size());
            report.fact("cluster_batches", p.clusterCalls());
            for (int i = 0; i < delta.size(); i++) {
                report.fact("cluster_master" + i, cluster.masters.get(i).where());
                report.fact("cluster_master" + i + "_sets", LabSupport.round2((double) delta.get(i).get("calls.set") / p.clusterCalls()));
                report.fact("cluster_master" + i + "_reads",
                        LabSupport.round2((double) delta.get(i).get("total_reads_processed") / p.clusterCalls()));
            }
            int connections = 0;
            int management = 0;
            for (ClusterSupport.Node node : cluster.masters) {
                connections += glideConnections(cluster.on(node));
                management += LabSupport.connectionsNamed(cluster.on(node), "glide_management_connection");
            }
            report.fact("cluster_connections", connections);
            report.fact("cluster_management_connections", management); // GLIDE's own, for topology checks

            cluster.deleteKeys(keys);
            before = cluster.stats();
            String outcome;
            try {
                outcome = render(clusterSets(client, keys, true));
            } catch (GlideException e) {
                outcome = e.getClass().getSimpleName() + ": " + e.getMessage();
            }
            // 0 commands: the client refused the batch itself; more: the masters were asked.
            long commands = ClusterSupport.sum(ClusterSupport.between(before, cluster.stats(), cost),
                    "total_commands_processed");
            report.fact("cluster_atomic_outcome", outcome);
            report.fact("cluster_atomic_server_commands", commands);
            report.fact("cluster_atomic_keys_written", cluster.countExisting(keys));
        } finally {
            try {
                cluster.deleteKeys(keys);
            } catch (RuntimeException e) {
                System.err.println("Warning: could not delete the lab's " + keys.size() + " cluster keys: " + e.getMessage());
            } finally {
                if (client != null) {
                    close(client);
                }
            }
        }
    }

    // --8<-- [start:glide_cluster]
    /**
     * One SET per key, keys spread over the slots. Non-atomic: GLIDE splits the batch by slot
     * owner and sends each master its part; atomic: one MULTI ... EXEC, which needs one slot.
     */
    static Object[] clusterSets(GlideClusterClient client, List<String> keys, boolean atomic) throws Exception {
        ClusterBatch batch = new ClusterBatch(atomic);
        for (String key : keys) {
            batch.set(key, "v");
        }
        return LabSupport.await(client.exec(batch, true));
    }
    // --8<-- [end:glide_cluster]

    // ---------------------------------------------------------------- helpers

    static void close(BaseClient client) {
        try {
            client.close();
        } catch (Exception e) {
            System.err.println("Warning: closing the GLIDE client failed: " + e.getMessage());
        }
    }

    /** GLIDE's connections to one server: CLIENT LIST entries whose lib-name starts with "Glide". */
    static int glideConnections(Jedis jedis) {
        int count = 0;
        for (String line : jedis.clientList().split("\r?\n")) {
            if (line.contains(" lib-name=Glide")) {
                count++;
            }
        }
        return count;
    }

    /** One field of a CLIENT LIST line ("lib-ver" -> "2.3.1"). */
    static String field(String line, String name) {
        for (String part : line.split(" ")) {
            if (part.startsWith(name + "=")) {
                return part.substring(name.length() + 1);
            }
        }
        return "?";
    }

}
