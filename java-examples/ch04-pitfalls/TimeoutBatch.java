///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS org.redisson:redisson:4.7.0
//DEPS redis.clients:jedis:8.0.2
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LabTiming.java
//SOURCES ../common/RedissonSupport.java
//SOURCES ../common/LettuceSupport.java

// Chapter 4: a huge batch and a client timeout shorter than the time its replies take. N SETs
// to N distinct keys (pipelab:ch04:java:timeout:<i> = "v"), through three clients whose
// timeouts mean three different things:
//   Redisson  BatchOptions.responseTimeout is one clock for the whole batch, but it starts
//             only once the batch is completely written to the socket (RedisExecutor#
//             checkWriteFuture calls scheduleResponseTimeout), and runs until the last reply.
//             A big batch is written while Redis already works through it, so the clock
//             covers just the tail: the bytes still in the socket buffers and the replies
//             not yet decoded. For 200,000 SETs (about 10 MB) that tail is of the order of
//             100 ms of a batch of 300-500 ms on loopback, which is why the short timeout is
//             SHORT_TIMEOUT_MS and not "a quarter of the batch": a quarter does not fire.
//             The example times one batch with a generous timeout, then the same work cut
//             into batches of 2,000 under the short timeout, then runs the one batch once
//             with the short timeout and retryAttempts(0) and once with the short timeout
//             and Redisson's default retries;
//   Jedis     the socket timeout (soTimeout, here 50 ms) bounds each blocking read of the
//             socket, not the pipeline: a read that gets bytes in time is a success;
//   Lettuce   the command timeout (RedisURI timeout; TimeoutOptions are on by default in
//             Lettuce 7) is a timer per command, started when the command is issued.
// After every run that ends in a timeout the example waits until Redis stops executing SETs,
// then counts the keys that exist and the SETs Redis executed (INFO commandstats): a client
// timeout cancels nothing on the server.
//
//   jbang ch04-timeout [host] [port] [size] [repeat] [warmup]     (defaults: 127.0.0.1, the lab's port, 200000 3 1)
//
// repeat and warmup apply to the timed modes (the generous batch, the batches of 2,000, the
// Jedis pipeline); every run that is meant to time out runs once. Use size >= 100000: a
// smaller batch may well come back within the short timeout (see SHORT_TIMEOUT_MS).

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.redisson.Redisson;
import org.redisson.api.BatchOptions;
import org.redisson.api.RBatch;
import org.redisson.api.RedissonClient;
import org.redisson.client.RedisTimeoutException;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.exceptions.JedisConnectionException;

import pipelab.LettuceSupport;

public class TimeoutBatch {

    static final String VALUE = "v";
    /**
     * The batch size that fits: 2,000 SETs take 2-3 ms on loopback, a tenth of the short
     * timeout. (Batches of 10,000 take 13-18 ms and about one in a hundred exceeded 25 ms
     * on a busy two-core machine: with 20 of them per run, too many runs would fail.)
     */
    static final int CHUNK = 2_000;
    /** The timeout that is never reached: the baseline batch is timed under it. */
    static final long GENEROUS_MS = 60_000;
    /**
     * Redisson's and Lettuce's short timeout. Measured on loopback with Redis 6.2: batches of
     * 100,000 and 200,000 SETs failed with it every time, 50,000 two times in three; batches of
     * 2,000 and 5,000 never did (100 tries each), 10,000 once in 100.
     */
    static final long SHORT_TIMEOUT_MS = 25;
    /** Jedis's socket timeout for its part: far below the pipeline's duration. */
    static final int JEDIS_SO_TIMEOUT_MS = 50;
    /** Upper bound for waiting until Redis has executed all it was sent. */
    static final Duration SETTLE = Duration.ofSeconds(30);

    public static void main(String[] args) {
        LabSupport.run("ch04-timeout", args, 200_000, 3, TimeoutBatch::bench);
    }

    static void bench(LabSupport.Settings s) throws Exception {
        List<String> keys = LabSupport.keys(s.size(), "ch04", "java", "timeout");
        int n = keys.size();
        LabSupport.Report report = new LabSupport.Report(s)
                .client("redisson", LabSupport.versionOf(Redisson.class, "org.redisson", "redisson", "4.7.0"))
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"))
                // The manifest says e.g. "7.7.0.RELEASE/1960d49": keep the version, drop the commit.
                .client("lettuce", LabSupport.versionOf(RedisClient.class, "io.lettuce", "lettuce-core",
                        "7.7.0.RELEASE").split("/")[0]);

        try (Jedis control = LabSupport.connect(s)) {
            // Before anything is written: the database must hold nothing but lab keys.
            LabSupport.requireLabOnly(control, s);
            RedissonClient redisson = null;
            RedisClient lettuce = null;
            try {
                // Client start-up happens here, never in a timed region.
                redisson = Redisson.create(RedissonSupport.config(s));
                RedissonClient rc = redisson;
                report.header(n + " SETs to distinct keys per run");

                LabSupport.Step reset = () -> LabSupport.deleteKeys(control, keys);
                LabSupport.Step verify = () -> requireAll(control, keys);

                // 1. How long the batch takes when the timeout is out of the way.
                List<Double> baseline = LabSupport.measure(s, reset, () -> redissonBatch(rc, keys, GENEROUS_MS, 0), verify);
                report.add("redisson_one_batch", "redisson 1 batch", "SETs", baseline);
                long timeoutMs = SHORT_TIMEOUT_MS;
                report.fact("redisson_response_timeout_ms", timeoutMs);

                // 2. The same work in batches of 2,000 under the short timeout: each one fits, with
                // a tenth of the time to spare. Retries stay on (-1: Config's): SET is idempotent, so
                // a batch re-sent after a stall of the JVM does no harm. A batch still late after its
                // retries (a slow machine) is counted, then sent with the long timeout.
                int batches = (n + CHUNK - 1) / CHUNK;
                int[] sent = {0};
                int[] late = {0};
                report.fact("redisson_small_batch_size", CHUNK);
                report.fact("redisson_small_batches", batches);
                report.add("redisson_small_batches", "redisson " + batches + " batches", "SETs",
                        LabSupport.measure(s, reset, () -> {
                            for (int from = 0; from < n; from += CHUNK) {
                                List<String> chunk = keys.subList(from, Math.min(from + CHUNK, n));
                                sent[0]++;
                                try {
                                    redissonBatch(rc, chunk, timeoutMs, -1);
                                } catch (RedisTimeoutException e) {
                                    late[0]++;
                                    redissonBatch(rc, chunk, GENEROUS_MS, 0);
                                }
                            }
                        }, verify));
                report.fact("redisson_small_batches_sent", sent[0]);
                report.fact("redisson_small_batches_late", late[0]);

                // 3. The one batch with the short timeout, no retries: the exception, and what
                // the server did anyway. Each run that times out gets a client of its own (see
                // freshRedisson), so the connections it leaves behind serve nothing else.
                once(report, s, control, keys, "redisson_timeout_no_retry",
                        () -> freshRedisson(s, client -> redissonBatch(client, keys, timeoutMs, 0)));

                // 4. Again, with Redisson's default retries (Config: retryAttempts 4, EqualJitterDelay:
                // 0.5-1 s before the first retry, 1-2 s later): after each response timeout
                // RedisExecutor sends the whole batch again.
                once(report, s, control, keys, "redisson_timeout_default_retry",
                        () -> freshRedisson(s, client -> redissonBatch(client, keys, timeoutMs, -1)));

                // 5. Jedis: one pipeline of N SETs with a 50 ms socket timeout.
                jedisPipeline(report, s, control, keys, reset, verify);

                // 6. Lettuce with the short timeout as its command timeout.
                // Connected with the default timeout: RedisURI's timeout also bounds the
                // connection's handshake, and 25 ms is too short for that on a busy machine.
                // setTimeout then sets the command timeout (CommandExpiryWriter#setTimeout).
                lettuce = LettuceSupport.client(LettuceSupport.uri(s.host(), s.port()).build());
                StatefulRedisConnection<String, String> connection = lettuce.connect();
                connection.setTimeout(Duration.ofMillis(timeoutMs));
                report.fact("lettuce_timeout_ms", timeoutMs);
                long[] outcome = new long[2];
                once(report, s, control, keys, "lettuce_one_flush", () -> lettucePipeline(connection, keys, false, outcome));
                report.fact("lettuce_one_flush_futures_ok", outcome[0]);
                report.fact("lettuce_one_flush_futures_timed_out", outcome[1]);
                once(report, s, control, keys, "lettuce_auto_flush", () -> lettucePipeline(connection, keys, true, outcome));
                report.fact("lettuce_auto_flush_futures_ok", outcome[0]);
                report.fact("lettuce_auto_flush_futures_timed_out", outcome[1]);
            } finally {
                // Delete exactly our keys, stop Redisson's and Lettuce's threads, whatever happened.
                RedisClient lc = lettuce;
                try {
                    LabSupport.cleanup(s, keys, redisson, RedissonClient::shutdown);
                } finally {
                    if (lc != null) {
                        lc.shutdown(Duration.ZERO, Duration.ofSeconds(2));
                    }
                }
            }
        }
        report.finish();
    }

    // ---------------------------------------------------------------- clients

    interface RedissonTask {
        void run(RedissonClient client) throws Exception;
    }

    /**
     * Runs `task` on a Redisson client of its own, shut down afterwards (after the task's
     * exception, too). The replies of a timed-out batch still arrive on its connection, and
     * Redisson 4.7.0 trips over them: CommandDecoder#decodeCommandBatch collects the failed
     * commands' causes with error.addSuppressed(cause), and every command of the batch carries
     * the same RedisResponseTimeoutException, so it throws "Self-suppression not permitted"
     * (logged as ERROR by ErrorsLoggingHandler). A connection in that state is no place for
     * the next measurement.
     */
    static void freshRedisson(LabSupport.Settings s, RedissonTask task) throws Exception {
        RedissonClient client = Redisson.create(RedissonSupport.config(s));
        try {
            task.run(client);
        } finally {
            client.shutdown();
        }
    }

    // --8<-- [start:clients]
    /**
     * One RBatch of SETs. responseTimeout replaces Config#setTimeout (3 s) for this batch;
     * RedisExecutor#scheduleResponseTimeout starts the clock once the batch is written and
     * completes it with RedisResponseTimeoutException when no complete reply has come in
     * time. retryAttempts -1 leaves Config's retryAttempts (4) in force.
     */
    static void redissonBatch(RedissonClient redisson, List<String> keys, long timeoutMs, int retryAttempts) {
        BatchOptions options = BatchOptions.defaults().responseTimeout(timeoutMs, TimeUnit.MILLISECONDS);
        if (retryAttempts >= 0) {
            options.retryAttempts(retryAttempts);
        }
        RBatch batch = redisson.createBatch(options);
        for (String key : keys) {
            batch.getBucket(key).setAsync(VALUE);
        }
        batch.execute();
    }

    /**
     * Jedis's timeout is the socket's SO_TIMEOUT: each read() may block that long for the next
     * bytes. sync() flushes the SETs and reads the replies; as long as Redis keeps sending
     * them, no single read waits 50 ms, however long the whole pipeline takes.
     */
    static void jedisPipeline(LabSupport.Report report, LabSupport.Settings s, Jedis control, List<String> keys,
                              LabSupport.Step reset, LabSupport.Step verify) throws Exception {
        report.fact("jedis_so_timeout_ms", JEDIS_SO_TIMEOUT_MS);
        // autoNegotiateProtocol(false): RESP2 without HELLO, as new Jedis(host, port) does
        // (and no warning that a Jedis cannot negotiate RESP3).
        JedisClientConfig config = LabSupport.jedisConfig(s, DefaultJedisClientConfig.builder()
                .socketTimeoutMillis(JEDIS_SO_TIMEOUT_MS).autoNegotiateProtocol(false));
        String[] phase = {"connect"};
        try (Jedis jedis = new Jedis(new HostAndPort(s.host(), s.port()), config)) {
            List<Double> samples = LabSupport.measure(s, reset, () -> {
                Pipeline pipeline = jedis.pipelined();
                phase[0] = "queueing";
                for (String key : keys) {
                    pipeline.set(key, VALUE);
                }
                phase[0] = "sync";
                pipeline.sync();
            }, verify);
            report.add("jedis_pipeline_so_timeout", "jedis pipeline", "SETs", samples);
            report.fact("jedis_pipeline_outcome", "ok");
        } catch (JedisConnectionException e) {
            // Reported rather than thrown, since LabSupport.run would call it "Redis unreachable".
            // A read can time out only if Redis sends nothing for 50 ms: a stall of the
            // server (or of a busy machine), not the length of the pipeline.
            report.fact("jedis_pipeline_outcome", describe(e) + " (in " + phase[0] + ")");
        }
    }

    /**
     * N SETs through Lettuce's async API, with auto-flush (every command written at once) or
     * with one flushCommands() after the last. Each command's timer (CommandExpiryWriter)
     * starts when it is issued; a command that expires before it is written is skipped by
     * CommandHandler (isWriteable: not done yet), one that was written runs on the server
     * whatever its future says. outcome gets {futures ok, futures timed out}.
     */
    static void lettucePipeline(StatefulRedisConnection<String, String> connection, List<String> keys,
                                boolean autoFlush, long[] outcome) throws Exception {
        RedisAsyncCommands<String, String> async = connection.async();
        List<RedisFuture<String>> futures = new ArrayList<>(keys.size());
        connection.setAutoFlushCommands(autoFlush);
        try {
            for (String key : keys) {
                futures.add(async.set(key, VALUE));
            }
            connection.flushCommands();
        } finally {
            connection.setAutoFlushCommands(true);
        }
        long ok = 0;
        long timedOut = 0;
        Throwable first = null;
        for (RedisFuture<String> future : futures) {
            try {
                future.get(SETTLE.toMillis(), TimeUnit.MILLISECONDS); // each future ends by its own timeout
                ok++;
            } catch (ExecutionException e) {
                timedOut++;
                first = first == null ? e.getCause() : first;
            } catch (TimeoutException e) {
                throw LabSupport.failure("a Lettuce future neither completed nor timed out within " + SETTLE.toSeconds() + " s");
            }
        }
        outcome[0] = ok;
        outcome[1] = timedOut;
        if (first != null) {
            throw first instanceof Exception e ? e : new RuntimeException(first);
        }
    }
    // --8<-- [end:clients]

    // ---------------------------------------------------------------- runs that may time out

    /**
     * Runs `task` once on empty keys and records as facts <name>_outcome ("ok" or the
     * exception), <name>_elapsed_ms, <name>_applied_at_return (keys that existed when the
     * call returned or threw), and, once Redis has stopped executing SETs,
     * <name>_applied (keys that exist) and <name>_set_calls (SETs Redis executed in all).
     */
    static void once(LabSupport.Report report, LabSupport.Settings s, Jedis control, List<String> keys, String name,
                     LabSupport.Step task) throws Exception {
        LabSupport.deleteKeys(control, keys);
        Map<String, Long> before = LabSupport.commandCalls(s);
        String outcome = "ok";
        long start = System.nanoTime();
        try {
            task.run();
        } catch (LabSupport.Stop stop) {
            throw stop;
        } catch (Exception e) {
            outcome = describe(e);
        }
        long elapsed = (System.nanoTime() - start) / 1_000_000;
        long atReturn = LabSupport.countExisting(control, keys);
        // Redis has run everything it was sent once its count stops moving: a retry is sent before its
        // exception, and the timed-out commands are gone.
        long setCalls = LabSupport.settledCalls(s, before, "set", SETTLE);
        report.fact(name + "_outcome", outcome);
        report.fact(name + "_elapsed_ms", elapsed);
        report.fact(name + "_applied_at_return", atReturn);
        report.fact(name + "_applied", LabSupport.countExisting(control, keys));
        report.fact(name + "_set_calls", setCalls);
    }

    // ---------------------------------------------------------------- helpers

    static void requireAll(Jedis control, List<String> keys) {
        long existing = LabSupport.countExisting(control, keys);
        if (existing != keys.size()) {
            throw LabSupport.failure("only " + existing + " of " + keys.size() + " keys exist after the run");
        }
    }

    /** "RedisResponseTimeoutException: Redis server response timeout (52 ms) occurred after 0 of 0 retry attempts". */
    static String describe(Throwable e) {
        String message = e.getMessage() == null ? "" : e.getMessage().strip().replaceAll("\\s+", " ");
        int comma = message.indexOf(',');
        if (comma > 0) {
            message = message.substring(0, comma); // Redisson appends node, channel and Netty details
        }
        if (message.length() > 160) {
            message = message.substring(0, 157) + "...";
        }
        return e.getClass().getSimpleName() + (message.isEmpty() ? "" : ": " + message);
    }
}
