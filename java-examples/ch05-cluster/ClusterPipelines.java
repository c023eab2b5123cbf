///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.redisson:redisson:4.7.0
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=error
//SOURCES ../common/LabSupport.java
//SOURCES ClusterSupport.java
//SOURCES ClusterSlots.java
//SOURCES ../common/RedissonSupport.java
//SOURCES ../common/LettuceSupport.java

// Chapter 5: what the Java clients' pipelines do on a Redis Cluster when keys do not fit the
// slot map the client holds. host and port name ONE node of the cluster.
//
// Part A, transactions. A MULTI/EXEC runs on one node, and Redis refuses it (CROSSSLOT) when
// its keys hash to different slots, even slots of the same master; a {hash tag} puts keys in
// one slot, and the same transaction succeeds. Per client:
//   Jedis:    RedisClusterClient.multi() is refused by the client itself; a Transaction on
//             the connection of the keys' master meets the server's CROSSSLOT;
//   Lettuce:  the cluster API has no multi() at all; MULTI/EXEC on the master's own
//             connection (StatefulRedisClusterConnection.getConnection(nodeId));
//   Redisson: RBatch in IN_MEMORY_ATOMIC mode wraps the commands of each master in their own
//             MULTI/EXEC: two slots on one master fail with CROSSSLOT, while keys on two
//             masters succeed as two separate transactions, atomic per master only.
//
// Part B, a slot moving under a pipeline. Each client pipelines N SETs to its own N keys,
// all in one slot (hash tag {ch05-moved}), three times:
//   stable: the slot sits on its owner, as the client's slot map says;
//   ask:    the example has set the slot IMPORTING on a second master and MIGRATING on its
//           owner and moved the even-numbered keys over: the owner answers ASK for those;
//   moved:  the migration is finished (every master says the second one serves the slot),
//           but no client has re-read the slot map: the old owner answers MOVED for all.
// For each client and phase the example records how the pipeline ended, how many of the N
// keys hold the value it wrote (read on plain per-master connections, so no client's routing
// is involved), and what the masters counted meanwhile: SETs executed and rejected, MOVED and
// ASK replies, ASKING commands. Then it moves the slot back to its owner and deletes its keys.
//
//   jbang ch05-moved [host] [port] [size] [repeat] [warmup]     (defaults: 127.0.0.1, the lab's port, 1000 1 1)
//
// size is N, the SETs per pipeline; repeat and warmup are not used: each phase happens once.
// Redisson re-reads the slot map every 5 s by default (scanInterval); here 60 s, so that its
// "moved" pipeline meets a stale map as a client does between two scans, not by luck.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.api.sync.RedisAdvancedClusterCommands;
import org.redisson.Redisson;
import org.redisson.api.BatchOptions;
import org.redisson.api.BatchResult;
import org.redisson.api.RBatch;
import org.redisson.api.RedissonClient;

import redis.clients.jedis.ClusterPipeline;
import redis.clients.jedis.Connection;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.Transaction;
import redis.clients.jedis.util.JedisClusterCRC16;

import pipelab.LabConnection;
import pipelab.LettuceSupport;

public class ClusterPipelines {

    /** The hash tag of Part B: every key with it lives in the one slot CRC16("ch05-moved") mod 16384. */
    static final String TAG = "{ch05-moved}";

    static final List<String> CLIENTS = List.of("jedis", "lettuce", "redisson");

    /** How long to wait for a Lettuce pipeline's replies before flushing once more. */
    private static final Duration LETTUCE_WAIT = Duration.ofSeconds(2);

    /** Upper bound for a Redisson batch in any phase. */
    private static final Duration REDISSON_WAIT = Duration.ofSeconds(60);

    /** Extra flushCommands() calls at most, after the first. */
    private static final int LETTUCE_EXTRA_FLUSHES = 3;

    /** Characters of an exception message kept in a fact. */
    private static final int MESSAGE_CHARS = 90;

    /** Redisson's slot-map refresh period here (its default is 5000 ms); see the header. */
    static final int REDISSON_SCAN_INTERVAL_MS = 60_000;

    public static void main(String[] args) {
        // host and port name a cluster node: its settings are the cluster's (REDIS_CLUSTER_URL, else REDIS_URL).
        LabSupport.run("ch05-moved", args, 1000, 1, LabConnection::cluster, ClusterPipelines::demo);
    }

    /** A client's pipeline of SETs: writes `value` to every key, returns how it ended in a few words. */
    interface SetPipeline {
        String run(List<String> keys, String value) throws Exception;
    }

    static void demo(LabSupport.Settings s) throws Exception {
        int n = s.size();
        int slot = JedisClusterCRC16.getSlot(TAG);
        Map<String, List<String>> keysOf = new LinkedHashMap<>();
        for (String client : CLIENTS) {
            keysOf.put(client, LabSupport.keys(n, "ch05", "java", "moved", TAG, client));
        }
        List<String> allKeys = new ArrayList<>();
        keysOf.values().forEach(allKeys::addAll);

        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(RedisClusterClient.class, "redis.clients", "jedis", "8.0.2"))
                .client("lettuce", LabSupport.versionOf(io.lettuce.core.cluster.RedisClusterClient.class,
                        "io.lettuce", "lettuce-core", "7.7.0.RELEASE").split("/")[0])
                .client("redisson", LabSupport.versionOf(Redisson.class, "org.redisson", "redisson", "4.7.0"))
                .withoutSpeedUps(); // phases of a demonstration, not a race

        try (ClusterSupport.Cluster cluster = ClusterSupport.Cluster.open(s)) {
            cluster.requireLabOnly();
            ClusterSupport.requireStable(cluster);
            if (cluster.masters.size() < 2) {
                throw new LabSupport.Stop(2, "A slot can only move between two masters; the cluster at " + s.where()
                        + " has one.");
            }
            ClusterSupport.Node home = cluster.ownerOf(slot);
            ClusterSupport.Node away = cluster.masters.get((cluster.masters.indexOf(home) + 1) % cluster.masters.size());
            List<String> txKeys = new ArrayList<>();
            RedisClusterClient jedis = null;
            io.lettuce.core.cluster.RedisClusterClient lettuce = null;
            RedissonClient redisson = null;
            boolean slotAtHome = true;
            try {
                report.header(n + " SETs per pipeline to keys of slot " + slot + " while it moves from "
                        + home.where() + " to " + away.where());
                // Client start-up (slot maps, connections, threads) here, before any phase.
                jedis = ClusterSupport.jedisCluster(s);
                lettuce = LettuceSupport.clusterClient(s.url(), s.host(), s.port());
                StatefulRedisClusterConnection<String, String> lettuceTx = lettuce.connect();
                StatefulRedisClusterConnection<String, String> lettucePipe = lettuce.connect();
                // Handed down to every per-master connection, also those opened later (redirects).
                lettucePipe.setAutoFlushCommands(false);
                // Its connection to every master now: a command for a master whose connection is
                // still opening is written into that connection's buffer once it is up, after
                // flushCommands() has passed, and would need a second flush for a reason that has
                // nothing to do with a moving slot. By host and port, the key slot routing uses.
                lettucePipe.getPartitions().forEach(node ->
                        lettucePipe.getConnection(node.getUri().getHost(), node.getUri().getPort()));
                redisson = Redisson.create(RedissonSupport.clusterConfig(s, REDISSON_SCAN_INTERVAL_MS));

                // ---------------- Part A: transactions
                Transactions tx = new Transactions(report, cluster, txKeys);
                tx.jedis(jedis);
                tx.lettuce(lettuceTx);
                tx.redisson(redisson);

                // ---------------- Part B: a slot moving under the pipelines
                RedisClusterClient j = jedis;
                RedissonClient r = redisson;
                Map<String, SetPipeline> pipelines = new LinkedHashMap<>();
                pipelines.put("jedis", (keys, value) -> jedisPipeline(j, keys, value));
                pipelines.put("lettuce", (keys, value) -> lettucePipeline(lettucePipe, keys, value, report));
                pipelines.put("redisson", (keys, value) -> redissonBatch(r, keys, value));
                Phases phases = new Phases(report, cluster, keysOf, pipelines, ClusterSupport.readingCost(cluster));
                report.fact("slot", slot);
                report.fact("slot_owner", home.where());
                report.fact("slot_target", away.where());
                report.fact("redisson_scan_interval_ms", REDISSON_SCAN_INTERVAL_MS);

                phases.run("stable");

                slotAtHome = false;
                ClusterSlots.beginMigration(cluster, slot, home, away);
                // The even-numbered keys of each client go over now; the owner answers ASK for them.
                List<String> even = new ArrayList<>();
                keysOf.values().forEach(keys -> {
                    for (int i = 0; i < keys.size(); i += 2) {
                        even.add(keys.get(i));
                    }
                });
                ClusterSlots.migrate(cluster, home, away, even);
                report.fact("ask_keys_moved_per_client", (n + 1) / 2);
                phases.run("ask");

                ClusterSlots.finishMigration(cluster, slot, home, away);
                phases.run("moved");

                // Back where it was: the same three steps the other way round.
                ClusterSlots.beginMigration(cluster, slot, away, home);
                ClusterSlots.finishMigration(cluster, slot, away, home);
                slotAtHome = true;
                report.fact("slot_back_on_owner", home.id().equals(cluster.ownerOf(slot).id()));
            } finally {
                if (!slotAtHome) {
                    ClusterSlots.restoreSlot(cluster, slot, home);
                }
                try {
                    cluster.deleteKeys(allKeys);
                    cluster.deleteKeys(txKeys);
                } catch (RuntimeException e) {
                    System.err.println("Warning: could not delete the lab's keys: " + e.getMessage());
                }
                shutdown(jedis, lettuce, redisson);
            }
        }
        report.finish();
    }

    static void shutdown(RedisClusterClient jedis, io.lettuce.core.cluster.RedisClusterClient lettuce, RedissonClient redisson) {
        try {
            if (jedis != null) {
                jedis.close();
            }
        } finally {
            try {
                if (lettuce != null) {
                    lettuce.shutdown();
                }
            } finally {
                if (redisson != null) {
                    redisson.shutdown();
                }
            }
        }
    }

    // ================================================================ Part A

    /** Cross-slot and hash-tagged MULTI/EXEC per client; each case's outcome and server counts as facts. */
    static final class Transactions {
        private final LabSupport.Report report;
        private final ClusterSupport.Cluster cluster;
        private final List<String> created;
        private final List<ClusterSupport.Stats> cost;

        Transactions(LabSupport.Report report, ClusterSupport.Cluster cluster, List<String> created) {
            this.report = report;
            this.cluster = cluster;
            this.created = created;
            this.cost = ClusterSupport.readingCost(cluster);
        }

        /** Two keys of the client in different slots of one master: pipelab:ch05:java:tx:<client>:<i>. */
        List<String> crossSlotPair(String client) {
            String first = LabSupport.key("ch05", "java", "tx", client, 0);
            int firstSlot = JedisClusterCRC16.getSlot(first);
            for (int i = 1; ; i++) {
                String other = LabSupport.key("ch05", "java", "tx", client, i);
                int slot = JedisClusterCRC16.getSlot(other);
                if (slot != firstSlot && cluster.owner[slot] == cluster.owner[firstSlot]) {
                    return track(List.of(first, other));
                }
            }
        }

        /** A key of the client on another master than `key`. */
        String onOtherMaster(String client, String key) {
            int master = cluster.owner[JedisClusterCRC16.getSlot(key)];
            for (int i = 1; ; i++) {
                String other = LabSupport.key("ch05", "java", "tx", client, "other", i);
                if (cluster.owner[JedisClusterCRC16.getSlot(other)] != master) {
                    return track(List.of(other)).get(0);
                }
            }
        }

        /** Two keys sharing the hash tag {<client>}, hence one slot. */
        List<String> taggedPair(String client) {
            String tag = "{" + client + "}";
            return track(List.of(LabSupport.key("ch05", "java", "tx", tag, "a"), LabSupport.key("ch05", "java", "tx", tag, "b")));
        }

        private List<String> track(List<String> keys) {
            created.addAll(keys);
            return keys;
        }

        void jedis(RedisClusterClient jedis) throws Exception {
            run("jedis_cluster_multi", List.of(), () -> {
                jedis.multi(); // the cluster client refuses before anything is sent
                return "ok";
            });
            List<String> cross = crossSlotPair("jedis");
            run("jedis_crossslot", cross, () -> jedisTransaction(jedis, cross));
            List<String> tagged = taggedPair("jedis");
            run("jedis_hashtag", tagged, () -> jedisTransaction(jedis, tagged));
        }

        /** MULTI (in Transaction's constructor), SET, SET, EXEC on a connection to the first key's master. */
        private static String jedisTransaction(RedisClusterClient jedis, List<String> keys) {
            try (Connection connection = jedis.getConnectionFromSlot(JedisClusterCRC16.getSlot(keys.get(0)))) {
                Transaction transaction = new Transaction(connection);
                for (String key : keys) {
                    transaction.set(key, "v");
                }
                return "ok " + transaction.exec();
            }
        }

        void lettuce(StatefulRedisClusterConnection<String, String> connection) throws Exception {
            // Provable from the API itself: the cluster interfaces offer no MULTI.
            boolean hasMulti = Arrays.stream(RedisAdvancedClusterCommands.class.getMethods())
                    .anyMatch(m -> m.getName().equals("multi"));
            report.fact("lettuce_cluster_api_has_multi", hasMulti);
            List<String> cross = crossSlotPair("lettuce");
            run("lettuce_crossslot", cross, () -> lettuceTransaction(connection, cross));
            List<String> tagged = taggedPair("lettuce");
            run("lettuce_hashtag", tagged, () -> lettuceTransaction(connection, tagged));
        }

        /** MULTI, SET, SET, EXEC on the cluster connection's own connection to the first key's master. */
        private String lettuceTransaction(StatefulRedisClusterConnection<String, String> connection, List<String> keys) {
            ClusterSupport.Node master = cluster.ownerOf(JedisClusterCRC16.getSlot(keys.get(0)));
            RedisCommands<String, String> node = connection.getConnection(master.id()).sync();
            node.multi();
            for (String key : keys) {
                node.set(key, "v");
            }
            var result = node.exec();
            return result.wasDiscarded() ? "discarded" : "ok " + result.stream().toList();
        }

        void redisson(RedissonClient redisson) throws Exception {
            List<String> cross = crossSlotPair("redisson");
            run("redisson_atomic_crossslot", cross, () -> redissonAtomic(redisson, cross));
            List<String> twoMasters = List.of(cross.get(0), onOtherMaster("redisson", cross.get(0)));
            run("redisson_atomic_two_masters", twoMasters, () -> redissonAtomic(redisson, twoMasters));
            List<String> tagged = taggedPair("redisson");
            run("redisson_atomic_hashtag", tagged, () -> redissonAtomic(redisson, tagged));
        }

        /** An RBatch in IN_MEMORY_ATOMIC mode: Redisson adds MULTI and EXEC around each master's share. */
        private static String redissonAtomic(RedissonClient redisson, List<String> keys) {
            RBatch batch = redisson.createBatch(BatchOptions.defaults().executionMode(BatchOptions.ExecutionMode.IN_MEMORY_ATOMIC));
            for (String key : keys) {
                batch.<String>getBucket(key).setAsync("v");
            }
            BatchResult<?> result = batch.execute();
            return "ok " + result.getResponses().size() + " responses";
        }

        /**
         * Runs one case: deletes its keys, runs it, and records its outcome, how many of its
         * keys exist afterwards, and the MULTI/EXEC/CROSSSLOT counts of the masters meanwhile.
         */
        private void run(String name, List<String> keys, java.util.concurrent.Callable<String> body) throws Exception {
            cluster.deleteKeys(keys);
            List<ClusterSupport.Stats> before = cluster.stats();
            String outcome;
            try {
                outcome = body.call();
            } catch (Exception e) {
                outcome = describe(e);
            }
            List<ClusterSupport.Stats> delta = ClusterSupport.between(before, cluster.stats(), cost);
            report.fact(name + "_outcome", outcome);
            if (!keys.isEmpty()) {
                report.fact(name + "_keys_written", cluster.countExisting(keys));
                report.fact(name + "_keys_of", keys.size());
            }
            report.fact(name + "_exec_calls", ClusterSupport.sum(delta, "calls.exec") + ClusterSupport.sum(delta, "rejected.exec"));
            report.fact(name + "_crossslot_errors", ClusterSupport.sum(delta, "error.CROSSSLOT"));
        }
    }

    // ================================================================ Part B

    /** Runs every client's pipeline in a phase and records what happened. */
    static final class Phases {
        private final LabSupport.Report report;
        private final ClusterSupport.Cluster cluster;
        private final Map<String, List<String>> keysOf;
        private final Map<String, SetPipeline> pipelines;
        private final List<ClusterSupport.Stats> cost;

        Phases(LabSupport.Report report, ClusterSupport.Cluster cluster, Map<String, List<String>> keysOf,
               Map<String, SetPipeline> pipelines, List<ClusterSupport.Stats> cost) {
            this.report = report;
            this.cluster = cluster;
            this.keysOf = keysOf;
            this.pipelines = pipelines;
            this.cost = cost;
        }

        void run(String phase) throws Exception {
            for (Map.Entry<String, SetPipeline> client : pipelines.entrySet()) {
                String name = client.getKey() + "_" + phase;
                List<String> keys = keysOf.get(client.getKey());
                List<ClusterSupport.Stats> before = cluster.stats();
                long start = System.nanoTime();
                String outcome;
                try {
                    outcome = client.getValue().run(keys, phase);
                } catch (Exception e) {
                    outcome = describe(e);
                }
                double seconds = (System.nanoTime() - start) / 1e9;
                List<ClusterSupport.Stats> delta = ClusterSupport.between(before, cluster.stats(), cost);
                report.add(name, client.getKey() + " " + phase, "SETs", keys.size(), List.of(seconds));
                long written = valuesEqual(keys, phase);
                long executed = ClusterSupport.sum(delta, "calls.set");
                long rejected = ClusterSupport.sum(delta, "rejected.set");
                report.fact(name + "_outcome", outcome);
                report.fact(name + "_keys_written", written);
                report.fact(name + "_set_executed_per_master", ClusterSupport.perNode(cluster, delta, "calls.set"));
                report.fact(name + "_set_rejected", rejected);
                report.fact(name + "_moved_replies", ClusterSupport.sum(delta, "error.MOVED"));
                report.fact(name + "_ask_replies", ClusterSupport.sum(delta, "error.ASK"));
                report.fact(name + "_asking_calls", ClusterSupport.sum(delta, "calls.asking"));
                // A SET the server saw more than once was sent again after a MOVED or an ASK.
                report.fact(name + "_retried", executed + rejected > keys.size());
                report.fact(name + "_connections_opened", ClusterSupport.sum(delta, "total_connections_received"));
            }
        }

        /**
         * How many keys hold `value`, asked of every master on the example's plain connections:
         * ASKING then GET, so a master importing the slot answers too; a master that does not
         * hold a key answers nil, MOVED or ASK, all of which mean "not here".
         */
        private long valuesEqual(List<String> keys, String value) {
            long equal = 0;
            for (ClusterSupport.Node node : cluster.masters) {
                List<Response<String>> replies = new ArrayList<>(keys.size());
                try (Pipeline pipeline = cluster.on(node).pipelined()) {
                    for (String key : keys) {
                        pipeline.sendCommand(Protocol.Command.ASKING, new String[0]);
                        replies.add(pipeline.get(key));
                    }
                    pipeline.syncAndReturnAll(); // MOVED/ASK stay in their replies
                }
                for (Response<String> reply : replies) {
                    try {
                        if (value.equals(reply.get())) {
                            equal++;
                        }
                    } catch (RuntimeException notHere) {
                        // MOVED or ASK: this master does not hold the key
                    }
                }
            }
            return equal;
        }
    }

    // ---------------------------------------------------------------- the three pipelines

    // --8<-- [start:pipelines]
    /**
     * Jedis ClusterPipeline: each SET goes to the master its cached slot map names. sync()
     * reads the replies and throws nothing; a MOVED or ASK reply becomes a
     * JedisMovedDataException / JedisAskDataException in that SET's Response, and nothing is
     * sent again: the pipeline does not follow redirections.
     */
    static String jedisPipeline(RedisClusterClient jedis, List<String> keys, String value) {
        List<Response<String>> replies = new ArrayList<>(keys.size());
        try (ClusterPipeline pipeline = jedis.pipelined()) {
            for (String key : keys) {
                replies.add(pipeline.set(key, value));
            }
            pipeline.sync();
        }
        Map<String, Integer> errors = new LinkedHashMap<>();
        for (Response<String> reply : replies) {
            try {
                reply.get();
            } catch (RuntimeException e) {
                errors.merge(e.getClass().getSimpleName(), 1, Integer::sum);
            }
        }
        return errors.isEmpty() ? "ok" : "sync() returned; Response.get() throws for " + errors;
    }

    /**
     * Lettuce, auto-flush off: the SETs sit in the per-master connections' buffers until
     * flushCommands(). A MOVED or ASK reply makes ClusterCommand hand the SET back to
     * ClusterDistributionChannelWriter, which writes it (after ASKING for an ASK) to the
     * named master's connection: into that connection's buffer, since auto-flush is off
     * there too. So the example waits LETTUCE_WAIT and, if replies are missing, flushes again.
     */
    static String lettucePipeline(StatefulRedisClusterConnection<String, String> connection, List<String> keys,
                                  String value, LabSupport.Report report) throws Exception {
        RedisAdvancedClusterAsyncCommands<String, String> async = connection.async();
        List<RedisFuture<String>> replies = new ArrayList<>(keys.size());
        for (String key : keys) {
            replies.add(async.set(key, value));
        }
        connection.flushCommands();
        CompletableFuture<?> all = CompletableFuture.allOf(
                replies.stream().map(RedisFuture::toCompletableFuture).toArray(CompletableFuture[]::new));
        int extraFlushes = 0;
        int pendingAtFirstWait = -1;
        while (true) {
            try {
                all.get(LETTUCE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
                break;
            } catch (TimeoutException e) {
                if (pendingAtFirstWait < 0) {
                    pendingAtFirstWait = (int) replies.stream().filter(f -> !f.isDone()).count();
                }
                if (extraFlushes == LETTUCE_EXTRA_FLUSHES) {
                    break;
                }
                connection.flushCommands(); // the redirected SETs are in a buffer: send them
                extraFlushes++;
            } catch (java.util.concurrent.ExecutionException e) {
                break; // some SET failed; counted below
            }
        }
        report.fact("lettuce_" + value + "_extra_flushes", extraFlushes);
        report.fact("lettuce_" + value + "_pending_after_first_flush", Math.max(0, pendingAtFirstWait));
        Map<String, Integer> errors = new LinkedHashMap<>();
        int pending = 0;
        for (RedisFuture<String> reply : replies) {
            if (!reply.isDone()) {
                pending++;
            } else if (reply.toCompletableFuture().isCompletedExceptionally()) {
                try {
                    reply.get();
                } catch (java.util.concurrent.ExecutionException e) {
                    errors.merge(e.getCause().getClass().getSimpleName(), 1, Integer::sum);
                }
            }
        }
        if (errors.isEmpty() && pending == 0) {
            return extraFlushes == 0 ? "ok" : "ok after " + extraFlushes + " more flushCommands()";
        }
        return "futures failed " + errors + ", " + pending + " never completed";
    }

    /**
     * Redisson RBatch (IN_MEMORY): CommandBatchService files the SETs under the master of
     * their slot; RedisCommonBatchExecutor sends them in one go. When the batch's replies hold
     * a MOVED or ASK, the first one fails that master's batch, and RedisExecutor sends the SETs
     * that did not succeed again, to the master the error names (after one ASKING for an ASK).
     */
    static String redissonBatch(RedissonClient redisson, List<String> keys, String value) {
        RBatch batch = redisson.createBatch();
        for (String key : keys) {
            batch.<String>getBucket(key).setAsync(value);
        }
        try {
            // Bounded: Redisson follows redirections without counting them, so a cluster whose
            // masters disagree would keep it busy for ever.
            BatchResult<?> result = batch.executeAsync().toCompletableFuture().get(REDISSON_WAIT.toSeconds(), TimeUnit.SECONDS);
            return "ok " + result.getResponses().size() + " responses";
        } catch (TimeoutException e) {
            return "no result within " + REDISSON_WAIT.toSeconds() + " s";
        } catch (java.util.concurrent.ExecutionException e) {
            return describe(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return describe(e);
        }
    }
    // --8<-- [end:pipelines]

    // ---------------------------------------------------------------- helpers

    /** "SimpleName: first 90 characters of the message" of the innermost useful exception. */
    static String describe(Throwable e) {
        Throwable t = e;
        while ((t instanceof java.util.concurrent.ExecutionException || t instanceof java.util.concurrent.CompletionException)
                && t.getCause() != null) {
            t = t.getCause();
        }
        String message = t.getMessage() == null ? "" : t.getMessage().strip().replaceAll("\\s+", " ");
        int channel = message.indexOf(". channel: "); // Redisson appends its Netty channel and command
        if (channel > 0) {
            message = message.substring(0, channel);
        }
        if (message.length() > MESSAGE_CHARS) {
            message = message.substring(0, MESSAGE_CHARS) + "...";
        }
        return t.getClass().getSimpleName() + (message.isEmpty() ? "" : ": " + message);
    }
}
