///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/SaddWorkload.java
//SOURCES ../common/LettuceSupport.java

// Chapter 3: the same N writes (one SADD to each of N distinct keys) through Lettuce, a
// Netty-based client where every connection is pipelined already: commands are written
// as they are issued and replies are matched to them later, on Netty's event-loop
// thread. What the modes change is when the calling thread waits and when the bytes
// are flushed to the socket. Jedis only resets and checks the keys (and reads INFO
// commandstats to show what reached the server); every timed command goes through Lettuce.
// A last part measures what manual flushing means for a second thread that shares the
// connection: how long its one command waits for the first thread's flush.
//
//   jbang ch03-lettuce [host] [port] [size] [repeat] [warmup]     (defaults: 127.0.0.1, the lab's port, 100000 3 1)

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;

import redis.clients.jedis.Jedis;

import pipelab.LettuceSupport;

public class LettuceModes {

    /** Commands per flushCommands() in the async_flush_every_1000 mode. */
    private static final int FLUSH_EVERY = 1000;

    /** How long thread A of the shared-connection part holds its queued commands back. */
    private static final long HOLD_MS = 200;

    /** SADDs thread A queues in the shared-connection part (fewer if size is smaller). */
    private static final int SHARED_COMMANDS = 1000;

    /** Upper bound for one mode's replies; Lettuce's own default command timeout is 60 s too. */
    private static final Duration AWAIT = Duration.ofSeconds(60);

    public static void main(String[] args) {
        LabSupport.run("ch03-lettuce", args, 100_000, 3, LettuceModes::bench);
    }

    static void bench(LabSupport.Settings s) throws Exception {
        List<String> keys = LabSupport.keys(s.size(), "ch03", "lettuce");
        LabSupport.Report report = new LabSupport.Report(s)
                // The manifest says e.g. "7.7.0.RELEASE/1960d49": keep the version, drop the commit.
                .client("lettuce", LabSupport.versionOf(RedisClient.class, "io.lettuce", "lettuce-core",
                        "7.7.0.RELEASE").split("/")[0])
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"));

        try (Jedis jedis = LabSupport.connect(s)) {
            // Before anything is written: the database must hold nothing but lab keys.
            LabSupport.requireLabOnly(jedis, s);
            RedisClient client = null;
            try {
                // Start-up (Netty event loops, the TCP connection, the HELLO handshake) happens
                // here, never in a timed region. One client, one connection for everything.
                client = LettuceSupport.client(LettuceSupport.uri(s.host(), s.port()).build());
                StatefulRedisConnection<String, String> connection = client.connect();
                report.header(s.size() + " SADDs to distinct keys, one connection");

                // Each mode is timed, and what reached the server counted over all its
                // iterations, warm-up included. The untimed reset and check around each
                // iteration use only UNLINK, EXISTS and SCARD, so that in the wire counts
                // every SADD is the mode's own.
                SaddWorkload.Modes modes = new SaddWorkload.Modes(report, s, jedis, keys);

                modes.time("sync_one_by_one", "sync one by one", () -> syncOneByOne(connection, keys));
                modes.time("async_autoflush", "async auto-flush", () -> asyncAutoFlush(connection, keys));
                modes.time("async_manual_flush", "async manual flush",
                        () -> asyncFlushEvery(connection, keys, keys.size()));
                modes.time("async_flush_every_1000", "async flush per 1000",
                        () -> asyncFlushEvery(connection, keys, FLUSH_EVERY));

                sharedConnection(report, s, jedis, connection, keys.subList(0, Math.min(SHARED_COMMANDS, keys.size())));
            } finally {
                // Delete exactly our keys, and stop Lettuce's threads, whatever happened.
                // shutdown() closes the connection, then the event loops: no quiet period to
                // wait out (nothing else uses them), at most 2 s for in-flight work.
                LabSupport.cleanup(s, keys, client, c -> c.shutdown(Duration.ZERO, Duration.ofSeconds(2)));
            }
        }
        report.finish();
    }

    // --8<-- [start:modes]
    /**
     * N round trips. connection.sync() is a proxy over the async API: each call issues the
     * command exactly as async() would, then blocks on its future (up to the command
     * timeout, 60 s by default). So this is the async machinery with a round trip per
     * command, and each round trip also passes the command to Netty's event-loop thread
     * and the reply back to the caller: two thread hand-offs that Jedis, which reads and
     * writes its socket on the calling thread, does not pay.
     */
    static long syncOneByOne(StatefulRedisConnection<String, String> connection, List<String> keys) {
        RedisCommands<String, String> sync = connection.sync();
        long added = 0;
        for (String key : keys) {
            added += sync.sadd(key, SaddWorkload.MEMBER);
        }
        return added;
    }

    /**
     * All commands issued without waiting, then all replies awaited. With auto-flush on
     * (the default), every sadd() ends in DefaultEndpoint.write() calling
     * channel.writeAndFlush() for that one command: Netty's event loop writes it to the
     * socket at once, in a system call of its own (strace counts about one write per
     * command), while the replies of earlier commands are already coming back. Pipelined,
     * but with one flush, and one system call, per command.
     */
    static long asyncAutoFlush(StatefulRedisConnection<String, String> connection, List<String> keys)
            throws Exception {
        RedisAsyncCommands<String, String> async = connection.async();
        List<RedisFuture<Long>> futures = new ArrayList<>(keys.size());
        for (String key : keys) {
            futures.add(async.sadd(key, SaddWorkload.MEMBER));
        }
        return awaitAndSum(futures);
    }

    /**
     * StatefulRedisConnection#setAutoFlushCommands(false) makes DefaultEndpoint.write()
     * only append each command to the endpoint's commandBuffer, a client-side queue;
     * nothing is encoded or sent. flushCommands() drains that queue into the Netty channel
     * with one write per command and a single flush at the end, so the bytes leave in as
     * few, large socket writes as the buffers allow. With every = keys.size() that is one
     * flush for everything: Redis sits idle until the last command is issued, then all the
     * bytes, and all the replies, come at once. Smaller values send the work in slices, so
     * Redis works on one slice while the calling thread issues the next.
     */
    static long asyncFlushEvery(StatefulRedisConnection<String, String> connection, List<String> keys, int every)
            throws Exception {
        RedisAsyncCommands<String, String> async = connection.async();
        List<RedisFuture<Long>> futures = new ArrayList<>(keys.size());
        connection.setAutoFlushCommands(false);
        try {
            for (int i = 0; i < keys.size(); i++) {
                futures.add(async.sadd(keys.get(i), SaddWorkload.MEMBER));
                if ((i + 1) % every == 0) {
                    connection.flushCommands();
                }
            }
            connection.flushCommands(); // the last, partial slice (a no-op when there is none)
        } finally {
            // The flag belongs to the connection, so always put it back. After an error,
            // flush too: commands left in the buffer would otherwise never be sent, and the
            // auto-flushed commands that follow would overtake them.
            connection.setAutoFlushCommands(true);
            connection.flushCommands();
        }
        return awaitAndSum(futures);
    }

    /** LettuceFutures.awaitAll waits for every future (or the timeout), rethrowing a command's error. */
    private static long awaitAndSum(List<RedisFuture<Long>> futures) throws Exception {
        if (!LettuceFutures.awaitAll(AWAIT, futures.toArray(new RedisFuture<?>[0]))) {
            throw LabSupport.failure("the replies of " + futures.size() + " SADDs did not all arrive within " + AWAIT);
        }
        long added = 0;
        for (RedisFuture<Long> future : futures) {
            added += future.get(); // complete by now: get() returns at once
        }
        return added;
    }
    // --8<-- [end:modes]

    /**
     * Why manual flushing is a property of the connection, not of a thread. Thread A turns
     * auto-flush off, queues SADDs and holds them for HOLD_MS before flushCommands().
     * Meanwhile thread B, on the same connection, calls sync().scard() on A's first key.
     * B's command goes through the same DefaultEndpoint, so it lands in the same
     * commandBuffer behind A's commands and is not sent until A flushes: B blocks for the
     * whole hold. After the flush the commands reach Redis in queue order, CommandHandler
     * keeps them in its stack (a FIFO queue) and completes each arriving reply with the
     * oldest command, so B's reply can only come after all of A's. That order is visible
     * too: B's SCARD sees the member A's SADD added, though B called before A flushed.
     * Threads that want to flush independently need connections of their own.
     *
     * Recorded as mode shared_conn_wait: one sample per repetition, B's wait in seconds,
     * 1 operation. It is not a throughput and is not comparable with the modes above.
     */
    static void sharedConnection(LabSupport.Report report, LabSupport.Settings s, Jedis jedis,
                                 StatefulRedisConnection<String, String> connection, List<String> keys) throws Exception {
        Map<String, Long> before = LabSupport.commandCalls(s);
        List<Double> waits = new ArrayList<>(s.repeat());
        for (int i = 0; i < s.warmup() + s.repeat(); i++) {
            LabSupport.deleteKeys(jedis, keys);
            double waited = sharedConnectionOnce(connection, keys);
            SaddWorkload.verify(jedis, keys, keys.size()); // A's SADDs all arrived too
            if (i >= s.warmup()) {
                waits.add(waited);
            }
        }
        Map<String, Long> after = LabSupport.commandCalls(s);
        report.add("shared_conn_wait", "B's wait (shared)", "SCARD", 1, waits);
        report.wire("shared_conn_wait", LabSupport.callsBetween(before, after));
        System.out.println("  (thread B's one SCARD, issued while thread A held " + keys.size()
                + " unflushed SADDs for " + HOLD_MS + " ms on the same connection)");
    }

    /** Until `thread` parks (a sync call waiting for its reply) or ends. */
    private static void awaitParked(Thread thread) throws InterruptedException {
        long deadline = System.nanoTime() + AWAIT.toNanos();
        while (thread.isAlive() && thread.getState() != Thread.State.WAITING
                && thread.getState() != Thread.State.TIMED_WAITING) {
            if (System.nanoTime() > deadline) {
                throw LabSupport.failure("thread B neither waited for a reply nor ended within " + AWAIT);
            }
            Thread.sleep(1);
        }
    }

    /** One run of the two threads; returns how long B's sync SCARD took, in seconds. */
    private static double sharedConnectionOnce(StatefulRedisConnection<String, String> connection,
                                               List<String> keys) throws Exception {
        RedisAsyncCommands<String, String> async = connection.async();
        List<RedisFuture<Long>> futures = new ArrayList<>(keys.size());
        long[] bTimes = new long[2]; // nanoTime when B called scard() and when it returned
        long[] bReply = {-1};
        Throwable[] bError = new Throwable[1];
        long flushedAt;

        connection.setAutoFlushCommands(false);
        Thread b;
        try {
            // Thread A (this one) queues its SADDs: still all in the client, nothing sent.
            for (String key : keys) {
                futures.add(async.sadd(key, SaddWorkload.MEMBER));
            }
            b = new Thread(() -> {
                try {
                    bTimes[0] = System.nanoTime();
                    bReply[0] = connection.sync().scard(keys.get(0)); // blocks until A flushes
                    bTimes[1] = System.nanoTime();
                } catch (Throwable t) {
                    bError[0] = t;
                }
            }, "thread-B");
            b.start();
            awaitParked(b); // however slow the machine is to schedule B: from here B waits for its reply
            Thread.sleep(HOLD_MS); // A is slow to flush; B is stuck meanwhile
            flushedAt = System.nanoTime();
            connection.flushCommands(); // sends A's SADDs and, behind them, B's SCARD
        } finally {
            connection.setAutoFlushCommands(true);
            connection.flushCommands();
        }
        b.join(AWAIT.toMillis()); // after join(), B's writes to the arrays are visible here
        if (b.isAlive()) {
            throw LabSupport.failure("thread B's SCARD did not return within " + AWAIT);
        }
        if (bError[0] != null) {
            throw new IllegalStateException("thread B's SCARD failed", bError[0]);
        }
        long added = awaitAndSum(futures);
        if (added != keys.size()) {
            throw LabSupport.failure(keys.size() + " SADDs of thread A reported " + added + " new members");
        }
        if (bReply[0] != 1) {
            throw LabSupport.failure("thread B's SCARD of '" + keys.get(0) + "' returned " + bReply[0]
                    + " instead of 1: it did not run after thread A's SADD to the same key");
        }
        if (bTimes[0] >= flushedAt) {
            throw LabSupport.failure("thread B only called SCARD after thread A's flush, though it had parked before");
        }
        if (bTimes[1] < flushedAt) {
            throw LabSupport.failure("thread B's SCARD returned before thread A flushed: it did not wait in A's queue");
        }
        return (bTimes[1] - bTimes[0]) / 1e9;
    }
}
