///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS org.redisson:redisson:4.7.0
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LabTiming.java
//SOURCES ../common/RedissonSupport.java
//SOURCES RedissonRuns.java

// Chapter 8: three traps of a Redisson 4.7.0 RBatch, each reproduced, measured, fixed and measured again.
// Jedis is the control connection: it counts keys, reads INFO commandstats, holds writes with CLIENT
// PAUSE WRITE (a stall of the server that ends by itself) and watches the server with MONITOR.
//
// 1. A timed-out batch is sent again. BatchOptions.responseTimeout starts once the batch is written;
//    when it fires with retries left (Config: retryAttempts 4), RedisExecutor cancels the attempt and,
//    after the retry delay, runs it again. INCR is in RedisCommands.NO_RETRY, but a batch's executor
//    (RedisCommonBatchExecutor) has no command of its own, so isResendAllowed only counts attempts.
//    What goes again: in IN_MEMORY, RedisCommonBatchExecutor#sendCommand leaves out the commands whose
//    future has succeeded (never WAIT/WAITAOF); the atomic modes send MULTI ... EXEC whole. After a
//    response timeout no future has succeeded, though: CommandDecoder decodes a batch's replies only
//    once all of them are in (skipBatchCommand must get past the last one first), and when the attempt
//    is already cancelled (CommandsData#isExecuted) it skips them unread. So IN_MEMORY resends all of
//    it as well (unless the timer fires while the replies are being decoded); its skip shows after a
//    reply error Redisson retries (a RedisRetryException, such as WAITAOF's in trap 2).
//    Two ways to time out, per execution mode: INCRs Redis ran, the counters' total, how many are 2:
//      big    N INCRs (N = size) under a 25 ms timeout, retryAttempts 1;
//      stall  1,000 INCRs under a 100 ms timeout, held 400 ms by the pause; the retry (first delay
//             0.5-1 s) comes after it and succeeds: a normal BatchResult whose replies are all 2.
//    REDIS_WRITE_ATOMIC is different: each command goes out inside MULTI as it is queued, under the
//    same timeout. One that times out ends the batch (RedisQueuedBatchExecutor#handleError reconnects),
//    the commands queued after it run on the new connection without MULTI, and execute() throws
//    "Batch already executed!". When all were queued in time, only EXEC is sent again, on the same
//    connection, and fails with "EXEC without MULTI" after the first EXEC ran.
//    Fixes, measured the same way: batches small enough for the timeout (with retryAttempts 0); no
//    retry (the exception then comes for a batch Redis ran); and an idempotent write (INCR guarded by
//    SET NX of an operation key, in one EVAL), the one that makes a lost reply harmless either way.
// 2. sync/syncAOF. BatchOptions.sync(slaves, timeout) appends WAIT, syncAOF(local, slaves, timeout)
//    WAITAOF, but only when slaves > 0 (CommandBatchService#execute tests getSyncSlaves() > 0), and
//    BatchResult#getSyncedSlaves is all that is left of the reply (WAITAOF's local count is dropped).
//    WAITAOF counts a replica only once it fsynced its own AOF (appendonly yes on the replica too).
//    Measured on the server given by host and port, then on `replicated` (a master with appendonly yes
//    and one replica, started by the harness).
// 3. The retry's connection. The cancelled attempt's connection goes back to the pool at once, late
//    replies still to come, at the head of the free list (ConnectionsHolder#releaseConnection:
//    addFirst), and the retry takes the head (pollConnection): on an idle client the same connection,
//    so Redis runs the copies one after the other. When another thread holds it at that moment, the
//    retry goes out on another connection. MONITOR shows, per run, on how many connections the batch's
//    commands arrived, how many copies ran, whether two copies interleaved and the gap between them.
//
//   jbang ch08-redisson [host] [port] [size] [repeat] [warmup] [replicated=host:port]
//                       (defaults: 127.0.0.1, the lab's port, 100000 3 1, no replicated server)
//
// repeat and warmup apply to the timed modes (the small batches; plain and sync(1) batches on the
// replicated master); every run that is meant to time out runs once, on a Redisson client of its own.
// CLIENT PAUSE WRITE holds every client's writes on that server for up to 1.6 s: use the lab's Redis.

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.redisson.Redisson;
import org.redisson.api.BatchOptions;
import org.redisson.api.BatchOptions.ExecutionMode;
import org.redisson.api.RBatch;
import org.redisson.api.RFuture;
import org.redisson.api.RScript;
import org.redisson.api.RScriptAsync;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.ConstantDelay;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.args.ClientPauseMode;

public class RedissonTraps extends RedissonRuns {

    static final String EXAMPLE = "ch08-redisson";

    /** Redisson 4.7.0's defaults (BaseConfig), reported beside what the example sets instead. */
    static final int DEFAULT_TIMEOUT_MS = 3_000;
    static final int DEFAULT_RETRY_ATTEMPTS = 4;
    static final String DEFAULT_RETRY_DELAY =
            "EqualJitterDelay(1000 ms, 2 s): 0.5-1 s before the first retry, 1-2 s before later ones";

    /** Trap 1, big: the timeout chapter 4 found short enough to fail batches of 100,000 every time. */
    static final long BIG_TIMEOUT_MS = 25;
    static final int BIG_RETRIES = 1; // one retry shows the copy; the default 4 only adds 3 more and 4-6 s
    /** The fix for big: batches that answer well within BIG_TIMEOUT_MS (chapter 4: 2,000 SETs take 2-3 ms). */
    static final int CHUNK = 2_000;

    /** Trap 1, stall, and trap 3: the batch, the pause that holds it, and a timeout shorter than the pause. */
    static final int STALL_INCRS = 1_000;
    static final long PAUSE_MS = 400;
    static final long STALL_TIMEOUT_MS = 100;
    /**
     * REDIS_WRITE_ATOMIC sends every command as it is queued, each under the batch's responseTimeout:
     * at 100 ms one of 1,000 queued INCRs timed out on a busy 2-core machine, which ends the batch
     * before EXEC. So its stall uses a longer timeout, and a pause longer than that.
     */
    static final long WRITE_ATOMIC_TIMEOUT_MS = 1_000;
    static final long WRITE_ATOMIC_PAUSE_MS = 1_600;

    /**
     * Trap 3, busy: threads reading through the same client, and a retry that is sent inside a longer
     * pause (timeout + delay < pause < timeout + delay + timeout, with room for a slow write), so that
     * both copies wait on the server at once. The outcome varies from run to run, hence the tries.
     */
    static final int LOAD_THREADS = 4;
    static final long BUSY_PAUSE_MS = 700;
    static final long BUSY_TIMEOUT_MS = 400;
    static final long BUSY_RETRY_DELAY_MS = 100;
    static final int BUSY_TRIES = 3;

    /** Trap 2: a small batch; WAIT/WAITAOF's timeout. */
    static final int SYNC_INCRS = 100;
    static final Duration SYNC_TIMEOUT = Duration.ofSeconds(3); // WAITAOF waits for the replica's own fsync (everysec)

    /** An INCR that runs once per operation id, however often it is sent: the idempotent write. */
    static final String ONCE_SCRIPT = "if redis.call('SET', KEYS[1], '1', 'NX', 'EX', 3600) then "
            + "return redis.call('INCR', KEYS[2]) end return tonumber(redis.call('GET', KEYS[2]))";

    public static void main(String[] args) {
        String[] extra = LabSupport.extra(args);
        LabSupport.run(EXAMPLE, LabSupport.usual(args), 100_000, 3, s -> run(s, extra));
    }

    /** The optional `replicated=host:port`, as Settings for that server, or null. */
    static LabSupport.Settings replicated(LabSupport.Settings s, String[] extra) {
        if (extra.length == 0) {
            return null;
        }
        Matcher m = Pattern.compile("replicated=(.+):(\\d{1,5})").matcher(extra.length == 1 ? extra[0].trim() : "");
        if (!m.matches() || Integer.parseInt(m.group(2)) < 1 || Integer.parseInt(m.group(2)) > 65_535) {
            throw new LabSupport.Stop(2, EXAMPLE + ": after the usual five arguments expected one argument"
                    + " replicated=host:port (a master with one replica and appendonly yes), not "
                    + String.join(" ", extra) + ".");
        }
        int port = Integer.parseInt(m.group(2));
        return new LabSupport.Settings(EXAMPLE, m.group(1), port, s.size(), s.repeat(), s.warmup());
    }

    static void run(LabSupport.Settings s, String[] extra) throws Exception {
        LabSupport.Settings rs = replicated(s, extra);
        int n = s.size();
        List<String> big = LabSupport.keys(n, "ch08", "redisson", "incr");
        List<String> stall = LabSupport.keys(Math.min(STALL_INCRS, n), "ch08", "redisson", "stall");
        List<String> ops = LabSupport.keys(stall.size(), "ch08", "redisson", "op");
        List<String> sync = LabSupport.keys(SYNC_INCRS, "ch08", "redisson", "sync");
        String loadKey = LabSupport.key("ch08", "redisson", "load");
        List<String> all = new ArrayList<>(big);
        all.addAll(stall);
        all.addAll(ops);
        all.addAll(sync);
        all.add(loadKey);

        LabSupport.Report report = new LabSupport.Report(s)
                .client("redisson", LabSupport.versionOf(Redisson.class, "org.redisson", "redisson", "4.7.0"))
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"))
                .withoutSpeedUps(); // the modes do different work; the facts compare them
        try (Jedis control = LabSupport.connect(s); Jedis replicatedControl = rs == null ? null : connect(rs)) {
            LabSupport.requireLabOnly(control, s);
            if (replicatedControl != null) {
                LabSupport.requireLabOnly(replicatedControl, rs); // checked before anything is written
            }
            try {
                report.header(n + " INCRs in one batch, " + stall.size() + " under a pause, " + SYNC_INCRS
                        + " with WAIT/WAITAOF" + (rs == null ? "" : ", replicated master " + rs.where()));
                report.fact("redisson_default_timeout_ms", DEFAULT_TIMEOUT_MS);
                report.fact("redisson_default_retry_attempts", DEFAULT_RETRY_ATTEMPTS);
                report.fact("redisson_default_retry_delay", DEFAULT_RETRY_DELAY);

                bigBatches(report, s, control, big);
                stalledBatches(report, s, control, stall, ops);
                busyClient(report, s, control, stall, loadKey);
                syncOptions(report, s, control, sync, "main");
                replicatedHalf(report, rs, replicatedControl, sync);
            } finally {
                LabSupport.cleanup(s, all);
            }
        }
        report.finish();
    }

    // ---------------------------------------------------------------- trap 1, big: a batch longer than its timeout

    static void bigBatches(LabSupport.Report report, LabSupport.Settings s, Jedis control, List<String> keys)
            throws Exception {
        report.fact("big_batch_incrs", keys.size());
        report.fact("big_response_timeout_ms", BIG_TIMEOUT_MS);
        report.fact("big_retry_attempts", BIG_RETRIES);
        for (ExecutionMode mode : List.of(ExecutionMode.IN_MEMORY, ExecutionMode.IN_MEMORY_ATOMIC,
                ExecutionMode.REDIS_WRITE_ATOMIC)) {
            String name = "big_" + mode.name().toLowerCase(Locale.ROOT);
            BatchOptions options = BatchOptions.defaults().executionMode(mode)
                    .responseTimeout(BIG_TIMEOUT_MS, TimeUnit.MILLISECONDS).retryAttempts(BIG_RETRIES);
            List<RFuture<Long>> futures = new ArrayList<>(keys.size());
            long[] views = new long[3];
            Run run = once(s, control, keys, 0, client -> {
                RBatch batch = client.createBatch(options);
                for (String key : keys) {
                    futures.add(batch.getAtomicLong(key).incrementAndGetAsync());
                }
                Outcome outcome = execute(batch);
                // What the application's futures say once Redis has stopped: counted before the
                // client shuts down, since shutting down could complete the pending ones.
                LabSupport.settledCalls(s, Map.of(), "incr", SETTLE);
                for (RFuture<Long> future : futures) {
                    CompletableFuture<Long> f = future.toCompletableFuture();
                    views[!f.isDone() ? 2 : f.isCompletedExceptionally() ? 1 : 0]++;
                }
                return outcome;
            });
            run.report(report, name);
            report.fact(name + "_futures_ok", views[0]);
            report.fact(name + "_futures_failed", views[1]);
            report.fact(name + "_futures_pending", views[2]);
        }

        // The fix for a batch that is simply too big: cut it. retryAttempts(0) as well, so that a chunk
        // that still times out (a stall of a busy machine) fails instead of running twice.
        report.fact("small_batches_size", CHUNK);
        int[] timeouts = {0};
        int[] sent = {0};
        Map<String, Long> before = LabSupport.commandCalls(s);
        int[] iterations = {0};
        Tally[] last = {null};
        RedissonSupport.withFreshClient(RedissonSupport.config(s), client -> {
            LabSupport.Samples samples = LabSupport.measure(s, () -> LabSupport.deleteKeys(control, keys), () -> {
                for (int from = 0; from < keys.size(); from += CHUNK) {
                    BatchOptions options = BatchOptions.defaults()
                            .responseTimeout(BIG_TIMEOUT_MS, TimeUnit.MILLISECONDS).retryAttempts(0);
                    List<String> chunk = keys.subList(from, Math.min(from + CHUNK, keys.size()));
                    sent[0]++;
                    if (!execute(incrBatch(client, options, chunk)).ok()) {
                        timeouts[0]++;
                    }
                }
            }, () -> {
                iterations[0]++;
                last[0] = Tally.of(control, keys);
            });
            report.add("small_batches", "redisson " + CHUNK + "-INCR batches", "INCRs", keys.size(), samples);
            return null;
        });
        long incrs = LabSupport.settledCalls(s, before, "incr", SETTLE);
        report.fact("small_batches_sent", sent[0]);
        report.fact("small_batches_timeouts", timeouts[0]);
        report.fact("small_batches_incr_calls_per_run", incrs / iterations[0]);
        report.fact("small_batches_counter_total", last[0].total());
        report.fact("small_batches_counters_twice", last[0].twice());
    }

    // ---------------------------------------------------------------- trap 1, stall: one timeout, then success

    static void stalledBatches(LabSupport.Report report, LabSupport.Settings s, Jedis control, List<String> keys,
                               List<String> ops) throws Exception {
        report.fact("stall_batch_incrs", keys.size());
        report.fact("stall_pause_ms", PAUSE_MS);
        report.fact("stall_response_timeout_ms", STALL_TIMEOUT_MS);
        for (ExecutionMode mode : List.of(ExecutionMode.IN_MEMORY, ExecutionMode.IN_MEMORY_ATOMIC)) {
            Run run = once(s, control, keys, PAUSE_MS, client -> stalledIncrs(client, control, mode, keys));
            run.report(report, "stall_" + mode.name().toLowerCase(Locale.ROOT));
        }

        // REDIS_WRITE_ATOMIC: the INCRs are queued inside MULTI before execute(); only EXEC is paused,
        // and only EXEC is sent again, on the same connection (RedisQueuedBatchExecutor keeps it).
        report.fact("stall_redis_write_atomic_response_timeout_ms", WRITE_ATOMIC_TIMEOUT_MS);
        report.fact("stall_redis_write_atomic_pause_ms", WRITE_ATOMIC_PAUSE_MS);
        Run queued = once(s, control, keys, WRITE_ATOMIC_PAUSE_MS, client -> {
            BatchOptions options = BatchOptions.defaults().executionMode(ExecutionMode.REDIS_WRITE_ATOMIC)
                    .responseTimeout(WRITE_ATOMIC_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            RBatch batch = incrBatch(client, options, keys);
            boolean allQueued = awaitQueued(control, keys.size());
            report.fact("stall_redis_write_atomic_all_queued_before_pause", allQueued);
            control.clientPause(WRITE_ATOMIC_PAUSE_MS, ClientPauseMode.WRITE);
            return execute(batch);
        });
        queued.report(report, "stall_redis_write_atomic");

        // Fix 1: no retry. One attempt, one copy, and an exception for a batch Redis did run.
        Run noRetry = once(s, control, keys, PAUSE_MS, client -> noRetry(client, control, keys));
        noRetry.report(report, "fix_no_retry");

        // Fix 2: the same stall and the same default retries, with a write that a replay cannot repeat.
        LabSupport.deleteKeys(control, ops);
        Run once = once(s, control, keys, SCRIPT_CALLS, PAUSE_MS, client -> idempotent(client, control, keys, ops));
        once.report(report, "fix_idempotent");
        // INCRs run inside the script count as incr in commandstats; the scripts themselves as evalsha
        // (Config#useScriptCache is on by default, so a batch's EVAL goes out as EVALSHA) or eval.
        report.fact("fix_idempotent_evalsha_calls", once.calls().getOrDefault("evalsha", 0L));
        report.fact("fix_idempotent_eval_calls", once.calls().getOrDefault("eval", 0L));
    }

    // --8<-- [start:retry-trap]
    /**
     * The trap: default retries (4) and a responseTimeout shorter than a stall of the server. The
     * first attempt times out while CLIENT PAUSE holds it; Redisson sends the whole batch again after
     * the retry delay, Redis runs both copies, and execute() returns the second copy's replies (2, not
     * 1) as an ordinary success.
     */
    static Outcome stalledIncrs(RedissonClient client, Jedis control, ExecutionMode mode, List<String> keys) {
        BatchOptions options = BatchOptions.defaults().executionMode(mode)
                .responseTimeout(STALL_TIMEOUT_MS, TimeUnit.MILLISECONDS); // retryAttempts: Config's 4
        RBatch batch = incrBatch(client, options, keys);
        control.clientPause(PAUSE_MS, ClientPauseMode.WRITE); // the stall: writes wait, reads go on
        return execute(batch);
    }

    /** One RAtomicLong#incrementAndGetAsync (INCR) per key, queued on a new batch. */
    static RBatch incrBatch(RedissonClient client, BatchOptions options, List<String> keys) {
        RBatch batch = client.createBatch(options);
        for (String key : keys) {
            batch.getAtomicLong(key).incrementAndGetAsync();
        }
        return batch;
    }
    // --8<-- [end:retry-trap]

    // --8<-- [start:retry-fix]
    /** Fix 1: retryAttempts(0). Exactly one copy runs, and execute() throws although it ran. */
    static Outcome noRetry(RedissonClient client, Jedis control, List<String> keys) {
        BatchOptions options = BatchOptions.defaults()
                .responseTimeout(STALL_TIMEOUT_MS, TimeUnit.MILLISECONDS).retryAttempts(0);
        RBatch batch = incrBatch(client, options, keys);
        control.clientPause(PAUSE_MS, ClientPauseMode.WRITE);
        return execute(batch);
    }

    /**
     * Fix 2: make the write idempotent and keep the retries. Each INCR carries an operation id; the
     * script sets the id's key with NX first and increments only if that succeeded, so a second copy
     * of the batch finds every id taken and changes nothing.
     */
    static Outcome idempotent(RedissonClient client, Jedis control, List<String> keys, List<String> opIds) {
        RBatch batch = client.createBatch(BatchOptions.defaults()
                .responseTimeout(STALL_TIMEOUT_MS, TimeUnit.MILLISECONDS));
        RScriptAsync script = batch.getScript(StringCodec.INSTANCE);
        for (int i = 0; i < keys.size(); i++) {
            script.evalAsync(RScript.Mode.READ_WRITE, ONCE_SCRIPT, RScript.ReturnType.LONG,
                    List.of(opIds.get(i), keys.get(i)));
        }
        control.clientPause(PAUSE_MS, ClientPauseMode.WRITE);
        return execute(batch);
    }
    // --8<-- [end:retry-fix]

    // ---------------------------------------------------------------- trap 3: the retry's connection

    static void busyClient(LabSupport.Report report, LabSupport.Settings s, Jedis control, List<String> keys,
                           String loadKey) throws Exception {
        report.fact("busy_load_threads", LOAD_THREADS);
        report.fact("busy_pause_ms", BUSY_PAUSE_MS);
        report.fact("busy_response_timeout_ms", BUSY_TIMEOUT_MS);
        report.fact("busy_retry_delay_ms", BUSY_RETRY_DELAY_MS);
        report.fact("busy_tries", BUSY_TRIES);
        int ok = 0;
        int duplicated = 0;
        int twoConnections = 0;
        int interleaved = 0;
        long maxGap = Long.MIN_VALUE;
        for (int i = 0; i < BUSY_TRIES; i++) {
            Run run = once(s, control, keys, BUSY_PAUSE_MS,
                    client -> underLoad(client, loadKey, c -> retryUnderLoad(c, control, keys)));
            ok += run.outcome().ok() ? 1 : 0;
            duplicated += run.incrs() > keys.size() ? 1 : 0;
            twoConnections += run.seen().connections() > 1 ? 1 : 0;
            interleaved += run.seen().interleaved() ? 1 : 0;
            if (run.seen().attempts() > 1) {
                maxGap = Math.max(maxGap, run.seen().gapMs());
            }
        }
        report.fact("busy_ok_tries", ok);
        report.fact("busy_duplicated_tries", duplicated);
        report.fact("busy_two_connection_tries", twoConnections);
        report.fact("busy_interleaved_tries", interleaved);
        if (maxGap != Long.MIN_VALUE) {
            report.fact("busy_max_retry_gap_ms", maxGap);
        }
        // The fix, under the same load.
        Run fixed = once(s, control, keys, BUSY_PAUSE_MS,
                client -> underLoad(client, loadKey, c -> noRetryUnderLoad(c, control, keys)));
        fixed.report(report, "busy_no_retry");
    }

    // --8<-- [start:connection-trap]
    /**
     * The trap: the same stall while other threads use the client, with a retry delay shorter than the
     * pause, so that the retry is sent while the first copy still waits on the server. Whether it goes
     * out on the first copy's connection depends on what the other threads hold at that moment.
     */
    static Outcome retryUnderLoad(RedissonClient client, Jedis control, List<String> keys) {
        BatchOptions options = BatchOptions.defaults().retryAttempts(1)
                .responseTimeout(BUSY_TIMEOUT_MS, TimeUnit.MILLISECONDS)
                .retryDelay(new ConstantDelay(Duration.ofMillis(BUSY_RETRY_DELAY_MS)));
        RBatch batch = incrBatch(client, options, keys);
        control.clientPause(BUSY_PAUSE_MS, ClientPauseMode.WRITE);
        return execute(batch);
    }
    // --8<-- [end:connection-trap]

    // --8<-- [start:connection-fix]
    /** The fix: retryAttempts(0). One attempt, so one copy on one connection; the timeout is the caller's. */
    static Outcome noRetryUnderLoad(RedissonClient client, Jedis control, List<String> keys) {
        BatchOptions options = BatchOptions.defaults().retryAttempts(0)
                .responseTimeout(BUSY_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        RBatch batch = incrBatch(client, options, keys);
        control.clientPause(BUSY_PAUSE_MS, ClientPauseMode.WRITE);
        return execute(batch);
    }
    // --8<-- [end:connection-fix]

    /** Runs `task` while LOAD_THREADS threads keep reading through the same client. */
    static Outcome underLoad(RedissonClient client, String loadKey, BatchRun task) throws Exception {
        AtomicBoolean running = new AtomicBoolean(true);
        ExecutorService load = Executors.newFixedThreadPool(LOAD_THREADS);
        try {
            for (int t = 0; t < LOAD_THREADS; t++) {
                load.submit(() -> {
                    while (running.get()) {
                        client.getBucket(loadKey).get(); // a GET: not held by CLIENT PAUSE WRITE
                    }
                    return null;
                });
            }
            return task.run(client);
        } finally {
            running.set(false);
            load.shutdown();
            load.awaitTermination(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    // ---------------------------------------------------------------- trap 2: WAIT and WAITAOF

    static void syncOptions(LabSupport.Report report, LabSupport.Settings s, Jedis control, List<String> keys,
                            String where) throws Exception {
        Map<String, Long> replication = LabSupport.infoNumbers(control, "replication");
        Map<String, Long> persistence = LabSupport.infoNumbers(control, "persistence");
        report.fact(where + "_connected_replicas", replication.getOrDefault("connected_slaves", 0L));
        report.fact(where + "_aof_enabled", persistence.getOrDefault("aof_enabled", 0L) == 1);
        if (where.equals("main")) {
            report.fact("sync_batch_incrs", keys.size());
            report.fact("sync_timeout_ms", SYNC_TIMEOUT.toMillis());
        }
        RedissonSupport.withFreshClient(RedissonSupport.config(s), client -> {
            for (Map.Entry<String, BatchOptions> choice : syncChoices().entrySet()) {
                String name = choice.getKey() + "_" + where;
                Run run = onceWith(s, control, keys, null, 0, () -> syncedIncrs(client, keys, choice.getValue()));
                run.report(report, name);
                report.fact(name + "_synced_slaves", run.outcome().syncedSlaves());
                report.fact(name + "_wait_calls", run.calls().getOrDefault("wait", 0L));
                report.fact(name + "_waitaof_calls", run.calls().getOrDefault("waitaof", 0L));
                report.fact(name + "_checked", checked(run.outcome(), choice.getValue()));
            }
            return null;
        });
    }

    // --8<-- [start:sync-trap]
    /**
     * The trap. sync(1, t) appends WAIT 1 t and adds t to the response timeout. Without a replica
     * WAIT answers 0 after the whole of t and execute() returns normally: the shortfall is
     * only in BatchResult#getSyncedSlaves. WAITAOF 1 1 t fails where appendonly is off (with a
     * RedisWaitException, which Redisson retries: IN_MEMORY sends WAITAOF alone 4 more times), and
     * syncAOF(1, 0, t) sends no WAITAOF at all: CommandBatchService#execute adds WAIT or WAITAOF
     * only when slaves > 0.
     */
    static Map<String, BatchOptions> syncChoices() {
        Map<String, BatchOptions> choices = new LinkedHashMap<>();
        choices.put("sync1", BatchOptions.defaults().sync(1, SYNC_TIMEOUT));
        choices.put("syncaof_1_1", BatchOptions.defaults().syncAOF(1, 1, SYNC_TIMEOUT));
        choices.put("syncaof_1_0", BatchOptions.defaults().syncAOF(1, 0, SYNC_TIMEOUT));
        return choices;
    }

    /** N INCRs in one batch with the given options; the caller must look at getSyncedSlaves() itself. */
    static Outcome syncedIncrs(RedissonClient client, List<String> keys, BatchOptions options) {
        return execute(incrBatch(client, options, keys));
    }
    // --8<-- [end:sync-trap]

    // --8<-- [start:sync-fix]
    /**
     * The fix: compare what came back with what was asked for, and treat a shortfall as a failure
     * (the batch's writes are applied either way). A syncAOF with 0 replicas cannot be checked: no
     * WAITAOF went out, and the local count of one that did is not in the BatchResult.
     */
    static String checked(Outcome outcome, BatchOptions asked) {
        if (asked.isSyncAOF() && asked.getSyncSlaves() == 0) {
            return "not confirmed: syncAOF with 0 replicas sent no WAITAOF";
        }
        if (outcome.result() == null) {
            return "batch failed: " + outcome.text();
        }
        int synced = outcome.result().getSyncedSlaves();
        int wanted = asked.getSyncSlaves();
        return (synced >= wanted ? "ok: " : "not durable: ") + synced + " of " + wanted + " replicas acknowledged";
    }
    // --8<-- [end:sync-fix]

    static void replicatedHalf(LabSupport.Report report, LabSupport.Settings rs, Jedis control, List<String> keys)
            throws Exception {
        if (rs == null) {
            report.fact("replicated_skipped", "no replicated=host:port argument, so no server with a replica");
            return;
        }
        if (LabSupport.infoNumbers(control, "replication").getOrDefault("connected_slaves", 0L) < 1) {
            report.fact("replicated_skipped", rs.where() + " has no connected replica");
            return;
        }
        report.fact("replicated", rs.where());
        report.fact("replicated_replica_aof_enabled", replicaAof(control));
        try {
            syncOptions(report, rs, control, keys, "replicated");

            // What WAIT costs a batch when a replica is there to answer: plain against sync(1, t).
            RedissonSupport.withFreshClient(RedissonSupport.config(rs), client -> {
                LabSupport.Step reset = () -> LabSupport.deleteKeys(control, keys);
                LabSupport.Samples plain = LabSupport.measure(rs, reset,
                        () -> requireOk(syncedIncrs(client, keys, BatchOptions.defaults())), null);
                LabSupport.Samples waited = LabSupport.measure(rs, reset,
                        () -> requireOk(syncedIncrs(client, keys, BatchOptions.defaults().sync(1, SYNC_TIMEOUT))), null);
                report.add("replicated_no_sync", "replicated, no sync", "INCRs", keys.size(), plain);
                report.add("replicated_sync1", "replicated, sync(1)", "INCRs", keys.size(), waited);
                report.fact("replicated_wait_ms_per_batch", LabSupport.round2(1000 * (median(waited) - median(plain))));
                return null;
            });
        } finally {
            LabSupport.cleanup(rs, keys); // a fresh connection: this one may be what failed
        }
    }
}
