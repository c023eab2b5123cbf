///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS org.redisson:redisson:4.7.0
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java

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
//   jbang ch03-redisson [host] [port] [size] [repeat] [warmup]     (defaults 127.0.0.1 16379 100000 3 1)

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.BatchOptions;
import org.redisson.api.BatchOptions.ExecutionMode;
import org.redisson.api.BatchResult;
import org.redisson.api.RBatch;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

import redis.clients.jedis.Jedis;

public class RedissonModes {

    private static final String MEMBER = "m";

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
        List<String> keys = new ArrayList<>(s.size());
        for (int i = 0; i < s.size(); i++) {
            keys.add(LabSupport.key("ch03", "redisson", i));
        }
        LabSupport.Report report = new LabSupport.Report(s)
                .client("redisson", LabSupport.versionOf(Redisson.class, "org.redisson", "redisson", "4.7.0"))
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"));

        try (Jedis jedis = LabSupport.connect(s)) {
            // Before anything is written: the database must hold nothing but lab keys.
            LabSupport.requireLabOnly(jedis, s);
            RedissonClient redisson = null;
            try {
                // Client start-up (connection pool, Netty threads) happens here, never in a timed region.
                redisson = Redisson.create(redissonConfig(s));
                RedissonClient rc = redisson;
                report.header(s.size() + " SADDs to distinct keys");

                long[] added = new long[1]; // members the timed task saw added (-1: no replies); checked afterwards
                // Reset and checks use only UNLINK, EXISTS and SCARD, so that in the wire
                // counts every SADD, MULTI, EXEC and CLIENT is the mode's own.
                LabSupport.Step reset = () -> LabSupport.deleteKeys(jedis, keys);
                LabSupport.Step verify = () -> verify(jedis, keys, added[0]);

                mode(report, s, "one_by_one", "one by one", reset,
                        () -> added[0] = oneByOne(rc, keys), verify);
                mode(report, s, "rbatch_in_memory", "in memory", reset,
                        () -> added[0] = batch(rc, keys, options()), verify);
                mode(report, s, "rbatch_in_memory_atomic", "in memory atomic", reset,
                        () -> added[0] = batch(rc, keys, options().executionMode(ExecutionMode.IN_MEMORY_ATOMIC)), verify);
                mode(report, s, "rbatch_skip_result", "skip result", reset,
                        () -> added[0] = batch(rc, keys, options().skipResult()), verify);
                mode(report, s, "rbatch_redis_write_atomic", "redis write atomic", reset,
                        () -> added[0] = batch(rc, keys, options().executionMode(ExecutionMode.REDIS_WRITE_ATOMIC)), verify);
                mode(report, s, "rbatch_redis_read_atomic", "redis read atomic", reset,
                        () -> added[0] = batch(rc, keys, options().executionMode(ExecutionMode.REDIS_READ_ATOMIC)), verify);
            } finally {
                // Delete exactly our keys, and stop Redisson's non-daemon threads, whatever happened.
                try {
                    LabSupport.cleanup(s, keys);
                } finally {
                    if (redisson != null) {
                        redisson.shutdown();
                    }
                }
            }
        }
        report.finish();
    }

    /**
     * Redisson's defaults, with one exception: its default codec (Kryo) would store a
     * serialized object instead of the plain string "m". StringCodec makes Redisson write
     * the same bytes as Jedis and Lettuce, so all the clients do the same work.
     */
    static Config redissonConfig(LabSupport.Settings s) {
        String host = s.host().contains(":") ? "[" + s.host() + "]" : s.host(); // IPv6 literal in a URI
        Config config = new Config();
        config.setCodec(StringCodec.INSTANCE);
        config.useSingleServer().setAddress("redis://" + host + ":" + s.port());
        return config;
    }

    /** Every batch starts from the defaults (IN_MEMORY, replies on) plus the longer timeout. */
    static BatchOptions options() {
        return BatchOptions.defaults().responseTimeout(BATCH_TIMEOUT_S, TimeUnit.SECONDS);
    }

    /**
     * Times one mode and records what reached the server meanwhile. The command counts
     * cover the untimed resets and checks too (UNLINK, EXISTS, SCARD), and all iterations,
     * warm-up included. Redisson keeps 25 connections open by default (24 idle ones for
     * commands, one for pub/sub) and PINGs each every 30 s (Config#setPingConnectionInterval),
     * so a mode that runs across such a moment also shows ping=25 that it did not send.
     */
    static void mode(LabSupport.Report report, LabSupport.Settings s, String mode, String label,
                     LabSupport.Step reset, LabSupport.Step task, LabSupport.Step verify) throws Exception {
        Map<String, Long> before = LabSupport.commandCalls(s);
        List<Double> samples = LabSupport.measure(s, reset, task, verify);
        Map<String, Long> after = LabSupport.commandCalls(s);
        report.add(mode, label, "SADDs", samples);
        report.wire(mode, LabSupport.callsBetween(before, after));
    }

    /**
     * N round trips. RSet#add is RSet#addAsync plus a wait for its future: each SADD
     * borrows a connection from Redisson's pool, is written and flushed by Netty's event
     * loop, and the calling thread blocks until the reply has been decoded.
     */
    static long oneByOne(RedissonClient redisson, List<String> keys) {
        long added = 0;
        for (String key : keys) {
            if (redisson.<String>getSet(key).add(MEMBER)) {
                added++;
            }
        }
        return added;
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
        RBatch batch = redisson.createBatch(options);
        for (String key : keys) {
            batch.<String>getSet(key).addAsync(MEMBER);
        }
        BatchResult<?> result = batch.execute();
        List<?> replies = result.getResponses();
        if (options.isSkipResult()) {
            if (!replies.isEmpty()) {
                throw LabSupport.failure("a batch with skipResult() returned " + replies.size() + " results");
            }
            return -1; // Redis sent no replies, so there are none to count
        }
        if (replies.size() != keys.size()) {
            throw LabSupport.failure("a batch of " + keys.size() + " SADDs returned " + replies.size() + " results");
        }
        long added = 0;
        for (Object reply : replies) {
            // RSet#addAsync converts SADD's integer reply to a Boolean, in every mode.
            if (Boolean.TRUE.equals(reply)) {
                added++;
            }
        }
        return added;
    }

    /**
     * Outside the timed region: every SADD must have reported a new member (unless the
     * batch asked for no replies), every key must now exist (EXISTS, a thousand keys per
     * call), and a few sampled sets must hold exactly one member.
     */
    static void verify(Jedis jedis, List<String> keys, long added) {
        int n = keys.size();
        if (added != -1 && added != n) {
            throw LabSupport.failure(n + " SADDs reported " + added + " new members");
        }
        long existing = LabSupport.countExisting(jedis, keys);
        if (existing != n) {
            throw LabSupport.failure("after " + n + " SADDs only " + existing + " of the keys exist");
        }
        for (String key : List.of(keys.get(0), keys.get(n / 2), keys.get(n - 1))) {
            long cardinality = jedis.scard(key);
            if (cardinality != 1) {
                throw LabSupport.failure("set '" + key + "' should hold just '" + MEMBER + "' but has "
                        + cardinality + " member(s) " + jedis.smembers(key));
            }
        }
    }
}
