// Hangs, part 1: Lettuce with auto-flush off, never flushed; run by Hangs.run, whose helpers it reaches by name.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;

import redis.clients.jedis.Jedis;

import pipelab.LettuceSupport;

final class LettuceHang extends Hangs {

    /** A command timeout short enough to wait out here; Lettuce's default is RedisURI.DEFAULT_TIMEOUT (60 s). */
    static final Duration SHORT_TIMEOUT = Duration.ofSeconds(1);
    /** The fix: a flush after every this many commands (chapter 3's batch). */
    static final int FLUSH_EVERY = 1_000;
    static final List<String> CASES = List.of("unflushed_default", "unflushed_timeout", "flush_per_batch");

    /** The fixes are not hangs: they get this long, and the example reports them hung only beyond it. */
    static final Duration FIX_WAIT = Duration.ofSeconds(30);

    /** How long a case's futures are awaited: the bound, counted from the timeout where that is shorter, FIX_WAIT for a fix. */
    static Duration waitFor(String name, Duration timeout, Duration bound) {
        if (name.startsWith("flush")) {
            return FIX_WAIT;
        }
        return timeout.compareTo(bound) < 0 ? bound.plus(timeout) : bound;
    }

    static List<String> keys() {
        return CASES.stream().map(LettuceHang::key).toList();
    }

    static String key(String name) {
        return LabSupport.key("ch08", "hangs", "lettuce", name);
    }

    static void run(LabSupport.Report report, LabSupport.Settings s, Jedis control, Duration bound) throws Exception {
        int n = s.size();
        report.fact("lettuce_commands", n);
        report.fact("lettuce_default_timeout_s", RedisURI.DEFAULT_TIMEOUT_DURATION.toSeconds());
        report.fact("lettuce_short_timeout_s", SHORT_TIMEOUT.toSeconds());
        report.fact("lettuce_flush_every", FLUSH_EVERY);
        for (String name : CASES) {
            Duration timeout = name.equals("unflushed_timeout") ? SHORT_TIMEOUT : RedisURI.DEFAULT_TIMEOUT_DURATION;
            RedisClient client = LettuceSupport.client(LettuceSupport.uri(s.host(), s.port()).withTimeout(timeout).build());
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                List<CompletableFuture<Long>> futures = new ArrayList<>(n);
                long start = System.nanoTime();
                switch (name) {
                    case "unflushed_default", "unflushed_timeout" -> neverFlushed(connection, key(name), n, futures);
                    default -> flushedPerBatch(connection, key(name), n, futures);
                }
                long issued = msSince(start);
                long waitStart = System.nanoTime();
                long doneMs = awaitAll(futures, waitStart, waitFor(name, timeout, bound));
                Tally.of(futures).report(report, "lettuce_" + name);
                report.fact("lettuce_" + name + "_issue_ms", issued);
                // -1: not all done within the bound; the wait is then the bound itself
                report.fact("lettuce_" + name + "_hung", doneMs < 0);
                report.fact("lettuce_" + name + "_wait_ms", doneMs < 0 ? msSince(waitStart) : doneMs);
                report.fact("lettuce_" + name + "_error", firstFailure(futures));
                report.fact("lettuce_" + name + "_timeout_s", timeout.toSeconds());
                report.fact("lettuce_" + name + "_applied", counter(control, key(name)));
                connection.setAutoFlushCommands(true);
            } finally {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }

    // --8<-- [start:lettuce_hang]
    /** The trap: N async INCRs with auto-flush off, and nothing flushes them; they wait in the endpoint's buffer. */
    static void neverFlushed(StatefulRedisConnection<String, String> connection, String key, int n,
                             List<CompletableFuture<Long>> futures) {
        connection.setAutoFlushCommands(false);
        RedisAsyncCommands<String, String> async = connection.async();
        for (int i = 0; i < n; i++) {
            futures.add(async.incr(key).toCompletableFuture());
        }
        // missing: connection.flushCommands()
    }
    // --8<-- [end:lettuce_hang]

    // --8<-- [start:lettuce_fix]
    /** The fix: a flush every FLUSH_EVERY commands, and one for the remainder. */
    static void flushedPerBatch(StatefulRedisConnection<String, String> connection, String key, int n,
                                List<CompletableFuture<Long>> futures) {
        connection.setAutoFlushCommands(false);
        RedisAsyncCommands<String, String> async = connection.async();
        for (int i = 0; i < n; i++) {
            futures.add(async.incr(key).toCompletableFuture());
            if ((i + 1) % FLUSH_EVERY == 0) {
                connection.flushCommands();
            }
        }
        connection.flushCommands();
    }
    // --8<-- [end:lettuce_fix]
}
