///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.redisson:redisson:4.7.0
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LabTiming.java
//SOURCES ../common/SaddWorkload.java
//SOURCES ../common/RedissonSupport.java
//SOURCES ClusterSupport.java
//SOURCES ../common/LettuceSupport.java

// Chapter 5: chapter 1's N writes (one SADD to each of N distinct keys) on a Redis Cluster,
// where the keys spread over all 16384 slots and so over every master. host and port name
// ONE node of the cluster (a seed); each client asks it for the slot map and then talks to
// every master itself. Per client, one by one and pipelined:
//   Jedis RedisClusterClient (Jedis 8's cluster client; JedisCluster is deprecated) one by
//     one, and its ClusterPipeline, which keeps one connection per master, writes each
//     command to its slot's master at once and reads the replies node by node in sync();
//   Lettuce RedisClusterClient sync one by one, and async with auto-flush off and one
//     flushCommands(), which flushes every per-master connection the commands were routed to;
//   Redisson cluster mode one by one (RSet.add), and an RBatch, which groups its commands by
//     master and sends one batch per master.
// Each mode starts its own client (outside the timed region) so its connections are its own.
// For each mode the example reads every master's INFO and records as facts: connections
// opened from client start to the end of the mode, SADDs per master, and how many reads the
// masters made on client sockets, which is the server's view of the client's round trips.
//
//   jbang ch05-sadd [host] [port] [size] [repeat] [warmup]     (defaults: 127.0.0.1, the lab's port, 100000 3 1)
//
// e.g. jbang ch05-sadd 127.0.0.1 17000 against the lab's docker cluster. The example refuses
// a cluster whose masters hold any key outside 'pipelab:', and deletes exactly its own keys,
// slot by slot, on the master that holds them.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.RedisFuture;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.api.sync.RedisAdvancedClusterCommands;
import org.redisson.Redisson;
import org.redisson.api.RBatch;
import org.redisson.api.RedissonClient;

import redis.clients.jedis.ClusterPipeline;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.util.JedisClusterCRC16;

import pipelab.LabConnection;
import pipelab.LettuceSupport;

public class ClusterSadd {

    /** Upper bound for a pipeline's replies; Lettuce's own default command timeout is 60 s too. */
    private static final Duration AWAIT = Duration.ofSeconds(60);
    /** Redisson re-reads the slot map every 5 s by default; nothing moves slots here. */
    private static final int REDISSON_DEFAULT_SCAN_MS = 5_000;

    public static void main(String[] args) {
        // host and port name a cluster node: its settings are the cluster's (REDIS_CLUSTER_URL, else REDIS_URL).
        LabSupport.run("ch05-sadd", args, 100_000, 3, LabConnection::cluster, ClusterSadd::bench);
    }

    /** Starts a client (untimed), runs one iteration of a mode on it, shuts it down. */
    interface Starter<C> {
        C start() throws Exception;
    }

    interface Task<C> {
        /** Sends the SADDs and returns how many reported a new member. */
        long run(C client, List<String> keys) throws Exception;
    }

    interface Stopper<C> {
        void stop(C client) throws Exception;
    }

    static void bench(LabSupport.Settings s) throws Exception {
        List<String> keys = LabSupport.keys(s.size(), "ch05", "java", "sadd");
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(RedisClusterClient.class, "redis.clients", "jedis", "8.0.2"))
                // The manifest says e.g. "7.7.0.RELEASE/1960d49": keep the version, drop the commit.
                .client("lettuce", LabSupport.versionOf(io.lettuce.core.cluster.RedisClusterClient.class,
                        "io.lettuce", "lettuce-core", "7.7.0.RELEASE").split("/")[0])
                .client("redisson", LabSupport.versionOf(Redisson.class, "org.redisson", "redisson", "4.7.0"));

        try (ClusterSupport.Cluster cluster = ClusterSupport.Cluster.open(s)) {
            // Before anything is written: every master must hold nothing but lab keys.
            cluster.requireLabOnly();
            try {
                report.header(s.size() + " SADDs to distinct keys over " + cluster.masters.size() + " masters");
                recordSpread(report, cluster, keys);
                Bench bench = new Bench(s, report, cluster, keys, ClusterSupport.readingCost(cluster));

                // The one-by-one loop first: it is the baseline of the speed-up lines.
                bench.time("jedis_one_by_one", "jedis one by one",
                        () -> ClusterSupport.jedisCluster(s), ClusterSadd::jedisOneByOne, RedisClusterClient::close);
                bench.time("jedis_pipeline", "jedis ClusterPipeline",
                        () -> ClusterSupport.jedisCluster(s), ClusterSadd::jedisPipeline, RedisClusterClient::close);

                bench.time("lettuce_one_by_one", "lettuce sync one by one",
                        () -> LettuceClient.start(s, true), ClusterSadd::lettuceOneByOne, LettuceClient::stop);
                bench.time("lettuce_pipeline", "lettuce async flush",
                        () -> LettuceClient.start(s, false), ClusterSadd::lettucePipeline, LettuceClient::stop);

                bench.time("redisson_one_by_one", "redisson one by one",
                        () -> Redisson.create(RedissonSupport.clusterConfig(s, REDISSON_DEFAULT_SCAN_MS)),
                        ClusterSadd::redissonOneByOne, RedissonClient::shutdown);
                bench.time("redisson_rbatch", "redisson rbatch",
                        () -> Redisson.create(RedissonSupport.clusterConfig(s, REDISSON_DEFAULT_SCAN_MS)),
                        ClusterSadd::redissonBatch, RedissonClient::shutdown);
            } finally {
                // Exactly our keys, on whichever master holds each slot; a fresh pass over every
                // master, so a half-finished mode leaves nothing behind either.
                try {
                    cluster.deleteKeys(keys);
                } catch (RuntimeException e) {
                    System.err.println("Warning: could not delete the lab's " + keys.size() + " keys: " + e.getMessage());
                }
            }
        }
        report.finish();
    }

    /** How the workload's keys fall on the masters: what every mode's SADDs per master must match. */
    static void recordSpread(LabSupport.Report report, ClusterSupport.Cluster cluster, List<String> keys) {
        long[] perMaster = new long[cluster.masters.size()];
        for (String key : keys) {
            perMaster[cluster.owner[JedisClusterCRC16.getSlot(key)]]++;
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < perMaster.length; i++) {
            sb.append(i == 0 ? "" : " ").append(cluster.masters.get(i).where()).append('=').append(perMaster[i]);
        }
        report.fact("masters", cluster.masters.size());
        report.fact("keys_per_master", sb.toString());
    }

    /** Times the modes and turns the masters' counters into facts. */
    static final class Bench {
        private final LabSupport.Settings s;
        private final LabSupport.Report report;
        private final ClusterSupport.Cluster cluster;
        private final List<String> keys;
        private final List<ClusterSupport.Stats> readingCost;

        Bench(LabSupport.Settings s, LabSupport.Report report, ClusterSupport.Cluster cluster, List<String> keys,
              List<ClusterSupport.Stats> readingCost) {
            this.s = s;
            this.report = report;
            this.cluster = cluster;
            this.keys = keys;
            this.readingCost = readingCost;
        }

        <C> void time(String mode, String label, Starter<C> starter, Task<C> task, Stopper<C> stopper) throws Exception {
            // Connections are counted from before the client starts: its start-up ones are its own.
            List<ClusterSupport.Stats> beforeStart = cluster.stats();
            C client = starter.start();
            try {
                List<List<ClusterSupport.Stats>> iteration = new ArrayList<>(List.of(List.of(), List.of()));
                long[] added = new long[1];
                LabSupport.Samples samples = LabSupport.measure(s,
                        () -> {
                            cluster.deleteKeys(keys);
                            iteration.set(0, cluster.stats()); // after the reset: its UNLINKs are not the mode's
                        },
                        () -> added[0] = task.run(client, keys),
                        () -> {
                            iteration.set(1, ClusterSupport.between(iteration.get(0), cluster.stats(), readingCost));
                            verify(added[0]);
                        });
                List<ClusterSupport.Stats> afterAll = cluster.stats();
                report.add(mode, label, "SADDs", samples);

                // Whole mode (start-up, warm-up and every repetition): connections.
                List<ClusterSupport.Stats> lifetime = ClusterSupport.between(beforeStart, afterAll, null);
                report.fact(mode + "_connections_opened", ClusterSupport.sum(lifetime, "total_connections_received"));
                report.fact(mode + "_connections_opened_per_master",
                        ClusterSupport.perNode(cluster, lifetime, "total_connections_received"));
                report.fact(mode + "_connections_held", ClusterSupport.sum(lifetime, "connected_clients"));
                // The last iteration alone, the readings' own cost taken out: where the SADDs went
                // and how many socket reads (about: client round trips) the masters needed for them.
                List<ClusterSupport.Stats> last = iteration.get(1);
                report.fact(mode + "_sadd_per_master", ClusterSupport.perNode(cluster, last, "calls.sadd"));
                report.fact(mode + "_masters_used", last.stream().filter(st -> st.get("calls.sadd") > 0).count());
                report.fact(mode + "_server_reads", ClusterSupport.sum(last, "total_reads_processed"));
                report.fact(mode + "_server_reads_per_master", ClusterSupport.perNode(cluster, last, "total_reads_processed"));
                report.fact(mode + "_server_writes", ClusterSupport.sum(last, "total_writes_processed"));
                report.fact(mode + "_redirects", ClusterSupport.sum(last, "error.MOVED") + ClusterSupport.sum(last, "error.ASK"));
            } finally {
                stopper.stop(client);
            }
        }

        /**
         * Outside the timed region: every SADD added a member, every key exists, and the first,
         * middle and last set hold just the member (asked of the master that holds them).
         */
        private void verify(long added) {
            int n = keys.size();
            if (added != n) {
                throw LabSupport.failure(n + " SADDs reported " + added + " new members");
            }
            long existing = cluster.countExisting(keys);
            if (existing != n) {
                throw LabSupport.failure("after " + n + " SADDs only " + existing + " of the keys exist");
            }
            for (String key : List.of(keys.get(0), keys.get(n / 2), keys.get(n - 1))) {
                var node = cluster.on(cluster.ownerOf(JedisClusterCRC16.getSlot(key)));
                if (node.scard(key) != 1 || !node.sismember(key, SaddWorkload.MEMBER)) {
                    throw LabSupport.failure("set '" + key + "' should hold just '" + SaddWorkload.MEMBER + "'");
                }
            }
        }
    }

    // ---------------------------------------------------------------- Jedis

    // --8<-- [start:modes]
    /** N round trips: each sadd() goes to its slot's master over a pooled connection and waits. */
    static long jedisOneByOne(RedisClusterClient jedis, List<String> keys) {
        long added = 0;
        for (String key : keys) {
            added += jedis.sadd(key, SaddWorkload.MEMBER);
        }
        return added;
    }

    /**
     * ClusterPipeline (MultiNodePipelineBase): each command is written at once to a connection
     * borrowed from its slot's master's pool, one per master; sync() reads each master's
     * replies, on a small thread pool when more than one master is involved.
     */
    static long jedisPipeline(RedisClusterClient jedis, List<String> keys) {
        List<Response<Long>> replies = new ArrayList<>(keys.size());
        try (ClusterPipeline pipeline = jedis.pipelined()) {
            for (String key : keys) {
                replies.add(pipeline.sadd(key, SaddWorkload.MEMBER));
            }
            pipeline.sync();
        }
        long added = 0;
        for (Response<Long> reply : replies) {
            added += reply.get(); // 1: the member was added
        }
        return added;
    }

    // ---------------------------------------------------------------- Lettuce

    /** A Lettuce cluster client with its one cluster connection. */
    record LettuceClient(io.lettuce.core.cluster.RedisClusterClient client,
                         StatefulRedisClusterConnection<String, String> connection) {

        static LettuceClient start(LabSupport.Settings seed, boolean autoFlush) {
            io.lettuce.core.cluster.RedisClusterClient client =
                    LettuceSupport.clusterClient(seed.url(), seed.host(), seed.port());
            try {
                StatefulRedisClusterConnection<String, String> connection = client.connect();
                // Handed down to every per-master connection, also those opened later. This
                // connection is ours alone, so holding commands until flushCommands() delays no one.
                connection.setAutoFlushCommands(autoFlush);
                // Lettuce opens a master's connection when the first command for it comes; with
                // auto-flush off, commands that wait for that connection are written into its
                // buffer once it is up, after flushCommands() has passed, and would wait for the
                // next flush. Opening them all here keeps that out of the first iteration. By host and
                // port: the key Lettuce files slot-routed connections under (getConnection(nodeId)
                // would open a separate one).
                connection.getPartitions().forEach(node ->
                        connection.getConnection(node.getUri().getHost(), node.getUri().getPort()));
                return new LettuceClient(client, connection);
            } catch (RuntimeException e) {
                client.shutdown();
                throw e;
            }
        }

        void stop() {
            try {
                connection.close();
            } finally {
                client.shutdown();
            }
        }
    }

    /** N round trips: sync() routes each SADD by slot to that master's connection and waits. */
    static long lettuceOneByOne(LettuceClient lettuce, List<String> keys) {
        RedisAdvancedClusterCommands<String, String> sync = lettuce.connection().sync();
        long added = 0;
        for (String key : keys) {
            added += sync.sadd(key, SaddWorkload.MEMBER);
        }
        return added;
    }

    /**
     * Auto-flush is off: ClusterDistributionChannelWriter puts each SADD into the buffer of its
     * slot's master connection; flushCommands() flushes them all, and the replies come back
     * on each connection independently.
     */
    static long lettucePipeline(LettuceClient lettuce, List<String> keys) throws Exception {
        RedisAdvancedClusterAsyncCommands<String, String> async = lettuce.connection().async();
        List<RedisFuture<Long>> replies = new ArrayList<>(keys.size());
        for (String key : keys) {
            replies.add(async.sadd(key, SaddWorkload.MEMBER));
        }
        lettuce.connection().flushCommands();
        CompletableFuture.allOf(replies.stream().map(RedisFuture::toCompletableFuture).toArray(CompletableFuture[]::new))
                .get(AWAIT.toMillis(), TimeUnit.MILLISECONDS);
        long added = 0;
        for (RedisFuture<Long> reply : replies) {
            added += reply.get();
        }
        return added;
    }

    // ---------------------------------------------------------------- Redisson

    /** N round trips through Redisson's per-master connection pools. */
    static long redissonOneByOne(RedissonClient redisson, List<String> keys) {
        long added = 0;
        for (String key : keys) {
            if (redisson.<String>getSet(key).add(SaddWorkload.MEMBER)) {
                added++;
            }
        }
        return added;
    }

    /**
     * CommandBatchService files each command under its slot's master; execute() sends one
     * batch per master (RedisCommonBatchExecutor), each on one connection, all at once.
     */
    static long redissonBatch(RedissonClient redisson, List<String> keys) {
        RBatch batch = redisson.createBatch();
        for (String key : keys) {
            batch.<String>getSet(key).addAsync(SaddWorkload.MEMBER);
        }
        return RedissonSupport.added(batch.execute().getResponses()); // the replies that say "added"
    }
    // --8<-- [end:modes]
}
