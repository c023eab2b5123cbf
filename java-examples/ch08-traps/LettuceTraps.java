///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.apache.commons:commons-pool2:2.13.1
//DEPS org.slf4j:slf4j-simple:2.0.17
// G1 by name: on the one CPU the lab gives Java the JVM would pick Serial, and under Serial a
// reading after System.gc() still held the previous run's commands (a 12,500-SET queue read 0 MB).
//JAVA_OPTIONS -XX:+UseG1GC -Xmx512m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.log.io.lettuce.core.protocol.DefaultEndpoint=error
//SOURCES ../common/LabSupport.java
//SOURCES ../common/Toxics.java
//SOURCES LettuceQueueTrap.java
//SOURCES LettuceReplayTrap.java
//SOURCES LettuceSharedTrap.java
//SOURCES LettucePoolTrap.java
//SOURCES LettuceSyncTrap.java
//SOURCES ../common/LettuceSupport.java

// Chapter 8: five traps that Lettuce's defaults and a connection's state set, each reproduced,
// measured, fixed and measured again (Lettuce 7.7.0.RELEASE; commons-pool2 2.13.1, the version
// Jedis 8.0.2 brings, for ConnectionPoolSupport).
//
//   1. queue     ClientOptions.requestQueueSize is Integer.MAX_VALUE and nothing in Lettuce
//                consults Channel.isWritable(): K SETs queued with auto-flush off cost heap
//                until flushed (heap after GC for several K); then requestQueueSize(Q) refuses
//                the surplus. With the proxy: the same firehose with auto-flush ON through a
//                slow link, whose netty outbound buffer grows the same way.
//   2. replay    N INCRs in flight when the connection drops (toxiproxy bandwidth + reset_peer,
//                as in chapter 4): default options re-send them all after the reconnect, so
//                the counter ends above N; replayFilter(cmd -> true) changes nothing for them
//                (it drops, without failing, a command written while disconnected);
//                autoReconnect(false) and REJECT_COMMANDS fail them instead.
//   3. shared    MULTI on a connection another thread uses takes that thread's INCR into the
//                transaction (DISCARD drops it); BLPOP holds the other thread's GET back.
//                Fix: a dedicated connection for transactions and blocking commands.
//   4. pool      a pooled connection given back with auto-flush off (ConnectionPoolSupport does
//                not reset it): the next borrower's sync GET times out. Fix: restore in finally.
//   5. sync      sync() on a connection with auto-flush off waits for the command timeout.
//                Fix: async commands and one flushCommands().
//
//   jbang ch08-lettuce [host] [port] [size] [repeat] [warmup] [proxy-host:port toxiproxy-api-url proxy-name]
//   e.g.  jbang ch08-lettuce 127.0.0.1 "$PIPELAB_PORT" 200000 3 1 127.0.0.1:16381 http://127.0.0.1:8474 pipelab-redis
//
// size is the largest number of queued commands in trap 1 (also size/4 and size/2). host and
// port are Redis's; the three optional arguments name a toxiproxy proxy in front of that same
// Redis (checked by its run_id). Without them trap 2 and the slow-link firehose are skipped,
// and a fact says so. The toxics affect every connection through that proxy while they exist,
// so run nothing else through it meanwhile.
//
// DefaultEndpoint logs every command refused on the event loop as a WARN with a stack trace
// (its RetryListener); the bounded firehose has thousands, so that logger is set to error
// above and the refusals are counted in facts instead.

import java.lang.management.ManagementFactory;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.event.connection.ConnectionActivatedEvent;
import io.lettuce.core.event.connection.ConnectionDeactivatedEvent;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.support.ConnectionPoolSupport;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;

import org.apache.commons.pool2.impl.GenericObjectPool;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;

import redis.clients.jedis.Jedis;

import pipelab.JedisSupport;
import pipelab.LettuceSupport;

public class LettuceTraps {

    static final String EXAMPLE = "ch08-lettuce";
    static final String USAGE = "usage: jbang " + EXAMPLE + " [host] [port] [size] [repeat] [warmup]"
            + " [proxy-host:port toxiproxy-api-url proxy-name] (defaults: 127.0.0.1, the lab's port, 200000 3 1, no proxy)";
    static final int DEFAULT_SIZE = 200_000;
    static final int DEFAULT_REPEAT = 3;

    /** Lettuce's own command timeout (RedisURI.DEFAULT_TIMEOUT), which every wait below replaces. */
    static final Duration LETTUCE_DEFAULT_TIMEOUT = RedisURI.DEFAULT_TIMEOUT_DURATION;
    /** Traps 4 and 5: how long a sync call waits for a command that never leaves. */
    static final Duration TIMEOUT = Duration.ofSeconds(1);
    /** Trap 3: above BLPOP's own 1 s, so the blocking command ends by itself. */
    static final Duration BLOCKING_TIMEOUT = Duration.ofSeconds(2);
    /** Trap 1: the expiry timer starts at write(), so queued commands must outlive the queueing and GCs. */
    static final Duration QUEUE_TIMEOUT = Duration.ofSeconds(10);
    /** Trap 2: the drop, removing the toxics, the reconnect and the re-send fit well inside it. */
    static final Duration REPLAY_TIMEOUT = Duration.ofSeconds(5);

    static final int MAX_COLLECTIONS = 6; // heapAfterGc: at most this many, until two agree
    static final long STABLE_BYTES = 64 * 1024;
    static final int VALUE_BYTES = 100;
    /** Trap 1 writes a few keys over and over: the heap holds commands, not distinct data. */
    static final int QUEUE_KEYS = 16;
    static final int MAX_BOUND = 10_000;

    /** Trap 2: INCRs in flight, and the drop's timing (as chapter 4's ch04-drop). */
    static final int REPLAY_N = 20_000;
    static final long PASS_MS = 1_200;
    static final long RESET_AFTER_MS = 300;
    /** The slow link of the firehose, KB/s, and how many SETs are fired through it. */
    static final long SLOW_KB_S = 256;
    static final int FIREHOSE_MAX = 100_000;
    /** Upper bound for waiting on a drop, an event, a borrow or Redis closing a connection. */
    static final Duration WAIT = Duration.ofSeconds(10);
    static final String TOXIC_PREFIX = "pipelab-ch08-lettuce-";

    public static void main(String[] args) {
        String[] extra = LabSupport.extra(args);
        LabSupport.run(EXAMPLE, LabSupport.usual(args), DEFAULT_SIZE, DEFAULT_REPEAT, s -> run(s, extra));
    }

    /** Where trap 2 goes through, or null when no proxy was given. */
    record Proxy(String host, int port, Toxics toxics) {
    }

    static Proxy proxy(String[] extra) {
        if (extra.length == 0) {
            return null;
        }
        if (extra.length != 3) {
            throw new LabSupport.Stop(2, EXAMPLE + ": expected 0 or 3 arguments after the usual five"
                    + " (proxy-host:port toxiproxy-api-url proxy-name) but got " + extra.length + "; " + USAGE + ".");
        }
        String address = extra[0].trim();
        int colon = address.lastIndexOf(':');
        int port = -1;
        try {
            port = colon > 0 ? Integer.parseInt(address.substring(colon + 1)) : -1;
        } catch (NumberFormatException e) {
            // reported below
        }
        if (port < 1 || port > 65_535) {
            throw new LabSupport.Stop(2, EXAMPLE + ": proxy address must be host:port such as 127.0.0.1:16381, not '"
                    + address + "'; " + USAGE + ".");
        }
        return new Proxy(address.substring(0, colon), port,
                new Toxics(EXAMPLE, USAGE, extra[1].trim(), extra[2].trim(), TOXIC_PREFIX));
    }

    static void run(LabSupport.Settings s, String[] extra) throws Exception {
        Proxy proxy = proxy(extra);
        String value = "v".repeat(VALUE_BYTES);
        List<String> queueKeys = LabSupport.keys(QUEUE_KEYS, "ch08", "lettuce", "queue");
        List<String> keys = new ArrayList<>(queueKeys);
        for (String name : List.of("multi:a", "multi:b", "blpop:list", "blpop:b", "pool:poisoned", "pool:fixed",
                "sync")) {
            keys.add(LabSupport.key("ch08", "lettuce", name));
        }
        for (String scenario : LettuceReplayTrap.REPLAY_SCENARIOS) {
            keys.add(LettuceReplayTrap.replayKey(scenario));
            keys.add(LettuceReplayTrap.replayKey(scenario) + ":late");
        }

        LabSupport.Report report = new LabSupport.Report(s)
                // The manifest says e.g. "7.7.0.RELEASE/1960d49": keep the version, drop the commit.
                .client("lettuce", LabSupport.versionOf(RedisClient.class, "io.lettuce", "lettuce-core",
                        "7.7.0.RELEASE").split("/")[0])
                .client("commons-pool2", LabSupport.versionOf(GenericObjectPool.class, "org.apache.commons",
                        "commons-pool2", "2.13.1"))
                .client("netty", LabSupport.versionOf(io.netty.channel.Channel.class, "io.netty", "netty-transport",
                        "4.2.13.Final"))
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"))
                .withoutSpeedUps(); // the modes queue different numbers of commands

        ClientResources resources = null;
        try (Jedis control = LabSupport.connect(s)) {
            LabSupport.requireLabOnly(control, s);
            LabSupport.deleteKeys(control, keys); // leftovers of an interrupted run would skew the counts
            if (proxy != null) {
                checkProxy(s, control, proxy);
            }
            try {
                // One set of event loops and timers for every client below.
                resources = DefaultClientResources.create();
                report.header("Lettuce traps: up to " + s.size() + " queued SETs, " + REPLAY_N + " INCRs dropped in flight"
                        + (proxy == null ? " (no proxy: skipped)" : " through toxiproxy '" + proxy.toxics().proxy + "'")
                        + ", MULTI/BLPOP on a shared connection, a poisoned pool, sync with auto-flush off");
                report.fact("default_command_timeout_s", LETTUCE_DEFAULT_TIMEOUT.toSeconds());
                report.fact("default_request_queue_size", ClientOptions.DEFAULT_REQUEST_QUEUE_SIZE);

                LettuceQueueTrap.queueTrap(report, s, resources, queueKeys, value);
                if (proxy != null) {
                    LettuceQueueTrap.firehose(report, s, resources, proxy, queueKeys, value);
                    LettuceReplayTrap.replayTrap(report, s, resources, control, proxy);
                } else {
                    String why = "no toxiproxy arguments (proxy-host:port toxiproxy-api-url proxy-name)";
                    report.fact("firehose_skipped", why);
                    report.fact("replay_skipped", why);
                }
                LettuceSharedTrap.sharedTrap(report, s, resources, control);
                LettucePoolTrap.poolTrap(report, s, resources, control);
                LettuceSyncTrap.syncTrap(report, s, resources, control);
            } finally {
                if (proxy != null) {
                    proxy.toxics().removeOurs();
                }
                LabSupport.cleanup(s, keys, resources, r -> r.shutdown(0, 2, TimeUnit.SECONDS));
            }
        }
        report.finish();
    }

    /** The proxy answers, listens where we were told, and leads to the Redis at host:port. */
    static void checkProxy(LabSupport.Settings s, Jedis control, Proxy proxy) {
        proxy.toxics().check(proxy.port());
        String direct = runId(control);
        try (Jedis through = JedisSupport.jedis(proxy.host(), proxy.port())) {
            String proxied = runId(through);
            if (!direct.equals(proxied)) {
                throw new LabSupport.Stop(2, "Proxy '" + proxy.toxics().proxy + "' leads to another Redis (run_id "
                        + proxied + ") than " + s.where() + " (" + direct + "); put it in front of that Redis.");
            }
        } catch (redis.clients.jedis.exceptions.JedisConnectionException e) {
            throw new LabSupport.Stop(4, "Cannot reach Redis through proxy '" + proxy.toxics().proxy + "' at "
                    + proxy.host() + ":" + proxy.port() + ": " + e.getMessage() + ".");
        }
    }

    static String runId(Jedis jedis) {
        for (String line : jedis.info("server").split("\r?\n")) {
            if (line.startsWith("run_id:")) {
                return line.substring("run_id:".length()).strip();
            }
        }
        return "";
    }

    /** A client with the part's own timeout and options, plus REDIS_URL's user, password, database, TLS and CA. */
    static RedisClient client(ClientResources resources, String host, int port, Duration timeout, ClientOptions options) {
        RedisClient client = RedisClient.create(resources, LettuceSupport.uri(host, port).withTimeout(timeout).build());
        client.setOptions(LettuceSupport.options(options));
        return client;
    }

    // ================================================================ helpers

    /**
     * Waits out three ticks of Lettuce's HashedWheelTimer (netty's default tick, 100 ms): a
     * finished command stays reachable from its cancelled timeout until the timer thread has
     * drained it (it takes in at most 100,000 new timeouts per tick), and a baseline must not
     * count the previous run's commands.
     */
    static void settle() throws InterruptedException {
        Thread.sleep(350);
    }

    /**
     * Heap in use after full collections: what is still reachable. It collects until two readings
     * agree within STABLE_BYTES, since the timer thread may drop its last references between two.
     */
    static long heapAfterGc() throws InterruptedException {
        long previous = -1;
        for (int i = 0; i < MAX_COLLECTIONS; i++) {
            System.gc();
            Thread.sleep(20);
            long used = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
            if (previous >= 0 && Math.abs(used - previous) < STABLE_BYTES) {
                return used;
            }
            previous = used;
        }
        return previous;
    }

    /** Errors of one kind: how many, and what the first one said. */
    static final class Errors {
        int count;
        Throwable first;

        void add(Throwable error) {
            count++;
            first = first == null ? error : first;
        }

        void addAll(Errors other) {
            count += other.count;
            first = first == null ? other.first : first;
        }

        String first() {
            return first == null ? "none" : describe(first);
        }
    }

    /**
     * How futures ended: answered, timed out (the command timeout, which starts at write() and so
     * runs while a command still waits in a queue, or the end of our own wait), or failed otherwise.
     * Counted, not thrown: on a slower machine more commands time out, a finding, not a bug.
     */
    static final class Ended {
        int ok;
        final Errors timedOut = new Errors();
        final Errors failed = new Errors();
        long ms; // from the start of the wait until the last future ended
    }

    /** Awaits every future until `wait` has passed since the call, and counts how each ended. */
    static <T> Ended awaitEach(List<RedisFuture<T>> futures, Duration wait) throws InterruptedException {
        Ended ended = new Ended();
        long start = System.nanoTime();
        long deadline = start + wait.toNanos();
        for (RedisFuture<T> future : futures) {
            try {
                future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                ended.ok++;
            } catch (TimeoutException e) {
                ended.timedOut.add(e);
            } catch (ExecutionException | CancellationException e) {
                Throwable cause = unwrap(e);
                (cause instanceof RedisCommandTimeoutException ? ended.timedOut : ended.failed).add(cause);
            }
        }
        ended.ms = (System.nanoTime() - start) / 1_000_000;
        return ended;
    }

    /**
     * The SETs the server ran since `before`, once its count settles: at least the `ok` the client
     * saw answered, at most `ok` + `timedOut` (a command that timed out in the client may have been
     * sent already, and then it runs). Outside that, a reply was lost or the counts contradict.
     */
    static long requireServerRan(LabSupport.Settings s, Map<String, Long> before, long ok, long timedOut, String what)
            throws InterruptedException {
        long sets = LabSupport.settledCalls(s, before, "set", WAIT);
        if (sets < ok || sets > ok + timedOut) {
            throw LabSupport.failure("the server ran " + sets + " SETs for " + ok + " " + what + " SETs answered and "
                    + timedOut + " timed out");
        }
        return sets;
    }

    /** Every future completes without error within QUEUE_TIMEOUT, or the example fails. */
    static <T> void awaitAllOk(List<RedisFuture<T>> futures, String what) throws Exception {
        Ended ended = awaitEach(futures, QUEUE_TIMEOUT);
        if (ended.ok < futures.size()) {
            Errors why = ended.failed.count > 0 ? ended.failed : ended.timedOut;
            throw LabSupport.failure("a " + what + " failed: " + why.first());
        }
    }

    static Throwable failureOf(RedisFuture<?> future) {
        try {
            future.toCompletableFuture().getNow(null);
            return null;
        } catch (RuntimeException e) {
            return unwrap(e);
        }
    }

    static Throwable unwrap(Throwable e) {
        return (e instanceof ExecutionException || e instanceof java.util.concurrent.CompletionException)
                && e.getCause() != null ? e.getCause() : e;
    }

    /** "RedisCommandTimeoutException: Command timed out after 1 second(s)", one line. */
    static String describe(Throwable e) {
        String message = e.getMessage();
        return e.getClass().getSimpleName() + (message == null || message.isBlank() ? ""
                : ": " + message.strip().replaceAll("\\s+", " "));
    }

    /** The bytes of SET key value on the wire (a RESP array of three bulk strings). */
    static long setBytes(String key, String value) {
        long bytes = "*3\r\n".length();
        for (String part : new String[] {"SET", key, value}) {
            int length = part.getBytes(StandardCharsets.UTF_8).length;
            bytes += 1 + String.valueOf(length).length() + 2 + length + 2; // $<length>\r\n<bytes>\r\n
        }
        return bytes;
    }

    static long medianOf(List<Long> values) {
        List<Long> sorted = new ArrayList<>(values);
        sorted.sort(null);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    static double mb(long bytes) {
        return round1(bytes / 1e6);
    }

    static double round1(double v) {
        return Math.round(10 * v) / 10.0;
    }
}
