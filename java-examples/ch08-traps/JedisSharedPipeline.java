///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java

// Chapter 8: one Jedis 8.0.2 Pipeline shared by several threads, against a pipeline per call and
// the shared one behind a lock.
//
// Each of `threads` threads runs `size` rounds; a round queues `pairs` SET and GET pairs of keys
// of its own (each value is its key's name) and calls sync(), then reads its GET Responses. The
// whole thing is a trial, run `repeat` times per mode, each on a RedisClient of its own. Per mode
// the facts count, over every trial:
//   jedis_<mode>_wrong           GET replies naming another caller's key (a reply given to the wrong caller)
//   jedis_<mode>_missing         the caller's own values it did not get back
//   jedis_<mode>_exceptions      the exception each failed round met first, by class ("Class n, ...")
//   jedis_<mode>_lost            SETs issued whose key the server does not have
//   jedis_<mode>_extra_runs      SETs the server ran beyond the keys it holds (commandstats)
//   jedis_<mode>_corrupt_values  issued keys whose value names another key
//   jedis_<mode>_stray_keys      keys under the trial's prefix that no caller issued
//   jedis_<mode>_trials_faulty   trials in which any of these was not 0
// Pipeline.appendCommand writes to the connection's output buffer and adds to a LinkedList of
// responses, and sync() reads as many replies as that list holds: nothing there is guarded, so
// threads that share it interleave their bytes, their queue entries and their reads.
//
//   jbang ch08-jedis-shared [host] [port] [size] [repeat] [warmup] [threads pairs socket-timeout-ms]
//   e.g.  jbang ch08-jedis-shared 127.0.0.1 "$PIPELAB_PORT" 10 3 0 8 5 500
//
// warmup is not used: every trial counts.

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

public class JedisSharedPipeline {

    static final String EXAMPLE = "ch08-jedis-shared";
    static final List<String> MODES = List.of("shared", "per_call", "lock");
    /** How long a trial's threads may take before the example reports them stuck and moves on. */
    static final long TRIAL_BOUND_S = 30;

    /** The first exception a caller met in the run, for its message. */
    static final java.util.concurrent.atomic.AtomicReference<Exception> FIRST_ERROR =
            new java.util.concurrent.atomic.AtomicReference<>();

    /** One call's outcome: the values its GETs returned, or the first exception it met. */
    record Outcome(List<String> values, Exception error) {
    }

    public static void main(String[] args) {
        String[] extra = LabSupport.extra(args);
        LabSupport.run(EXAMPLE, LabSupport.usual(args), 10, 3, s -> run(s, extra));
    }

    // --8<-- [start:jedis_shared]
    /** Queues a SET and a GET of each key; each value is its key's name. */
    static List<Response<String>> setAndGet(Pipeline pipeline, List<String> keys) {
        List<Response<String>> gets = new ArrayList<>();
        for (String key : keys) {
            pipeline.set(key, key);
            gets.add(pipeline.get(key));
        }
        return gets;
    }

    /** The trap: every thread queues into, and syncs, the same Pipeline. */
    static List<String> shared(Pipeline pipeline, List<String> keys) {
        List<Response<String>> gets = setAndGet(pipeline, keys);
        pipeline.sync();
        return values(gets);
    }
    // --8<-- [end:jedis_shared]

    // --8<-- [start:jedis_shared_fix]
    /** The fix: a pipeline per call, on a pooled connection that close() syncs and gives back. */
    static List<String> perCall(RedisClient client, List<String> keys) {
        try (Pipeline pipeline = client.pipelined()) {
            List<Response<String>> gets = setAndGet(pipeline, keys);
            pipeline.sync();
            return values(gets);
        }
    }

    /** The other fix: one lock held from the first queued command to the last reply. */
    static List<String> locked(Pipeline pipeline, Object lock, List<String> keys) {
        synchronized (lock) {
            return shared(pipeline, keys);
        }
    }
    // --8<-- [end:jedis_shared_fix]

    static List<String> values(List<Response<String>> gets) {
        List<String> out = new ArrayList<>(gets.size());
        for (Response<String> get : gets) {
            out.add(get.get());
        }
        return out;
    }

    interface Call {
        List<String> run(List<String> keys) throws Exception;
    }

    static void run(LabSupport.Settings s, String[] extra) throws Exception {
        if (extra.length != 0 && extra.length != 3) {
            throw new LabSupport.Stop(2, EXAMPLE + ": expected 0 or 3 arguments after the usual five (threads pairs"
                    + " socket-timeout-ms) but got " + extra.length + ".");
        }
        int threads = extra.length == 3 ? positive(extra[0], "threads") : 8;
        int pairs = extra.length == 3 ? positive(extra[1], "pairs") : 5;
        int timeoutMs = extra.length == 3 ? positive(extra[2], "socket-timeout-ms") : 500;
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"));
        try (Jedis control = LabSupport.connect(s)) {
            LabSupport.requireLabOnly(control, s);
            report.header(threads + " threads, " + s.size() + " rounds of " + pairs + " SET and GET pairs each, "
                    + s.repeat() + " trials per mode");
            report.fact("threads", threads);
            report.fact("rounds", s.size());
            report.fact("pairs", pairs);
            report.fact("trials", s.repeat());
            report.fact("socket_timeout_ms", timeoutMs);
            for (String mode : MODES) {
                Map<String, Long> total = new TreeMap<>();
                Map<String, Integer> errors = new TreeMap<>();
                int faulty = 0;
                for (int trial = 0; trial < s.repeat(); trial++) {
                    Map<String, Long> counts = trial(s, mode, trial, threads, pairs, timeoutMs, control, errors);
                    faulty += counts.get("wrong") + counts.get("missing") + counts.get("failed") + counts.get("lost")
                            + counts.get("stuck") + counts.get("corrupt_values") + counts.get("stray_keys") > 0 ? 1 : 0;
                    counts.forEach((k, v) -> total.merge(k, v, Long::sum));
                }
                String p = "jedis_" + mode + "_";
                total.forEach((k, v) -> report.fact(p + k, v));
                report.fact(p + "trials_faulty", faulty);
                List<String> text = new ArrayList<>();
                errors.forEach((name, n) -> text.add(name + " " + n));
                report.fact(p + "exceptions", String.join(", ", text));
                Exception first = FIRST_ERROR.getAndSet(null);
                if (first != null) {
                    report.fact(p + "first_error", first.getClass().getSimpleName() + ": " + first.getMessage());
                }
                System.out.println(String.format("%-9s %s, exceptions: %s, trials with a fault: %d of %d", mode, total,
                        text.isEmpty() ? "none" : String.join(", ", text), faulty, s.repeat()));
            }
        }
        report.finish();
    }

    static int positive(String text, String name) {
        try {
            int value = Integer.parseInt(text.trim());
            if (value > 0) {
                return value;
            }
        } catch (NumberFormatException e) {
            // falls through to the sentence below
        }
        throw new LabSupport.Stop(2, EXAMPLE + ": " + name + " must be a whole number above 0, not '" + text + "'.");
    }

    /** One trial of `mode`: the callers' and the server's counts; its keys are deleted after. */
    static Map<String, Long> trial(LabSupport.Settings s, String mode, int trial, int threads, int pairs, int timeoutMs,
                                   Jedis control, Map<String, Integer> errors) throws Exception {
        List<List<List<String>>> batches = new ArrayList<>();
        List<String> all = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            List<List<String>> rounds = new ArrayList<>();
            for (int r = 0; r < s.size(); r++) {
                List<String> keys = new ArrayList<>();
                for (int i = 0; i < pairs; i++) {
                    keys.add(LabSupport.key("ch08", "shared", "jedis", mode, trial, "c" + t, "r" + r, i));
                }
                rounds.add(keys);
                all.addAll(keys);
            }
            batches.add(rounds);
        }
        ConnectionPoolConfig pool = new ConnectionPoolConfig();
        pool.setMaxTotal(threads + 1);
        long setsBefore = LabSupport.commandCalls(s).getOrDefault("set", 0L);
        List<List<Outcome>> outcomes = new ArrayList<>();
        boolean stuck;
        try (RedisClient client = RedisClient.builder().hostAndPort(s.host(), s.port()).poolConfig(pool)
                .clientConfig(LabSupport.jedisConfig(s, DefaultJedisClientConfig.builder()
                        .socketTimeoutMillis(timeoutMs)))
                .build()) {
            Pipeline one = client.pipelined();
            Object lock = new Object();
            Call call = switch (mode) {
                case "shared" -> keys -> shared(one, keys);
                case "per_call" -> keys -> perCall(client, keys);
                default -> keys -> locked(one, lock, keys);
            };
            stuck = !runThreads(call, batches, outcomes);
            try {
                one.close();
            } catch (RuntimeException e) {
                // a shared pipeline may be broken by now; its last sync() is not what is counted
            }
        }
        Map<String, Long> counts = tally(batches, outcomes, errors);
        long applied = LabSupport.countExisting(control, all);
        long runs = LabSupport.commandCalls(s).getOrDefault("set", 0L) - setsBefore;
        // Keys whose value names another key, and keys the callers never issued: what interleaved writes made.
        Set<String> issued = new HashSet<>(all);
        List<String> stray = new ArrayList<>();
        String match = LabSupport.key("ch08", "shared", "jedis", mode, trial) + ":*";
        String cursor = ScanParams.SCAN_POINTER_START;
        do {
            ScanResult<String> page = control.scan(cursor, new ScanParams().match(match).count(1000));
            for (String key : page.getResult()) {
                if (!issued.contains(key)) {
                    stray.add(key);
                }
            }
            cursor = page.getCursor();
        } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
        long corrupt = 0;
        List<String> values = control.mget(all.toArray(new String[0]));
        for (int i = 0; i < all.size(); i++) {
            corrupt += values.get(i) != null && !values.get(i).equals(all.get(i)) ? 1 : 0;
        }
        LabSupport.deleteKeys(control, all);
        LabSupport.deleteKeys(control, stray);
        counts.put("stray_keys", (long) stray.size());
        counts.put("corrupt_values", corrupt);
        counts.put("issued", (long) all.size());
        counts.put("lost", all.size() - applied);
        counts.put("extra_runs", Math.max(0, runs - applied - stray.size()));
        counts.put("stuck", stuck ? 1L : 0L);
        return counts;
    }

    /** Runs every caller's rounds on a thread of its own; false if they did not end within TRIAL_BOUND_S. */
    static boolean runThreads(Call call, List<List<List<String>>> batches, List<List<Outcome>> outcomes)
            throws InterruptedException {
        ExecutorService pool = Executors.newFixedThreadPool(batches.size());
        CountDownLatch go = new CountDownLatch(1);
        for (List<List<String>> rounds : batches) {
            List<Outcome> mine = Collections.synchronizedList(new ArrayList<>());
            outcomes.add(mine);
            pool.submit(() -> {
                go.await();
                for (List<String> keys : rounds) {
                    try {
                        mine.add(new Outcome(call.run(keys), null));
                    } catch (Exception e) { // the exception is the finding
                        mine.add(new Outcome(List.of(), e));
                    }
                }
                return null;
            });
        }
        go.countDown();
        pool.shutdown();
        boolean ended = pool.awaitTermination(TRIAL_BOUND_S, TimeUnit.SECONDS);
        pool.shutdownNow();
        return ended;
    }

    static Map<String, Long> tally(List<List<List<String>>> batches, List<List<Outcome>> outcomes,
                                   Map<String, Integer> errors) {
        long calls = 0, own = 0, missing = 0, wrong = 0, failed = 0;
        String prefix = LabSupport.key("ch08", "shared", "jedis");
        for (int t = 0; t < batches.size(); t++) {
            List<Outcome> mine;
            synchronized (outcomes.get(t)) {
                mine = new ArrayList<>(outcomes.get(t));
            }
            for (int r = 0; r < batches.get(t).size(); r++) {
                List<String> keys = batches.get(t).get(r);
                calls++;
                Outcome o = r < mine.size() ? mine.get(r) : new Outcome(List.of(), null); // a stuck caller's
                if (o.error() != null) {
                    failed++;
                    errors.merge(o.error().getClass().getSimpleName(), 1, Integer::sum);
                    FIRST_ERROR.compareAndSet(null, o.error());
                }
                Set<String> values = new HashSet<>();
                for (String v : o.values()) {
                    if (v != null) {
                        values.add(v);
                    }
                }
                for (String key : keys) {
                    if (values.contains(key)) {
                        own++;
                    } else {
                        missing++;
                    }
                }
                for (String v : values) {
                    if (v.startsWith(prefix) && !keys.contains(v)) {
                        wrong++;
                    }
                }
            }
        }
        Map<String, Long> counts = new TreeMap<>();
        counts.put("calls", calls);
        counts.put("replies_expected", own + missing);
        counts.put("own", own);
        counts.put("missing", missing);
        counts.put("wrong", wrong);
        counts.put("failed", failed);
        return counts;
    }
}
