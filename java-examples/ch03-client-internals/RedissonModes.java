///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS org.redisson:redisson:4.7.0
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/SaddWorkload.java
//SOURCES ../common/RedissonSupport.java

// Chapter 3: the same N writes (one SADD to each of N distinct keys) through Redisson,
// one command at a time and as an RBatch in each of its execution modes
// (BatchOptions.ExecutionMode). A batch collects commands and sends them together on
// execute(); the modes differ in where the commands wait until then (in Redisson's
// memory, or already in Redis inside MULTI), in whether MULTI/EXEC wraps them, and in
// whether Redis replies at all. After each mode the example prints what reached the
// server (INFO commandstats), which is where those differences show. Jedis only resets
// and checks the keys; every timed command goes through Redisson.
//
// Warm-up matters more here than for Jedis: Redisson's first batch also pays for
// Netty's buffers and for JIT-compiling Redisson's encoder and decoder, so run with
// warmup >= 1 (the default) to measure the batch rather than the cold start.
//
//   jbang ch03-redisson [host] [port] [size] [repeat] [warmup]     (defaults: 127.0.0.1, the lab's port, 100000 3 1)

import java.util.List;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.BatchOptions;
import org.redisson.api.BatchOptions.ExecutionMode;
import org.redisson.api.RedissonClient;

import redis.clients.jedis.Jedis;

public class RedissonModes {

    /**
     * Redisson's response timeout (Config#setTimeout, 3 s by default) applies to a whole
     * batch as to a single command: it starts once the batch is written, and the last of
     * 100,000 replies can take longer than 3 s to come back, most of all while the JIT is
     * still cold. Every batch here gets 30 s (BatchOptions#responseTimeout), so a slow
     * batch shows up as a slow sample rather than as an error.
     */
    private static final long BATCH_TIMEOUT_S = 30;

    public static void main(String[] args) {
        LabSupport.run("ch03-redisson", args, 100_000, 3, RedissonModes::bench);
    }

    static void bench(LabSupport.Settings s) throws Exception {
        List<String> keys = LabSupport.keys(s.size(), "ch03", "redisson");
        LabSupport.Report report = new LabSupport.Report(s)
                .client("redisson", LabSupport.versionOf(Redisson.class, "org.redisson", "redisson", "4.7.0"))
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"));

        try (Jedis jedis = LabSupport.connect(s)) {
            // Before anything is written: the database must hold nothing but lab keys.
            LabSupport.requireLabOnly(jedis, s);
            RedissonClient redisson = null;
            try {
                // Client start-up (connection pool, Netty threads) happens here, never in a timed region.
                redisson = Redisson.create(RedissonSupport.config(s));
                RedissonClient rc = redisson;
                report.header(s.size() + " SADDs to distinct keys");

                // Each mode is timed, and what reached the server counted over all its
                // iterations, warm-up included. The untimed reset and check around each
                // iteration use only UNLINK, EXISTS and SCARD, so that in the wire counts every
                // SADD, MULTI, EXEC and CLIENT is the mode's own. Redisson keeps 25 connections
                // open by default (24 idle ones for commands, one for pub/sub) and PINGs each
                // every 30 s (Config#setPingConnectionInterval), so a mode that runs across such
                // a moment also shows ping=25 that it did not send.
                SaddWorkload.Modes modes = new SaddWorkload.Modes(report, s, jedis, keys);

                modes.time("one_by_one", "one by one", () -> oneByOne(rc, keys));
                modes.time("rbatch_in_memory", "in memory", () -> batch(rc, keys, options()));
                modes.time("rbatch_in_memory_atomic", "in memory atomic",
                        () -> batch(rc, keys, options().executionMode(ExecutionMode.IN_MEMORY_ATOMIC)));
                modes.time("rbatch_skip_result", "skip result",
                        () -> batch(rc, keys, options().skipResult()));
                modes.time("rbatch_redis_write_atomic", "redis write atomic",
                        () -> batch(rc, keys, options().executionMode(ExecutionMode.REDIS_WRITE_ATOMIC)));
                modes.time("rbatch_redis_read_atomic", "redis read atomic",
                        () -> batch(rc, keys, options().executionMode(ExecutionMode.REDIS_READ_ATOMIC)));
            } finally {
                // Delete exactly our keys, and stop Redisson's non-daemon threads, whatever happened.
                LabSupport.cleanup(s, keys, redisson, RedissonClient::shutdown);
            }
        }
        report.finish();
    }

    // --8<-- [start:modes]
    /** Every batch starts from the defaults (IN_MEMORY, replies on) plus the longer timeout. */
    static BatchOptions options() {
        return BatchOptions.defaults().responseTimeout(BATCH_TIMEOUT_S, TimeUnit.SECONDS);
    }

    /**
     * N round trips. RSet#add is RSet#addAsync plus a wait for its future: each SADD
     * borrows a connection from Redisson's pool, is written and flushed by Netty's event
     * loop, and the calling thread blocks until the reply has been decoded.
     */
    static long oneByOne(RedissonClient redisson, List<String> keys) {
        return RedissonSupport.saddOneByOne(redisson, keys, SaddWorkload.MEMBER);
    }

    /**
     * One RBatch in the given mode. What the addAsync() calls do depends on it:
     *  IN_MEMORY (the default): each call only records the command in the batch
     *    (CommandBatchService); execute() takes one connection and writes all commands as
     *    one CommandsData message, which Netty encodes into one buffer and flushes once.
     *    The replies come back in order and complete the commands' futures.
     *  IN_MEMORY_ATOMIC: the same, with MULTI added before and EXEC after. Redis answers
     *    +QUEUED to each SADD and runs them all in EXEC, with no other client in between.
     *  skipResult() (with IN_MEMORY): CLIENT REPLY OFF before, CLIENT REPLY ON after.
     *    Redis sends no reply for the SADDs (and none for the OFF), so nothing comes back
     *    but the +OK of CLIENT REPLY ON, and that one reply completes the batch: Redis
     *    executes a connection's commands in order, so the last SADD has run by then.
     *    The batch returns no results, and the futures addAsync() returned are never
     *    completed (in 4.7.0): with skipResult(), do not wait on them. The check below
     *    counts keys instead.
     *  REDIS_WRITE_ATOMIC: the commands go to Redis as they are added, not at execute().
     *    The first addAsync() takes a connection for the batch and sends MULTI with its
     *    SADD, each later one sends its SADD (a write and flush each, like Lettuce with
     *    auto-flush), and Redis queues them; execute() then sends EXEC.
     *  REDIS_READ_ATOMIC: the same wire traffic as REDIS_WRITE_ATOMIC. It is meant for
     *    reads, and RedisQueuedBatchExecutor has a check that throws for write commands,
     *    but in Redisson 4.7.0 CommandBatchService creates every executor of this mode as
     *    read-only, so the check never fires and the SADDs go through. The one difference
     *    is the connection: a read connection (connectionReadOp) instead of a write one.
     *    On a single server both are the master; with replicas and the default
     *    ReadMode.SLAVE it would come from a replica, which refuses writes (READONLY).
     */
    static long batch(RedissonClient redisson, List<String> keys, BatchOptions options) {
        List<?> replies = RedissonSupport.saddBatch(redisson.createBatch(options), keys, SaddWorkload.MEMBER);
        if (options.isSkipResult()) {
            if (!replies.isEmpty()) {
                throw LabSupport.failure("a batch with skipResult() returned " + replies.size() + " results");
            }
            return SaddWorkload.NO_REPLIES; // Redis sent no replies, so there are none to count
        }
        if (replies.size() != keys.size()) {
            throw LabSupport.failure("a batch of " + keys.size() + " SADDs returned " + replies.size() + " results");
        }
        return RedissonSupport.added(replies);
    }
    // --8<-- [end:modes]
}
