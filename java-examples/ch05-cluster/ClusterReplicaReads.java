// ch05-failures' replicas scenario (ClusterFailures pulls it in: //SOURCES ClusterReplicaReads.java), apart so
// that each file stays under 600 lines. A cluster whose masters have a replica each; the keys
// pipelab:ch05:replica:<i> hold "old" everywhere, and the harness holds replication back (the replicas
// serve reads and apply nothing). Per setting, one pipeline of n GETs (fact read_old), then one of n
// pairs SET "new" + GET (facts stale_reads: GETs that still saw "old", fresh_reads: saw "new"). The
// harness counts which servers ran the GETs. Settings:
//   lettuce          Lettuce's ReadFrom as connect() sets it (ReadFrom.UPSTREAM: the masters)
//   lettuce_replica  ReadFrom.REPLICA
//   redisson         Redisson's ReadMode left as it comes (ReadMode.SLAVE)
//   redisson_master  ReadMode.MASTER
// Fact setting names the option in force and the default the pinned client reports at run time.

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.lettuce.core.ReadFrom;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import org.redisson.Redisson;
import org.redisson.api.RBatch;
import org.redisson.api.RFuture;
import org.redisson.api.RedissonClient;
import org.redisson.config.ClusterServersConfig;
import org.redisson.config.Config;
import org.redisson.config.ReadMode;

import pipelab.LettuceSupport;

final class ClusterReplicaReads {

    static final List<String> SETTINGS = List.of("lettuce", "lettuce_replica", "redisson", "redisson_master");

    /** Redisson's slot-map refresh period (its default, ClusterServersConfig.scanInterval). */
    private static final int REDISSON_SCAN_INTERVAL_MS = 5000;

    private ClusterReplicaReads() {
    }

    /** A pipeline's replies as the caller saw them, and how long it waited for them. */
    record Round(List<Object> replies, boolean returned, double waitedMs, String thrown) {
    }

    static void run(LabSupport.Settings s, ClusterFailures.Scenario sc, ClusterFailures.Facts report) throws Exception {
        List<String> keys = LabSupport.keys(sc.n(), "ch05", "replica");
        try (ClusterSupport.Cluster cluster = ClusterSupport.Cluster.open(s)) {
            cluster.requireLabOnly();
        }
        report.header(sc.n() + " pipelined GETs, then " + sc.n() + " SET + GET pairs, with replication held back ("
                + sc.client() + ")");
        Round reads;
        Round pairs;
        if (sc.client().startsWith("lettuce")) {
            RedisClusterClient lettuce = LettuceSupport.clusterClient(s.url(), s.host(), s.port());
            try {
                StatefulRedisClusterConnection<String, String> connection = lettuce.connect();
                String byDefault = name(connection.getReadFrom());
                if (sc.client().equals("lettuce_replica")) {
                    connection.setReadFrom(ReadFrom.REPLICA);
                }
                report.fact("setting", name(connection.getReadFrom()) + "; default: " + byDefault);
                ClusterFailures.openConnections(connection, connection.getReadFrom() != ReadFrom.UPSTREAM);
                connection.setAutoFlushCommands(false);
                long start = System.nanoTime();
                List<RedisFuture<String>> gets = lettuceGets(connection, keys);
                reads = lettuceRound(gets, start);
                start = System.nanoTime();
                List<RedisFuture<String>> both = lettuceSetGets(connection, keys);
                pairs = lettuceRound(both, start);
            } finally {
                lettuce.shutdown();
            }
        } else {
            Config config = RedissonSupport.clusterConfig(s, REDISSON_SCAN_INTERVAL_MS);
            ClusterServersConfig servers = config.useClusterServers(); // the one clusterConfig() made
            String byDefault = "ReadMode." + new ClusterServersConfig().getReadMode();
            if (sc.client().equals("redisson_master")) {
                servers.setReadMode(ReadMode.MASTER);
            }
            report.fact("setting", "ReadMode." + servers.getReadMode() + "; default: " + byDefault);
            RedissonClient redisson = Redisson.create(config); // its pools to every master and replica open here
            try {
                RBatch gets = redisson.createBatch();
                List<RFuture<String>> getReplies = redissonGets(gets, keys);
                reads = redissonRound(gets, getReplies);
                RBatch both = redisson.createBatch();
                List<RFuture<?>> pairReplies = redissonSetGets(both, keys);
                pairs = redissonRound(both, pairReplies);
            } finally {
                redisson.shutdown();
            }
        }
        List<Object> all = new ArrayList<>(reads.replies());
        all.addAll(pairs.replies());
        String waiting = reads.returned() && pairs.returned() ? null
                : "still waiting after " + ClusterFailures.PIPELINE_WAIT_MS + " ms";
        String thrown = reads.thrown() != null ? reads.thrown() : pairs.thrown();
        report.caller(all, waiting, ClusterFailures.round1(reads.waitedMs() + pairs.waitedMs()), thrown);
        report.fact("read_old", count(reads.replies(), "old"));
        List<Object> afterSet = new ArrayList<>();
        for (int i = 1; i < pairs.replies().size(); i += 2) {
            afterSet.add(pairs.replies().get(i)); // the GET of each SET + GET pair
        }
        report.fact("stale_reads", count(afterSet, "old"));
        report.fact("fresh_reads", count(afterSet, "new"));
    }

    // --8<-- [start:replicas]
    /** Lettuce: n GETs, auto-flush off. Each is routed by its slot and the connection's ReadFrom. */
    static List<RedisFuture<String>> lettuceGets(StatefulRedisClusterConnection<String, String> connection,
                                                 List<String> keys) {
        RedisAdvancedClusterAsyncCommands<String, String> async = connection.async();
        List<RedisFuture<String>> replies = new ArrayList<>(keys.size());
        for (String key : keys) {
            replies.add(async.get(key));
        }
        connection.flushCommands();
        return replies;
    }

    /**
     * Lettuce: SET then GET of each key. The SET goes to the master's connection, the GET to
     * the one ReadFrom picks: with REPLICA that is another connection, to a replica, and
     * nothing orders it after the SET.
     */
    static List<RedisFuture<String>> lettuceSetGets(StatefulRedisClusterConnection<String, String> connection,
                                                    List<String> keys) {
        RedisAdvancedClusterAsyncCommands<String, String> async = connection.async();
        List<RedisFuture<String>> replies = new ArrayList<>(2 * keys.size());
        for (String key : keys) {
            replies.add(async.set(key, "new"));
            replies.add(async.get(key));
        }
        connection.flushCommands();
        return replies;
    }

    /** Redisson RBatch: n GETs (RBucket.getAsync, a read: ReadMode decides where it goes). */
    static List<RFuture<String>> redissonGets(RBatch batch, List<String> keys) {
        List<RFuture<String>> replies = new ArrayList<>(keys.size());
        for (String key : keys) {
            replies.add(batch.<String>getBucket(key).getAsync());
        }
        return replies;
    }

    /**
     * Redisson RBatch: SET then GET of each key. The batch groups its commands per master; a
     * group holding a write goes to the master whole, its reads included, whatever ReadMode says.
     */
    static List<RFuture<?>> redissonSetGets(RBatch batch, List<String> keys) {
        List<RFuture<?>> replies = new ArrayList<>(2 * keys.size());
        for (String key : keys) {
            replies.add(batch.<String>getBucket(key).setAsync("new"));
            replies.add(batch.<String>getBucket(key).getAsync());
        }
        return replies;
    }
    // --8<-- [end:replicas]

    private static Round lettuceRound(List<RedisFuture<String>> replies, long start) throws InterruptedException {
        boolean returned = ClusterFailures.awaitAll(replies, start, ClusterFailures.PIPELINE_WAIT_MS);
        double waited = returned ? ClusterFailures.millis(start) : ClusterFailures.PIPELINE_WAIT_MS;
        return new Round(ClusterFailures.settle(replies), returned, waited, null);
    }

    /** execute() of the batch, waited for at most PIPELINE_WAIT_MS; then each command's own result. */
    private static Round redissonRound(RBatch batch, List<? extends RFuture<?>> replies) throws InterruptedException {
        long start = System.nanoTime();
        CompletableFuture<?> result = batch.executeAsync().toCompletableFuture();
        String thrown = null;
        boolean returned = true;
        try {
            result.get(ClusterFailures.PIPELINE_WAIT_MS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            returned = false;
        } catch (ExecutionException e) {
            thrown = ClusterFailures.shown(e.getCause());
        }
        double waited = returned ? ClusterFailures.millis(start) : ClusterFailures.PIPELINE_WAIT_MS;
        return new Round(ClusterFailures.settle(replies), returned, waited, thrown);
    }

    private static long count(List<Object> replies, String value) {
        return replies.stream().filter(value::equals).count();
    }

    /** A ReadFrom as the code spells it. */
    static String name(ReadFrom readFrom) {
        if (readFrom == ReadFrom.REPLICA) {
            return "ReadFrom.REPLICA";
        }
        if (readFrom == ReadFrom.UPSTREAM) {
            return "ReadFrom.UPSTREAM";
        }
        return "ReadFrom " + readFrom;
    }
}
