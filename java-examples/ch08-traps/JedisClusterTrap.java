// JedisTraps, parts 2 and 3: the cluster: one trap of the example, run by JedisTraps.run, whose static
// members (the report, the clients, the helpers) it reaches by name.

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import redis.clients.jedis.ClusterPipeline;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.MultiNodePipelineBase;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.util.JedisClusterCRC16;

final class JedisClusterTrap extends JedisTraps {

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
                .clientConfig(LabSupport.jedisConfig(seed, config)).build();
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
                long[] mark = {0};
                List<Long> started = new ArrayList<>(); // threads started, per iteration, warm-up included
                LabSupport.Samples samples = LabSupport.measure(seed, () -> mark[0] = threads.getTotalStartedThreadCount(),
                        () -> {
                            for (int i = 0; i < PIPELINES_PER_SAMPLE; i++) {
                                mode.getValue().run();
                            }
                        }, () -> started.add(threads.getTotalStartedThreadCount() - mark[0]));
                report.add(mode.getKey(), mode.getKey().replace('_', ' '), "pipelines", PIPELINES_PER_SAMPLE, samples);
                // The recorded iterations are the last ones; how many warm-ups came first varies.
                long recorded = started.subList(started.size() - samples.size(), started.size()).stream()
                        .mapToLong(Long::longValue).sum();
                double perPipeline = (double) recorded / ((long) samples.size() * PIPELINES_PER_SAMPLE);
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
}
