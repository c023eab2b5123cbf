// RedissonTraps' instruments, apart so that each file stays under 600 lines: one observed run of a
// batch (its outcome, the commands Redis ran, the counters after it) and MONITOR, with the helpers
// the traps share. RedissonTraps extends this class to reach them by name.

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.redisson.api.BatchResult;
import org.redisson.api.RBatch;
import org.redisson.api.RedissonClient;

import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisMonitor;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisException;

import pipelab.JedisSupport;

class RedissonRuns {

    /** Upper bounds of the example's own waits. */
    static final Duration SETTLE = Duration.ofSeconds(30);
    static final Duration WAIT = Duration.ofSeconds(5);

    /** Waits until Redis holds `count` commands queued in one MULTI (CLIENT LIST multi=), at most WAIT. */
    static boolean awaitQueued(Jedis control, int count) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() < deadline) {
            if (control.clientList().contains(" multi=" + count + " ")) {
                return true;
            }
            Thread.sleep(5);
        }
        return false;
    }

    /**
     * Whether the master's first replica writes an AOF (true/false, or "unknown"): WAITAOF counts a
     * replica only once it has fsynced the write to its own AOF, so with appendonly no there it is 0.
     */
    static Object replicaAof(Jedis master) {
        Matcher m = Pattern.compile("slave0:ip=([^,]+),port=(\\d+)").matcher(master.info("replication"));
        if (!m.find()) {
            return "unknown";
        }
        try (Jedis replica = JedisSupport.jedis(m.group(1), Integer.parseInt(m.group(2)))) {
            return LabSupport.infoNumbers(replica, "persistence").getOrDefault("aof_enabled", 0L) == 1;
        } catch (JedisException e) {
            return "unknown";
        }
    }

    static Jedis connect(LabSupport.Settings rs) {
        try {
            return LabSupport.connect(rs);
        } catch (LabSupport.Stop stop) {
            throw new LabSupport.Stop(stop.exitCode, "replicated=" + rs.where() + ": " + stop.getMessage());
        }
    }

    static void requireOk(Outcome outcome) {
        if (!outcome.ok()) {
            throw LabSupport.failure("a batch on the replicated master failed: " + outcome.text());
        }
    }

    static double median(List<Double> samples) {
        List<Double> sorted = new ArrayList<>(samples);
        sorted.sort(null);
        int k = sorted.size();
        return k % 2 == 1 ? sorted.get(k / 2) : (sorted.get(k / 2 - 1) + sorted.get(k / 2)) / 2;
    }

    // ---------------------------------------------------------------- one observed run

    /** How execute() ended: "ok" or the exception, how long it took, the BatchResult if any. */
    record Outcome(String text, long elapsedMs, BatchResult<?> result) {
        boolean ok() {
            return result != null;
        }

        int syncedSlaves() {
            return result == null ? -1 : result.getSyncedSlaves();
        }

        /** The first reply as text ("2"), or "none". */
        String firstReply() {
            return result == null || result.getResponses().isEmpty() ? "none"
                    : String.valueOf(result.getResponses().get(0));
        }
    }

    static Outcome execute(RBatch batch) {
        long start = System.nanoTime();
        try {
            BatchResult<?> result = batch.execute();
            return new Outcome("ok", (System.nanoTime() - start) / 1_000_000, result);
        } catch (RuntimeException e) {
            return new Outcome(RedissonSupport.describe(e), (System.nanoTime() - start) / 1_000_000, null);
        }
    }

    /** The counters' total and how many of them went past 1. */
    record Tally(long total, long twice) {
        static Tally of(Jedis control, List<String> keys) {
            List<Response<List<String>>> replies = new ArrayList<>();
            try (Pipeline pipeline = control.pipelined()) {
                for (int from = 0; from < keys.size(); from += 1000) {
                    List<String> part = keys.subList(from, Math.min(from + 1000, keys.size()));
                    replies.add(pipeline.mget(part.toArray(new String[0])));
                }
                pipeline.sync();
            }
            long total = 0;
            long twice = 0;
            for (Response<List<String>> reply : replies) {
                for (String value : reply.get()) {
                    long v = value == null ? 0 : Long.parseLong(value);
                    total += v;
                    twice += v > 1 ? 1 : 0;
                }
            }
            return new Tally(total, twice);
        }
    }

    /** One run: its outcome, the commands Redis ran for it, the counters after it, what MONITOR saw. */
    record Run(Outcome outcome, Map<String, Long> calls, long incrs, Tally tally, Watch.Seen seen) {
        void report(LabSupport.Report report, String name) {
            report.fact(name + "_outcome", outcome.text());
            report.fact(name + "_elapsed_ms", outcome.elapsedMs());
            report.fact(name + "_first_reply", outcome.firstReply());
            report.fact(name + "_incr_calls", incrs);
            report.fact(name + "_counter_total", tally.total());
            report.fact(name + "_counters_twice", tally.twice());
            if (calls.containsKey("multi") || calls.containsKey("exec")) {
                report.fact(name + "_multi_calls", calls.getOrDefault("multi", 0L));
                report.fact(name + "_exec_calls", calls.getOrDefault("exec", 0L));
            }
            if (seen != null) {
                report.fact(name + "_connections", seen.connections());
                report.fact(name + "_server_attempts", seen.attempts());
                report.fact(name + "_interleaved", seen.interleaved());
                if (seen.attempts() > 1) {
                    report.fact(name + "_retry_gap_ms", seen.gapMs());
                }
            }
        }
    }

    interface BatchRun {
        Outcome run(RedissonClient client) throws Exception;
    }

    interface PlainRun {
        Outcome run() throws Exception;
    }

    /** The batch's INCRs as MONITOR shows them; SCRIPT_CALLS the idempotent batch's scripts. */
    static final String INCR_CALLS = "INCR";
    static final String SCRIPT_CALLS = "EVALSHA|EVAL";

    /**
     * Runs `task` once on fresh keys and a client of its own. `pauseMs` > 0 means the task pauses
     * writes for that long: then MONITOR watches the run for the batch's INCRs, and the counting
     * waits for the pause to be over before it waits for Redis to stop running INCRs.
     */
    static Run once(LabSupport.Settings s, Jedis control, List<String> keys, long pauseMs, BatchRun task)
            throws Exception {
        return once(s, control, keys, pauseMs > 0 ? INCR_CALLS : null, pauseMs, task);
    }

    /**
     * The client is shut down only after Redis has settled: closing a connection whose commands a
     * pause still holds would make Redis drop them unrun.
     */
    static Run once(LabSupport.Settings s, Jedis control, List<String> keys, String watched, long pauseMs,
                    BatchRun task) throws Exception {
        return RedissonSupport.withFreshClient(RedissonSupport.config(s),
                client -> onceWith(s, control, keys, watched, pauseMs, () -> task.run(client)));
    }

    /** The same for any task; `watched` (a regex of command names, or null for no MONITOR). */
    static Run onceWith(LabSupport.Settings s, Jedis control, List<String> keys, String watched, long pauseMs,
                        PlainRun task) throws Exception {
        LabSupport.deleteKeys(control, keys);
        Watch watch = watched != null ? Watch.start(s, watched) : null;
        try {
            Map<String, Long> before = LabSupport.commandCalls(s);
            long start = System.nanoTime();
            Outcome outcome = task.run();
            long leftMs = pauseMs + 50 - (System.nanoTime() - start) / 1_000_000;
            if (leftMs > 0) {
                Thread.sleep(leftMs); // commands held by the pause still run when it ends
            }
            long incrs = LabSupport.settledCalls(s, before, "incr", SETTLE);
            Map<String, Long> calls = LabSupport.callsBetween(before, LabSupport.commandCalls(s));
            Watch.Seen seen = watch == null ? null : watch.stop(control);
            return new Run(outcome, calls, incrs, Tally.of(control, keys), seen);
        } finally {
            if (watch != null) {
                watch.close();
            }
        }
    }

    // ---------------------------------------------------------------- MONITOR

    /**
     * MONITOR on a connection of its own, keeping the lines of one command on lab keys. Each
     * command of a batch touches its own key (or operation id), so the k-th time a key appears it
     * belongs to the k-th copy of the batch Redis ran.
     */
    static final class Watch implements AutoCloseable {
        /** 1718000000.123456 [0 127.0.0.1:51234] "INCR" "pipelab:ch08:redisson:stall:5" */
        private static final Pattern LINE = Pattern.compile("^(\\d+)\\.(\\d+) \\[\\d+ ([^\\]]+)\\] \"([^\"]+)\"(.*)$");

        private final Jedis jedis;
        private final Pattern command;
        private final String marker = "pipelab-ch08-watch-" + System.nanoTime();
        private final List<String> lines = new ArrayList<>();
        private final CountDownLatch started = new CountDownLatch(1);
        private final CountDownLatch sawMarker = new CountDownLatch(1);
        private final Thread thread;

        private Watch(LabSupport.Settings s, String commands) {
            this.command = Pattern.compile("\\] \"(" + commands + ")\" ");
            this.jedis = new Jedis(new HostAndPort(s.host(), s.port()),
                    LabSupport.jedisConfig(s, DefaultJedisClientConfig.builder()));
            this.thread = new Thread(this::listen, "pipelab-monitor");
            this.thread.setDaemon(true);
        }

        static Watch start(LabSupport.Settings s, String commands) throws InterruptedException {
            Watch watch = new Watch(s, commands);
            watch.thread.start();
            if (!watch.started.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
                watch.close();
                throw LabSupport.failure("MONITOR did not start within " + WAIT.toSeconds() + " s");
            }
            return watch;
        }

        private void listen() {
            try {
                jedis.monitor(new JedisMonitor() {
                    @Override
                    public void proceed(Connection connection) {
                        started.countDown(); // MONITOR answered OK: from here every command is seen
                        super.proceed(connection);
                    }

                    @Override
                    public void onCommand(String line) {
                        if (line.contains(marker)) {
                            sawMarker.countDown();
                        } else if (line.contains(LabSupport.KEY_PREFIX) && command.matcher(line).find()) {
                            synchronized (lines) {
                                lines.add(line);
                            }
                        }
                    }
                });
            } catch (JedisException closed) {
                // close() disconnected us: the normal way out of MONITOR
            }
        }

        /** Connections, copies of the batch, whether copies overlapped, the gap between copies 1 and 2. */
        record Seen(int connections, int attempts, boolean interleaved, long gapMs) {
        }

        /** Waits until MONITOR has passed an ECHO sent after the run, then reads what it saw. */
        Seen stop(Jedis control) throws InterruptedException {
            control.echo(marker);
            if (!sawMarker.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw LabSupport.failure("MONITOR did not show the end marker within " + WAIT.toSeconds() + " s");
            }
            List<String> seen;
            synchronized (lines) {
                seen = List.copyOf(lines);
            }
            Set<String> addresses = new HashSet<>();
            Map<String, Integer> times = new HashMap<>();
            List<long[]> copies = new ArrayList<>(); // per copy: first index, last index, first µs, last µs
            for (int i = 0; i < seen.size(); i++) {
                Matcher m = LINE.matcher(seen.get(i));
                if (!m.matches()) {
                    continue;
                }
                long micros = Long.parseLong(m.group(1)) * 1_000_000 + Long.parseLong(m.group(2));
                addresses.add(m.group(3));
                int copy = times.merge(m.group(5), 1, Integer::sum) - 1;
                if (copy == copies.size()) {
                    copies.add(new long[]{i, i, micros, micros});
                }
                long[] c = copies.get(copy);
                c[1] = i;
                c[3] = micros;
            }
            boolean interleaved = false;
            for (int k = 1; k < copies.size(); k++) {
                interleaved |= copies.get(k)[0] < copies.get(k - 1)[1];
            }
            long gap = copies.size() > 1 ? Math.round((copies.get(1)[2] - copies.get(0)[3]) / 1000.0) : 0;
            return new Seen(addresses.size(), copies.size(), interleaved, gap);
        }

        @Override
        public void close() {
            jedis.disconnect();
            try {
                thread.join(WAIT.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
