///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.redisson:redisson:4.7.0
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=error
//SOURCES ../common/LabSupport.java
//SOURCES ClusterSupport.java
//SOURCES ClusterReplicaReads.java
//SOURCES ../common/RedissonSupport.java
//SOURCES ../common/LettuceSupport.java

// Chapter 5: a Java client's cluster pipeline when the cluster fails under it. One process runs
// one scenario for one client and reports what the CALLER saw; the harness prepared the cluster
// (a paused master, a flushed script cache, replication held back) and counts on the servers.
//
//   lost <client> <victim-port> <victim-pid> <n> <wait-ms>     client: jedis, lettuce
//     The victim master holds the writes that reach it unrun (the harness sent it CLIENT PAUSE
//     WRITE). One pipeline of n SETs pipelab:ch05:lost:<i> over every master; 200 ms after it
//     starts, the example kills the victim (SIGKILL) and waits for the pipeline at most wait-ms
//     from its start.
//   scripts <client> <n> <script-body>                         client: jedis, lettuce
//     The script is loaded on every master but one (SCRIPT FLUSH). One pipeline of n EVALSHA
//     (the SHA-1 computed here) on keys pipelab:ch05:script:<i> over every master.
//   replicas <setting> <n>     setting: lettuce, lettuce_replica, redisson, redisson_master
//     Keys pipelab:ch05:replica:<i> hold "old" everywhere and replication is held back: a pipeline
//     of n GETs, then one of n pairs SET "new" + GET (ClusterReplicaReads.java).
//
//   jbang ch05-failures host port <scenario> <client> ...      (host:port: one master)
//
// Facts: outcome (ok, the first error line, or "still waiting after <w> ms"), replies_ok, replies_failed,
// replies_pending, errors ({text: count}), waited_ms (pipeline start to return), client, and each scenario's
// own. The keys stay: the harness that set the cluster up clears it. The process exits after its report.

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.event.connection.ReconnectAttemptEvent;
import io.lettuce.core.protocol.ConnectionIntent;

import redis.clients.jedis.ClusterPipeline;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.Response;

import pipelab.LabConnection;
import pipelab.LettuceSupport;

public class ClusterFailures {

    static final String EXAMPLE = "ch05-failures";
    static final String USAGE = "usage: jbang " + EXAMPLE + " host port lost jedis|lettuce <victim-port> <victim-pid> <n> "
            + "<wait-ms> | scripts jedis|lettuce <n> <script-body> | replicas "
            + String.join("|", ClusterReplicaReads.SETTINGS) + " <n>";

    /** When the victim dies, counted from the pipeline's start (the contract's 200 ms). */
    static final long KILL_AFTER_MS = 200;

    /** The longest the scripts and replicas pipelines are waited for; lost has its wait-ms. */
    static final long PIPELINE_WAIT_MS = 10_000;

    private static final int ERROR_CHARS = 80; // of an error text in a fact, as in the other languages' examples

    static final Object PENDING = new Object(); // a reply that had not come when the caller stopped waiting

    public static void main(String[] args) {
        if (args.length > 0 && (args[0].equals("-h") || args[0].equals("--help"))) {
            System.out.println(USAGE);
            System.exit(0);
        }
        // Checked here so that a mistake is told with this example's usage, not LabSupport's five arguments.
        Scenario sc;
        try {
            sc = Scenario.parse(args);
        } catch (LabSupport.Stop bad) {
            System.err.println(bad.getMessage());
            System.exit(bad.exitCode);
            return;
        }
        // host and port name a master: the cluster's settings (REDIS_CLUSTER_URL, else REDIS_URL).
        LabSupport.run(EXAMPLE, new String[] {args[0], args[1]}, 1, 1, LabConnection::cluster, s -> run(s, sc));
    }

    /** The scenario's arguments, checked: a mistake stops with one sentence and exit code 2. */
    record Scenario(String name, String client, int n, int victimPort, long victimPid, long waitMs, String script) {

        static Scenario parse(String[] args) {
            if (args.length < 5) {
                throw bad("expected host, port, a scenario, a client and its arguments but got " + args.length
                        + " argument(s)");
            }
            if (args[0].isBlank()) {
                throw bad("host must not be empty");
            }
            number(args[1], "port", 1, 65_535);
            String name = args[2];
            String client = args[3];
            switch (name) {
                case "lost" -> {
                    expect(args, 8, List.of("jedis", "lettuce"));
                    return new Scenario(name, client, number(args[6], "n", 1, 1_000_000), number(args[4], "victim-port",
                            1, 65_535), number(args[5], "victim-pid", 2, Integer.MAX_VALUE), number(args[7], "wait-ms", 1,
                            600_000), null);
                }
                case "scripts" -> {
                    expect(args, 6, List.of("jedis", "lettuce"));
                    if (args[5].isBlank()) {
                        throw bad("script-body must be a Lua script such as \"return redis.call('INCR', KEYS[1])\", not empty");
                    }
                    return new Scenario(name, client, number(args[4], "n", 1, 1_000_000), 0, 0, 0, args[5]);
                }
                case "replicas" -> {
                    expect(args, 5, ClusterReplicaReads.SETTINGS);
                    return new Scenario(name, client, number(args[4], "n", 1, 1_000_000), 0, 0, 0, null);
                }
                default -> throw bad("scenario must be lost, scripts or replicas (a slot that moves is ch05-moved's), not '"
                        + name + "'");
            }
        }

        /** The scenario's number of arguments and its client (a setting, for replicas). */
        private static void expect(String[] args, int count, List<String> clients) {
            if (args.length != count) {
                throw bad("scenario " + args[2] + " takes " + (count - 2) + " arguments after host and port but got "
                        + (args.length - 2));
            }
            if (!clients.contains(args[3])) {
                throw bad("the " + args[2] + " scenario's " + (args[2].equals("replicas") ? "setting" : "client")
                        + " must be one of " + String.join(", ", clients) + ", not '" + args[3] + "'");
            }
        }

        private static int number(String text, String name, long min, long max) {
            try {
                long value = Long.parseLong(text.strip().replace("_", ""));
                if (value >= min && value <= max) {
                    return (int) value;
                }
            } catch (NumberFormatException e) {
                // reported below, with the same sentence as an out-of-range value
            }
            throw bad(name + " must be a whole number from " + min + " to " + max + ", not '" + text + "'");
        }

        private static LabSupport.Stop bad(String problem) {
            return new LabSupport.Stop(2, EXAMPLE + ": " + problem + "; " + USAGE + ".");
        }
    }

    static void run(LabSupport.Settings given, Scenario sc) throws Exception {
        LabSupport.Settings s = new LabSupport.Settings(given.example(), given.host(), given.port(), sc.n(), 1, 0,
                given.url());
        Facts report = new Facts(s);
        String library = sc.client().replaceAll("_.*", ""); // jedis, lettuce or redisson
        String version = switch (library) {
            case "jedis" -> LabSupport.versionOf(RedisClusterClient.class, "redis.clients", "jedis", "8.0.2");
            case "lettuce" -> LabSupport.versionOf(io.lettuce.core.cluster.RedisClusterClient.class, "io.lettuce",
                    "lettuce-core", "7.7.0.RELEASE").split("/")[0];
            default -> LabSupport.versionOf(org.redisson.Redisson.class, "org.redisson", "redisson", "4.7.0");
        };
        report.client(library, version);
        switch (sc.name()) {
            case "lost" -> lost(s, sc, report);
            case "scripts" -> scripts(s, sc, report);
            default -> ClusterReplicaReads.run(s, sc, report);
        }
        report.fact("client", Character.toUpperCase(library.charAt(0)) + library.substring(1) + " " + version);
        report.finish();
    }

    // ================================================================ lost

    static void lost(LabSupport.Settings s, Scenario sc, Facts report) throws Exception {
        List<String> keys = LabSupport.keys(sc.n(), "ch05", "lost");
        ProcessHandle victim;
        try (ClusterSupport.Cluster cluster = ClusterSupport.Cluster.open(s)) {
            cluster.requireLabOnly();
            victim = victimProcess(cluster, sc);
        } // the plain connections close now, before one of their servers dies
        report.header(sc.n() + " pipelined SETs over every master; master :" + sc.victimPort() + " (pid "
                + sc.victimPid() + ", writes paused) killed " + KILL_AFTER_MS + " ms after the start");
        if (sc.client().equals("jedis")) {
            lostJedis(s, sc, report, keys, victim);
        } else {
            lostLettuce(s, sc, report, keys, victim);
        }
        // No client shutdown: LabSupport.run exits next, and a graceful one would wait on the dead master.
    }

    /** The victim's process, checked against the victim's own INFO: a wrong pid stops with exit code 2. */
    static ProcessHandle victimProcess(ClusterSupport.Cluster cluster, Scenario sc) {
        ClusterSupport.Node node = cluster.masters.stream().filter(m -> m.port() == sc.victimPort()).findFirst()
                .orElseThrow(() -> new LabSupport.Stop(2, EXAMPLE + ": victim-port " + sc.victimPort()
                        + " is not a master of the cluster at " + cluster.s.where() + "; pass one of "
                        + cluster.masters.stream().map(m -> String.valueOf(m.port())).toList() + "."));
        String pid = ClusterSupport.field(cluster.on(node).info("server"), "process_id");
        if (!pid.equals(String.valueOf(sc.victimPid()))) {
            throw new LabSupport.Stop(2, EXAMPLE + ": victim-pid " + sc.victimPid() + " is not the master on port "
                    + sc.victimPort() + " (its INFO says process_id " + pid + "); the example kills only that master.");
        }
        return ProcessHandle.of(sc.victimPid()).orElseThrow(() -> new LabSupport.Stop(2, EXAMPLE + ": no process "
                + sc.victimPid() + " on this machine; the victim must run where the example does."));
    }

    static void lostJedis(LabSupport.Settings s, Scenario sc, Facts report, List<String> keys, ProcessHandle victim)
            throws Exception {
        RedisClusterClient jedis = openJedis(s);
        List<Response<String>> replies = new ArrayList<>(keys.size());
        ExecutorService caller = Executors.newSingleThreadExecutor();
        Logged logged = Logged.start();
        long start = System.nanoTime();
        Future<?> pipeline = caller.submit(() -> jedisSets(jedis, keys, replies));
        double killedAfter = kill(victim, start, report);
        boolean returned = waitFor(pipeline, start, sc.waitMs());
        double waited = returned ? millis(start) : sc.waitMs();
        report.fact("logged", logged.stop());
        // Until sync() returns no Response has been handed a reply: all are pending for the caller.
        List<Object> seen = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            seen.add(returned ? valueOf(replies.get(i)) : PENDING);
        }
        report.caller(seen, returned ? null : "still waiting after " + sc.waitMs() + " ms", waited, thrown(pipeline));
        report.fact("killed_after_ms", killedAfter);
    }

    static void lostLettuce(LabSupport.Settings s, Scenario sc, Facts report, List<String> keys,
                            ProcessHandle victim) throws Exception {
        io.lettuce.core.cluster.RedisClusterClient lettuce = LettuceSupport.clusterClient(s.url(), s.host(), s.port());
        AtomicInteger reconnects = new AtomicInteger();
        lettuce.getResources().eventBus().get().filter(ReconnectAttemptEvent.class::isInstance)
                .subscribe(event -> reconnects.incrementAndGet());
        StatefulRedisClusterConnection<String, String> connection = lettuce.connect();
        openConnections(connection, false);
        connection.setAutoFlushCommands(false);
        long start = System.nanoTime();
        List<RedisFuture<String>> replies = lettuceSets(connection, keys);
        double killedAfter = kill(victim, start, report);
        boolean returned = awaitAll(replies, start, sc.waitMs());
        double waited = returned ? millis(start) : sc.waitMs();
        report.caller(settle(replies), returned ? null : "still waiting after " + sc.waitMs() + " ms", waited, null);
        report.fact("killed_after_ms", killedAfter);
        report.fact("reconnect_attempts", reconnects.get());
    }

    // --8<-- [start:lost]
    /**
     * Jedis: each SET goes into the buffer of its master's connection; sync() flushes them and
     * reads each master's replies on a pool thread. A connection that dies there is logged
     * ("Error with connection to ...") and dropped; sync() returns as usual, and the dead
     * master's Responses never get a reply: their get() throws IllegalStateException.
     */
    static void jedisSets(RedisClusterClient jedis, List<String> keys, List<Response<String>> replies) {
        try (ClusterPipeline pipeline = jedis.pipelined()) {
            for (String key : keys) {
                replies.add(pipeline.set(key, "1"));
            }
            pipeline.sync();
        }
    }

    /**
     * Lettuce, auto-flush off: the SETs wait in each master's connection until flushCommands().
     * When a connection drops, its unanswered commands move to a buffer that is written again
     * once it reconnects (auto-reconnect, on by default); until then, or the 60 s command
     * timeout, their futures stay pending.
     */
    static List<RedisFuture<String>> lettuceSets(StatefulRedisClusterConnection<String, String> connection,
                                                 List<String> keys) {
        RedisAdvancedClusterAsyncCommands<String, String> async = connection.async();
        List<RedisFuture<String>> replies = new ArrayList<>(keys.size());
        for (String key : keys) {
            replies.add(async.set(key, "1"));
        }
        connection.flushCommands();
        return replies;
    }
    // --8<-- [end:lost]

    /** SIGKILL for the victim KILL_AFTER_MS after `start`; returns when it was sent, in ms from `start`. */
    static double kill(ProcessHandle victim, long start, Facts report) throws InterruptedException {
        long due = start + TimeUnit.MILLISECONDS.toNanos(KILL_AFTER_MS);
        long now;
        while ((now = System.nanoTime()) < due) {
            Thread.sleep(Math.max(1, TimeUnit.NANOSECONDS.toMillis(due - now)));
        }
        report.fact("victim_killed", victim.destroyForcibly()); // SIGKILL on Linux and macOS
        return round1((now - start) / 1e6);
    }

    /**
     * Jedis's defaults; the slot map is read on creation, and one connection per node opened
     * (and returned to its pool) now, so that the pipeline's first commands do not wait for one.
     */
    static RedisClusterClient openJedis(LabSupport.Settings s) {
        RedisClusterClient jedis = ClusterSupport.jedisCluster(s);
        jedis.getClusterNodes().values().forEach(pool -> pool.getResource().close());
        return jedis;
    }

    /**
     * Opens, before auto-flush goes off, the connections the pipeline's commands will be routed to:
     * every master's (ConnectionIntent.WRITE) and, with `replicas`, every replica's (READ, which
     * sends READONLY). A command routed to a connection still opening is written once it is up,
     * after flushCommands() has passed, and would wait for a second flush (see ch05-moved).
     */
    static void openConnections(StatefulRedisClusterConnection<String, String> connection, boolean replicas) {
        for (RedisClusterNode node : connection.getPartitions()) {
            if (node.is(RedisClusterNode.NodeFlag.UPSTREAM)) {
                connection.getConnection(node.getUri().getHost(), node.getUri().getPort(), ConnectionIntent.WRITE);
            } else if (replicas && node.is(RedisClusterNode.NodeFlag.REPLICA)) {
                connection.getConnection(node.getUri().getHost(), node.getUri().getPort(), ConnectionIntent.READ);
            }
        }
    }

    // ================================================================ scripts

    static void scripts(LabSupport.Settings s, Scenario sc, Facts report) throws Exception {
        List<String> keys = LabSupport.keys(sc.n(), "ch05", "script");
        String sha1 = sha1(sc.script());
        try (ClusterSupport.Cluster cluster = ClusterSupport.Cluster.open(s)) {
            cluster.requireLabOnly();
        }
        report.header(sc.n() + " pipelined EVALSHA " + sha1 + " over every master, one master's script cache empty");
        report.fact("sha1", sha1);
        List<Object> seen;
        String outcome = null;
        double waited;
        if (sc.client().equals("jedis")) {
            RedisClusterClient jedis = openJedis(s);
            List<Response<Object>> replies = new ArrayList<>(sc.n());
            long start = System.nanoTime();
            try {
                jedisScripts(jedis, sha1, keys, replies);
            } catch (RuntimeException e) {
                outcome = shown(e);
            }
            waited = millis(start);
            seen = new ArrayList<>(replies.stream().map(ClusterFailures::valueOf).toList());
            jedis.close();
        } else {
            io.lettuce.core.cluster.RedisClusterClient lettuce = LettuceSupport.clusterClient(s.url(), s.host(), s.port());
            StatefulRedisClusterConnection<String, String> connection = lettuce.connect();
            openConnections(connection, false);
            connection.setAutoFlushCommands(false);
            long start = System.nanoTime();
            List<RedisFuture<Long>> replies = lettuceScripts(connection, sha1, keys);
            boolean returned = awaitAll(replies, start, PIPELINE_WAIT_MS);
            waited = returned ? millis(start) : PIPELINE_WAIT_MS;
            outcome = returned ? null : "still waiting after " + PIPELINE_WAIT_MS + " ms";
            seen = settle(replies);
            lettuce.shutdown();
        }
        report.caller(seen, outcome, waited, null);
        report.fact("values_ok", seen.stream().filter(v -> v instanceof Long l && l >= 1).count());
    }

    // --8<-- [start:scripts]
    /**
     * Jedis: ClusterPipeline.evalsha sends EVALSHA to the key's master and nothing else: no
     * SCRIPT LOAD, no EVAL fallback. A master without the script answers NOSCRIPT, which
     * lands in that call's Response (get() throws JedisNoScriptException); sync() does not throw.
     */
    static void jedisScripts(RedisClusterClient jedis, String sha1, List<String> keys, List<Response<Object>> replies) {
        try (ClusterPipeline pipeline = jedis.pipelined()) {
            for (String key : keys) {
                replies.add(pipeline.evalsha(sha1, List.of(key), List.of()));
            }
            pipeline.sync();
        }
    }

    /** Lettuce: evalsha on the cluster's async API, routed by its first key; NOSCRIPT fails that future alone. */
    static List<RedisFuture<Long>> lettuceScripts(StatefulRedisClusterConnection<String, String> connection, String sha1,
                                                  List<String> keys) {
        RedisAdvancedClusterAsyncCommands<String, String> async = connection.async();
        List<RedisFuture<Long>> replies = new ArrayList<>(keys.size());
        for (String key : keys) {
            replies.add(async.evalsha(sha1, ScriptOutputType.INTEGER, key));
        }
        connection.flushCommands();
        return replies;
    }
    // --8<-- [end:scripts]

    static String sha1(String script) throws Exception {
        byte[] digest = MessageDigest.getInstance("SHA-1").digest(script.getBytes(StandardCharsets.UTF_8));
        return HexFormat.of().formatHex(digest); // lower case, as Redis names scripts
    }

    // ================================================================ what the caller saw

    /** A Response's value, or what its get() threw (an error reply, or no reply at all). */
    static Object valueOf(Response<?> reply) {
        try {
            return reply.get();
        } catch (RuntimeException e) {
            return e;
        }
    }

    /** Each future's value, the exception it failed with, or PENDING. */
    static List<Object> settle(List<? extends CompletionStage<?>> futures) {
        List<Object> out = new ArrayList<>(futures.size());
        for (CompletionStage<?> stage : futures) {
            CompletableFuture<?> future = stage.toCompletableFuture();
            if (!future.isDone()) {
                out.add(PENDING);
                continue;
            }
            try {
                out.add(future.join());
            } catch (RuntimeException e) {
                out.add(e.getCause() != null ? e.getCause() : e);
            }
        }
        return out;
    }

    /** True when every future completed (either way) within waitMs of `start`. */
    static boolean awaitAll(List<? extends CompletionStage<?>> futures, long start, long waitMs)
            throws InterruptedException {
        CompletableFuture<?> all = CompletableFuture.allOf(
                futures.stream().map(CompletionStage::toCompletableFuture).toArray(CompletableFuture[]::new));
        try {
            all.get(Math.max(0, remaining(start, waitMs)), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException failed) {
            // some reply is an error: every future has completed, the replies say which
        }
        return true;
    }

    /** True when the task ended (either way) within waitMs of `start`; thrown() says how. */
    static boolean waitFor(Future<?> task, long start, long waitMs) throws InterruptedException {
        try {
            task.get(Math.max(0, remaining(start, waitMs)), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException threw) {
            // thrown() reports it
        }
        return true;
    }

    /** What an ended task threw, as an outcome; null if it returned or is still running. */
    static String thrown(Future<?> task) {
        if (task.isDone()) {
            try {
                task.get();
            } catch (ExecutionException | InterruptedException e) {
                return shown(e);
            }
        }
        return null;
    }

    private static long remaining(long start, long waitMs) {
        return start + TimeUnit.MILLISECONDS.toNanos(waitMs) - System.nanoTime();
    }

    static double millis(long start) {
        return round1((System.nanoTime() - start) / 1e6);
    }

    static double round1(double v) {
        return Math.round(v * 10) / 10.0;
    }

    /** An error as the facts show it: "Class: first line", addresses as <addr>, at most 80 characters. */
    static String shown(Throwable e) {
        Throwable t = e;
        while ((t instanceof ExecutionException || t instanceof java.util.concurrent.CompletionException)
                && t.getCause() != null) {
            t = t.getCause();
        }
        String message = t.getMessage() == null ? "" : t.getMessage().strip();
        String text = t.getClass().getSimpleName() + (message.isEmpty() ? "" : ": " + message);
        text = text.lines().findFirst().orElse("").replaceAll("(127\\.0\\.0\\.1|localhost):\\d+", "<addr>");
        return text.length() > ERROR_CHARS ? text.substring(0, ERROR_CHARS) : text;
    }

    /**
     * The result lines of LabSupport.Report, plus facts that are objects ({text: count}), which
     * LabReport.fact() does not take: they are added to the JSON's "facts" on the way out.
     */
    static final class Facts extends LabReport {
        private final Map<String, Map<String, Integer>> objects = new LinkedHashMap<>();

        Facts(LabSupport.Settings s) {
            super(s);
            withoutSpeedUps(); // one case, no race
        }

        void fact(String name, Map<String, Integer> counts) {
            objects.put(name, new LinkedHashMap<>(counts));
            System.out.println(String.format(Locale.ROOT, "%-20s %s", name + ":", LabSupport.toJson(counts)));
        }

        /** The facts every scenario reports, from the per-command results (values, Throwables, PENDING). */
        void caller(List<Object> replies, String waiting, double waitedMs, String thrown) {
            Map<String, Integer> errors = new LinkedHashMap<>();
            int ok = 0;
            int pending = 0;
            for (Object reply : replies) {
                if (reply == PENDING) {
                    pending++;
                } else if (reply instanceof Throwable t) {
                    errors.merge(shown(t), 1, Integer::sum);
                } else {
                    ok++;
                }
            }
            int failed = replies.size() - ok - pending;
            if (thrown != null && ok + failed == 0) {
                errors.merge(thrown, 1, Integer::sum);
            }
            fact("outcome", waiting != null ? waiting : thrown != null ? thrown : "ok");
            fact("replies_ok", ok);
            fact("replies_failed", failed);
            fact("replies_pending", pending);
            fact("errors", errors);
            fact("waited_ms", waitedMs);
        }

        @Override
        String json() {
            JsonObject doc = JsonParser.parseString(super.json()).getAsJsonObject();
            JsonObject facts = doc.has("facts") ? doc.getAsJsonObject("facts") : new JsonObject();
            objects.forEach((name, counts) -> {
                JsonObject object = new JsonObject();
                counts.forEach(object::addProperty);
                facts.add(name, object);
            });
            doc.add("facts", facts);
            return LabSupport.toJson(doc);
        }
    }

    /** What the client logs on stderr (slf4j-simple), passed through: Jedis tells a dead connection only there. */
    static final class Logged {
        private final PrintStream original = System.err;
        private final ByteArrayOutputStream copy = new ByteArrayOutputStream();

        static Logged start() {
            Logged logged = new Logged();
            System.setErr(new PrintStream(new java.io.OutputStream() {
                @Override
                public synchronized void write(int b) {
                    logged.original.write(b);
                    logged.copy.write(b);
                }

                @Override
                public synchronized void write(byte[] b, int off, int len) {
                    logged.original.write(b, off, len);
                    logged.copy.write(b, off, len);
                }
            }, true, StandardCharsets.UTF_8));
            return logged;
        }

        /** The first line logged at ERROR, without its thread name, or "nothing". */
        String stop() {
            System.err.flush();
            System.setErr(original);
            return copy.toString(StandardCharsets.UTF_8).lines().filter(line -> line.contains(" ERROR "))
                    .map(line -> line.substring(line.indexOf(" ERROR ") + 1)).findFirst()
                    .map(line -> line.replaceAll("(127\\.0\\.0\\.1|localhost):\\d+", "<addr>")).orElse("nothing");
        }
    }
}
