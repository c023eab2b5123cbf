///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../ch05-cluster/ClusterSupport.java

// Chapter 9: delete every key matching pipelab:ch09:doomed:* with Jedis 8.0.2, beside `kept` keys
// under pipelab:ch09:kept: that no way may touch. On the server, for each SCAN COUNT hint:
//   pipelined_<C>   SCAN MATCH ... COUNT C, then one UNLINK per key of the page in a Pipeline;
//   variadic_<C>    the same SCAN, then one UNLINK naming the whole page.
// On a cluster (the 9th argument), SCAN sees one node's keys, so every way walks the masters
// (with the largest COUNT), and a multi-key UNLINK may only name keys of one slot (CROSSSLOT):
//   nodes_per_slot  RedisClusterClient.getClusterNodes(), a Connection from each master's pool,
//                   SCAN there, and per page one UNLINK per slot in a Pipeline on that connection;
//   nodes_per_key   the same, one UNLINK per key;
//   iteration       RedisClusterClient.scanIteration(COUNT, pattern), which SCANs each node of its
//                   map in turn, and per page a ClusterPipeline of one UNLINK per key.
// Each iteration starts from N doomed keys (loaded outside the timed region) and is checked
// after: the UNLINK replies add up to N, no doomed key is left, every kept key is still there.
// Facts give, per way, SCAN calls, UNLINK commands and (cluster) keys deleted per master.
//
//   jbang ch09-delete [host] [port] [size] [repeat] [warmup] kept counts valueBytes [cluster]
//   e.g. jbang ch09-delete 127.0.0.1 "$PIPELAB_PORT" 200000 1 1 100000 100,1000 100 127.0.0.1:17000
//
// size is N; cluster is host:port of one node of a Redis Cluster, or - (or nothing) for none.

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import redis.clients.jedis.ClusterPipeline;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.ScanIteration;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;
import redis.clients.jedis.util.JedisClusterCRC16;

public class PatternDelete {

    static final String EXAMPLE = "ch09-delete";
    /** Commands per sync when loading the keys (outside the timed region). */
    static final int LOAD_BATCH = 10_000;

    /** What one deletion did: its SCAN calls, UNLINK commands and the keys the UNLINKs removed. */
    static final class Tally {
        long scans;
        long unlinks;
        long deleted;
    }

    public static void main(String[] args) {
        String[] extra = LabSupport.extra(args);
        LabSupport.run(EXAMPLE, LabSupport.usual(args), 200_000, 1, s -> run(s, extra));
    }

    static void run(LabSupport.Settings s, String[] extra) throws Exception {
        if (extra.length < 3 || extra.length > 4) {
            throw new LabSupport.Stop(2, EXAMPLE + ": give kept, counts and valueBytes after the five usual"
                    + " arguments (and optionally a cluster node host:port or -), e.g. 100000 100,1000 100.");
        }
        int kept = LabSupport.intList(EXAMPLE, "kept", extra[0]).get(0);
        List<Integer> counts = LabSupport.intList(EXAMPLE, "counts", extra[1]);
        String value = "v".repeat(LabSupport.intList(EXAMPLE, "valueBytes", extra[2]).get(0));
        LabSupport.Settings seed = extra.length == 4 ? ClusterSupport.seedAt(s, extra[3]) : null;

        List<String> doomed = LabSupport.keys(s.size(), "ch09", "doomed");
        List<String> keptKeys = LabSupport.keys(kept, "ch09", "kept");
        String pattern = LabSupport.key("ch09", "doomed") + ":*";
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"));
        report.header("deleting " + doomed.size() + " keys matching " + pattern + " beside " + kept
                + " kept keys, SCAN COUNT " + counts + (seed == null ? "" : ", and on the cluster via " + seed.where()));
        report.fact("pattern", pattern);
        report.fact("doomed", doomed.size());
        report.fact("kept", kept);

        try (Jedis jedis = LabSupport.connect(s)) {
            LabSupport.requireLabOnly(jedis, s);
            List<String> all = new ArrayList<>(doomed);
            all.addAll(keptKeys);
            try {
                load(jedis, keptKeys, "kept");
                Map<String, LabSupport.Step> modes = new LinkedHashMap<>();
                Map<String, Tally> tallies = new LinkedHashMap<>();
                for (int count : counts) {
                    for (boolean variadic : new boolean[] {false, true}) {
                        String mode = (variadic ? "variadic_" : "pipelined_") + count;
                        Tally tally = new Tally();
                        tallies.put(mode, tally);
                        modes.put(mode, () -> deleteByScan(jedis, pattern, count, variadic, tally));
                        report.fields(mode, Map.of("way", variadic ? "variadic" : "pipelined", "count", count,
                                "where", "server"));
                    }
                }
                LabSupport.Step reset = () -> load(jedis, doomed, value);
                Map<String, LabSupport.Samples> samples = LabSupport.interleaved(s, reset, modes, () -> {
                    if (LabSupport.countExisting(jedis, doomed) != 0) {
                        throw LabSupport.failure("doomed keys are left after a deletion");
                    }
                    requireKept(LabSupport.countExisting(jedis, keptKeys), kept);
                });
                report.paired(modes.keySet());
                samples.forEach((mode, timed) -> {
                    report.add(mode, mode.replace('_', ' '), "keys", timed);
                    tallyFacts(report, mode, tallies.get(mode), doomed.size());
                });
                report.fact("kept_after", LabSupport.countExisting(jedis, keptKeys));
            } finally {
                LabSupport.cleanup(s, all);
            }
        }
        if (seed != null) {
            LabSupport.against(seed, () -> onCluster(report, seed, doomed, keptKeys, pattern, counts, value));
        } else {
            report.fact("cluster_skipped", "no cluster node given (9th argument)");
        }
        report.finish();
    }

    // --8<-- [start:scan]
    /**
     * SCAN MATCH `pattern` COUNT `count` to the end, deleting each page before asking for the next:
     * a pipeline of one UNLINK per key, or one UNLINK naming the page.
     */
    static void deleteByScan(Jedis jedis, String pattern, int count, boolean variadic, Tally tally) {
        tally.scans = tally.unlinks = tally.deleted = 0;
        ScanParams params = new ScanParams().match(pattern).count(count);
        String cursor = ScanParams.SCAN_POINTER_START;
        do {
            ScanResult<String> page = jedis.scan(cursor, params);
            tally.scans++;
            List<String> keys = page.getResult();
            if (variadic && !keys.isEmpty()) {
                tally.deleted += jedis.unlink(keys.toArray(new String[0]));
                tally.unlinks++;
            } else if (!keys.isEmpty()) {
                tally.deleted += unlinkEach(jedis.pipelined(), keys, tally);
            }
            cursor = page.getCursor();
        } while (!cursor.equals(ScanParams.SCAN_POINTER_START)); // "0": the walk is complete
    }

    /** One UNLINK per key in the given pipeline, synced and closed; the keys it removed. */
    static long unlinkEach(Pipeline pipeline, Collection<String> keys, Tally tally) {
        List<Response<Long>> replies = new ArrayList<>(keys.size());
        try (pipeline) {
            keys.forEach(key -> replies.add(pipeline.unlink(key)));
            pipeline.sync();
        }
        tally.unlinks += keys.size();
        return replies.stream().mapToLong(Response::get).sum();
    }
    // --8<-- [end:scan]

    static void tallyFacts(LabSupport.Report report, String mode, Tally tally, int expected) {
        if (tally.deleted != expected) {
            throw LabSupport.failure(mode + " deleted " + tally.deleted + " keys, expected " + expected);
        }
        report.fact(mode + "_scan_calls", tally.scans);
        report.fact(mode + "_unlink_commands", tally.unlinks);
        report.fact(mode + "_deleted", tally.deleted);
    }

    static void requireKept(long found, int kept) {
        if (found != kept) {
            throw LabSupport.failure(found + " of the " + kept + " kept keys are left: a deletion touched them");
        }
    }

    /** SETs of the keys in a pipeline, synced every LOAD_BATCH. */
    static void load(Jedis jedis, List<String> keys, String value) {
        try (Pipeline pipeline = jedis.pipelined()) {
            for (int i = 0; i < keys.size(); i++) {
                pipeline.set(keys.get(i), value);
                if ((i + 1) % LOAD_BATCH == 0) {
                    pipeline.sync();
                }
            }
            pipeline.sync();
        }
    }

    // ================================================================ the cluster

    static void onCluster(LabSupport.Report report, LabSupport.Settings seed, List<String> doomed,
                          List<String> keptKeys, String pattern, List<Integer> counts, String value) throws Exception {
        int count = counts.get(counts.size() - 1);
        try (ClusterSupport.Cluster cluster = ClusterSupport.Cluster.open(seed);
             RedisClusterClient client = ClusterSupport.jedisCluster(seed)) {
            cluster.requireLabOnly();
            ClusterSupport.requireStable(cluster);
            List<String> all = new ArrayList<>(doomed);
            all.addAll(keptKeys);
            report.fact("cluster_masters", cluster.masters.size());
            report.fact("cluster_count", count);
            long[] before = new long[cluster.masters.size()];
            try {
                loadCluster(client, keptKeys, "kept");
                Map<String, LabSupport.Step> modes = new LinkedHashMap<>();
                Map<String, Tally> tallies = new LinkedHashMap<>();
                for (String mode : List.of("nodes_per_slot", "nodes_per_key", "iteration")) {
                    Tally tally = new Tally();
                    tallies.put(mode, tally);
                    modes.put(mode, mode.equals("iteration")
                            ? () -> deleteByIteration(client, pattern, count, tally)
                            : () -> deleteOnNodes(client, pattern, count, mode.equals("nodes_per_slot"), tally));
                    report.fields(mode, Map.of("way", mode, "count", count, "where", "cluster"));
                }
                Map<String, long[]> perNode = new LinkedHashMap<>();
                LabSupport.Step reset = () -> {
                    loadCluster(client, doomed, value);
                    for (int i = 0; i < before.length; i++) {
                        before[i] = cluster.on(cluster.masters.get(i)).dbSize();
                    }
                };
                String[] current = {null};
                Map<String, LabSupport.Step> tracked = new LinkedHashMap<>();
                modes.forEach((mode, step) -> tracked.put(mode, () -> {
                    current[0] = mode;
                    step.run();
                }));
                Map<String, LabSupport.Samples> samples = LabSupport.interleaved(seed, reset, tracked, () -> {
                    long[] deleted = new long[before.length];
                    for (int i = 0; i < before.length; i++) {
                        deleted[i] = before[i] - cluster.on(cluster.masters.get(i)).dbSize();
                    }
                    perNode.put(current[0], deleted);
                    if (cluster.countExisting(doomed) != 0) {
                        throw LabSupport.failure("doomed keys are left on the cluster after " + current[0]);
                    }
                    requireKept(cluster.countExisting(keptKeys), keptKeys.size());
                });
                report.paired(tracked.keySet());
                samples.forEach((mode, timed) -> {
                    report.add(mode, "cluster " + mode.replace('_', ' '), "keys", timed);
                    tallyFacts(report, mode, tallies.get(mode), doomed.size());
                    long[] deleted = perNode.get(mode);
                    for (int i = 0; i < deleted.length; i++) {
                        report.fact(mode + "_master" + i + "_deleted", deleted[i]);
                    }
                });
                report.fact("cluster_kept_after", cluster.countExisting(keptKeys));
            } finally {
                cluster.deleteKeys(all);
            }
        }
    }

    // --8<-- [start:cluster]
    /**
     * Every master the client knows (getClusterNodes() maps host:port to a pool), SCAN on a
     * connection from its pool, and each page deleted on that same connection: one UNLINK per
     * slot (a multi-key command may not cross slots) or one per key, pipelined.
     */
    static void deleteOnNodes(RedisClusterClient client, String pattern, int count, boolean perSlot, Tally tally) {
        tally.scans = tally.unlinks = tally.deleted = 0;
        ScanParams params = new ScanParams().match(pattern).count(count);
        for (ConnectionPool pool : client.getClusterNodes().values()) {
            try (Connection connection = pool.getResource()) {
                Jedis node = new Jedis(connection);
                if (!node.info("replication").contains("role:master")) {
                    continue; // a replica holds copies of its master's keys
                }
                String cursor = ScanParams.SCAN_POINTER_START;
                do {
                    ScanResult<String> page = node.scan(cursor, params);
                    tally.scans++;
                    if (perSlot && !page.getResult().isEmpty()) {
                        Map<Integer, List<String>> bySlot = new TreeMap<>();
                        for (String key : page.getResult()) {
                            bySlot.computeIfAbsent(JedisClusterCRC16.getSlot(key), k -> new ArrayList<>()).add(key);
                        }
                        List<Response<Long>> replies = new ArrayList<>();
                        try (Pipeline pipeline = new Pipeline(connection)) {
                            bySlot.values().forEach(keys -> replies.add(pipeline.unlink(keys.toArray(new String[0]))));
                            pipeline.sync();
                        }
                        tally.unlinks += replies.size();
                        tally.deleted += replies.stream().mapToLong(Response::get).sum();
                    } else if (!page.getResult().isEmpty()) {
                        tally.deleted += unlinkEach(new Pipeline(connection), page.getResult(), tally);
                    }
                    cursor = page.getCursor();
                } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
            }
        }
    }

    /** Jedis's own walk over the nodes, scanIteration(), with a ClusterPipeline per page. */
    static void deleteByIteration(RedisClusterClient client, String pattern, int count, Tally tally) {
        tally.scans = tally.unlinks = tally.deleted = 0;
        ScanIteration scan = client.scanIteration(count, pattern);
        while (!scan.isIterationCompleted()) {
            Collection<String> page = scan.nextBatchList();
            tally.scans++;
            if (!page.isEmpty()) {
                List<Response<Long>> replies = new ArrayList<>(page.size());
                // A page comes from one node; a new pipeline per page keeps sync() on that node alone.
                try (ClusterPipeline pipeline = client.pipelined()) {
                    page.forEach(key -> replies.add(pipeline.unlink(key)));
                    pipeline.sync();
                }
                tally.unlinks += page.size();
                tally.deleted += replies.stream().mapToLong(Response::get).sum();
            }
        }
    }
    // --8<-- [end:cluster]

    static void loadCluster(RedisClusterClient client, List<String> keys, String value) {
        try (ClusterPipeline pipeline = client.pipelined()) {
            for (int i = 0; i < keys.size(); i++) {
                pipeline.set(keys.get(i), value);
                if ((i + 1) % LOAD_BATCH == 0) {
                    pipeline.sync();
                }
            }
            pipeline.sync();
        }
    }
}
