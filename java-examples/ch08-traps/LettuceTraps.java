///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.apache.commons:commons-pool2:2.13.1
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Xmx512m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.log.io.lettuce.core.protocol.DefaultEndpoint=error
//SOURCES ../common/LabSupport.java
//SOURCES ../common/Toxics.java

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
        for (String scenario : REPLAY_SCENARIOS) {
            keys.add(replayKey(scenario));
            keys.add(replayKey(scenario) + ":late");
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

                queueTrap(report, s, resources, queueKeys, value);
                if (proxy != null) {
                    firehose(report, s, resources, proxy, queueKeys, value);
                    replayTrap(report, s, resources, control, proxy);
                } else {
                    String why = "no toxiproxy arguments (proxy-host:port toxiproxy-api-url proxy-name)";
                    report.fact("firehose_skipped", why);
                    report.fact("replay_skipped", why);
                }
                sharedTrap(report, s, resources, control);
                poolTrap(report, s, resources, control);
                syncTrap(report, s, resources, control);
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
        try (Jedis through = new Jedis(proxy.host(), proxy.port())) {
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

    static RedisClient client(ClientResources resources, String host, int port, Duration timeout, ClientOptions options) {
        RedisClient client = RedisClient.create(resources,
                RedisURI.builder().withHost(host).withPort(port).withTimeout(timeout).build());
        client.setOptions(options);
        return client;
    }

    // ================================================================ 1. the unbounded queue

    /**
     * K SETs queued with auto-flush off, for K = size/4, size/2 and size: the time to queue them
     * (mode queue_<K>), the heap they hold after GC (fact queued_<K>_heap_mb, median), then a flush
     * and every reply awaited, and the server's SET count checked. Then the same with
     * requestQueueSize(Q): how many were refused, and how, and what the heap held.
     */
    static void queueTrap(LabSupport.Report report, LabSupport.Settings s, ClientResources resources,
                          List<String> keys, String value) throws Exception {
        List<Integer> ks = new ArrayList<>();
        for (int k : new int[] {Math.max(1, s.size() / 4), Math.max(1, s.size() / 2), s.size()}) {
            if (!ks.contains(k)) {
                ks.add(k);
            }
        }
        report.fact("value_bytes", VALUE_BYTES);
        report.fact("queue_keys", QUEUE_KEYS);
        report.fact("heap_max_mb", mb(Runtime.getRuntime().maxMemory()));
        RedisClient client = client(resources, s.host(), s.port(), QUEUE_TIMEOUT, ClientOptions.create());
        List<RedisFuture<String>> futures = new ArrayList<>(s.size()); // sized now, so no baseline counts it
        Map<Integer, Long> held = new LinkedHashMap<>();
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            for (int k : ks) {
                long[] baseline = {0};
                List<Long> heldRecorded = new ArrayList<>();
                int[] iteration = {0};
                Map<String, Long> before = LabSupport.commandCalls(s);
                LabSupport.Samples samples = LabSupport.measure(s, () -> {
                    futures.clear();
                    settle();
                    baseline[0] = heapAfterGc();
                }, () -> queue(connection, keys, value, k, futures), () -> {
                    long heap = heapAfterGc() - baseline[0]; // the queued commands are all still reachable
                    if (iteration[0]++ >= s.warmup()) {
                        heldRecorded.add(heap);
                    }
                    connection.flushCommands();
                    connection.setAutoFlushCommands(true);
                    awaitAllOk(futures, "queued SET");
                });
                long sets = LabSupport.callsBetween(before, LabSupport.commandCalls(s)).getOrDefault("set", 0L);
                if (sets != (long) k * iteration[0]) {
                    throw LabSupport.failure("the server ran " + sets + " SETs for " + iteration[0] + " runs of " + k);
                }
                report.add("queue_" + k, "queue " + k, "cmds", k, samples);
                long median = medianOf(heldRecorded);
                held.put(k, median);
                report.fact("queued_" + k + "_heap_mb", round1(median / 1e6));
            }
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
        int small = ks.get(0);
        int large = ks.get(ks.size() - 1);
        // The slope between the smallest and the largest K: per-command cost, fixed costs cancelled.
        double perCommand = large > small ? (held.get(large) - held.get(small)) / (double) (large - small)
                : held.get(large) / (double) large;
        report.fact("queued_bytes_per_command", Math.round(perCommand));
        report.fact("queued_commands_to_fill_heap", Math.round(Runtime.getRuntime().maxMemory() / perCommand));

        boundedQueue(report, s, resources, keys, value);
    }

    // --8<-- [start:queue_unbounded]
    /** K commands on a connection with auto-flush off: each waits in DefaultEndpoint's commandBuffer. */
    static void queue(StatefulRedisConnection<String, String> connection, List<String> keys, String value, int k,
                      List<RedisFuture<String>> futures) {
        connection.setAutoFlushCommands(false); // nothing leaves before flushCommands()
        RedisAsyncCommands<String, String> async = connection.async();
        for (int i = 0; i < k; i++) {
            // requestQueueSize is Integer.MAX_VALUE: write() accepts every one, however many.
            futures.add(async.set(keys.get(i % keys.size()), value));
        }
    }
    // --8<-- [end:queue_unbounded]

    // --8<-- [start:queue_bounded]
    /** The fix: a bound. From the (Q+1)-th queued command on, write() refuses. */
    static ClientOptions bounded(int q) {
        return ClientOptions.builder().requestQueueSize(q).build();
    }

    /** As queue(), on a bounded connection: keeps what was accepted, counts what was refused. */
    static void queueBounded(StatefulRedisConnection<String, String> connection, List<String> keys, String value,
                             int k, List<RedisFuture<String>> accepted, Refusals refused) {
        connection.setAutoFlushCommands(false);
        RedisAsyncCommands<String, String> async = connection.async();
        for (int i = 0; i < k; i++) {
            RedisFuture<String> future = async.set(keys.get(i % keys.size()), value);
            // A refusal is a future already failed; nothing is thrown, so unchecked it goes unseen.
            if (future.toCompletableFuture().isCompletedExceptionally()) {
                refused.add(failureOf(future));
            } else {
                accepted.add(future);
            }
        }
    }
    // --8<-- [end:queue_bounded]

    /** Refused commands: how many, and what the first one said. */
    static final class Refusals {
        int count;
        Throwable first;

        void add(Throwable error) {
            count++;
            first = first == null ? error : first;
        }

        String first() {
            return first == null ? "none" : describe(first);
        }
    }

    /**
     * K = size SETs queued on a connection bounded to Q (size/10, at most 10,000): facts
     * bounded_accepted, bounded_refused, bounded_error, the heap held after GC, and the SETs
     * the server ran once the accepted ones were flushed.
     */
    static void boundedQueue(LabSupport.Report report, LabSupport.Settings s, ClientResources resources,
                             List<String> keys, String value) throws Exception {
        int q = Math.min(MAX_BOUND, Math.max(1, s.size() / 10));
        int k = s.size();
        RedisClient client = client(resources, s.host(), s.port(), QUEUE_TIMEOUT, bounded(q));
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            List<RedisFuture<String>> accepted = new ArrayList<>(q);
            Refusals refused = new Refusals();
            Map<String, Long> before = LabSupport.commandCalls(s);
            settle();
            long baseline = heapAfterGc();
            queueBounded(connection, keys, value, k, accepted, refused);
            settle(); // the refused commands linger in the timer's queue for a tick or two
            long heap = heapAfterGc() - baseline;
            connection.flushCommands();
            connection.setAutoFlushCommands(true);
            awaitAllOk(accepted, "accepted SET");
            long sets = LabSupport.callsBetween(before, LabSupport.commandCalls(s)).getOrDefault("set", 0L);
            report.fact("bounded_request_queue_size", q);
            report.fact("bounded_offered", k);
            report.fact("bounded_accepted", accepted.size());
            report.fact("bounded_refused", refused.count);
            report.fact("bounded_error", refused.first());
            report.fact("bounded_heap_mb", round1(heap / 1e6));
            report.fact("bounded_server_sets", sets);
            if (sets != accepted.size()) {
                throw LabSupport.failure("the server ran " + sets + " SETs but " + accepted.size() + " were accepted");
            }
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    /**
     * Optional part of trap 1: auto-flush ON, F SETs fired without waiting through a proxy
     * limited to SLOW_KB_S. Every write() goes straight to the channel; netty's
     * ChannelOutboundBuffer turns the channel unwritable above its high-water mark (64 KB),
     * and Lettuce never asks, so the encoded commands pile up in direct memory and the
     * commands themselves in CommandHandler's stack. Then the same with requestQueueSize(Q),
     * whose count (DefaultEndpoint's QUEUE_SIZE) goes down only when a write completes.
     */
    static void firehose(LabSupport.Report report, LabSupport.Settings s, ClientResources resources, Proxy proxy,
                         List<String> keys, String value) throws Exception {
        int f = Math.min(FIREHOSE_MAX, s.size());
        int q = Math.min(MAX_BOUND, Math.max(1, f / 10));
        report.fact("firehose_commands", f);
        report.fact("firehose_link_kb_s", SLOW_KB_S);
        for (boolean bounded : new boolean[] {false, true}) {
            String name = bounded ? "firehose_bounded" : "firehose";
            ClientOptions options = bounded ? bounded(q) : ClientOptions.create();
            RedisClient client = client(resources, proxy.host(), proxy.port(), QUEUE_TIMEOUT, options);
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                RedisAsyncCommands<String, String> async = connection.async();
                List<RedisFuture<String>> accepted = new ArrayList<>(f);
                Refusals refused = new Refusals();
                settle();
                long heapBefore = heapAfterGc();
                long directBefore = directMemory();
                Map<String, Long> before = LabSupport.commandCalls(s);
                proxy.toxics().add("slow", "bandwidth", "upstream", Map.of("rate", SLOW_KB_S));
                long start = System.nanoTime();
                for (int i = 0; i < f; i++) {
                    RedisFuture<String> future = async.set(keys.get(i % keys.size()), value);
                    if (future.toCompletableFuture().isCompletedExceptionally()) {
                        refused.add(failureOf(future));
                    } else {
                        accepted.add(future);
                    }
                }
                long loopMs = (System.nanoTime() - start) / 1_000_000;
                settle(); // the event loop takes what it was handed; refused commands leave the timer
                // Refused on the event loop meanwhile: dropped, as the application would after handling
                // them (each holds an exception with its stack trace, which is no queue cost).
                Refusals later = new Refusals();
                for (var it = accepted.iterator(); it.hasNext(); ) {
                    RedisFuture<String> future = it.next();
                    if (future.toCompletableFuture().isCompletedExceptionally()) {
                        later.add(failureOf(future));
                        it.remove();
                    }
                }
                long heap = heapAfterGc() - heapBefore;
                long direct = directMemory() - directBefore;
                long arrived = LabSupport.callsBetween(before, LabSupport.commandCalls(s)).getOrDefault("set", 0L);
                proxy.toxics().remove("slow"); // what the toxic still holds goes through at once
                // Accepted by write() is not accepted by the channel: with a bound, CommandHandler
                // refuses on the event loop once Q commands await their replies.
                int ok = 0;
                long deadline = System.nanoTime() + QUEUE_TIMEOUT.toNanos();
                for (RedisFuture<String> future : accepted) {
                    try {
                        future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                        ok++;
                    } catch (ExecutionException | CancellationException | TimeoutException e) {
                        later.add(unwrap(e));
                    }
                }
                long sets = LabSupport.callsBetween(before, LabSupport.commandCalls(s)).getOrDefault("set", 0L);
                report.fact(name + "_loop_ms", loopMs);
                report.fact(name + "_applied_when_loop_ended", arrived);
                report.fact(name + "_heap_mb", round1(heap / 1e6));
                report.fact(name + "_direct_mb", directBefore < 0 ? -1 : round1(direct / 1e6));
                report.fact(name + "_ok", ok);
                report.fact(name + "_server_sets", sets);
                if (bounded) {
                    report.fact(name + "_request_queue_size", q);
                    report.fact(name + "_refused_at_call", refused.count);
                    report.fact(name + "_refused_later", later.count);
                    report.fact(name + "_error_at_call", refused.first());
                    report.fact(name + "_error_later", later.first());
                } else if (later.count + refused.count > 0) {
                    throw LabSupport.failure((later.count + refused.count) + " of " + f + " unbounded SETs failed: "
                            + (later.count > 0 ? later.first() : refused.first()));
                }
                if (sets != ok) {
                    throw LabSupport.failure("the server ran " + sets + " SETs but " + ok + " futures succeeded");
                }
            } finally {
                proxy.toxics().removeOurs();
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }

    /** Direct memory held by netty's default allocator (AbstractRedisClient gives Lettuce that one); -1 if unknown. */
    static long directMemory() {
        return ByteBufAllocator.DEFAULT instanceof ByteBufAllocatorMetricProvider provider
                ? provider.metric().usedDirectMemory() : -1;
    }

    // ================================================================ 2. in-flight replay

    static final List<String> REPLAY_SCENARIOS = List.of("default", "replay_filter", "no_reconnect", "reject");

    // --8<-- [start:replay_options]
    static ClientOptions replayOptions(String scenario) {
        return switch (scenario) {
            // AT_LEAST_ONCE: commands without a reply when the channel closes are written again.
            case "default" -> ClientOptions.create();
            // Tested only for commands written while disconnected, or whose write failed.
            case "replay_filter" -> ClientOptions.builder().replayFilter(command -> true).build();
            // AT_MOST_ONCE, and DisconnectedBehavior.DEFAULT then rejects: in-flight commands fail.
            case "no_reconnect" -> ClientOptions.builder().autoReconnect(false).build();
            // Reconnects, but fails what was in flight and refuses commands until connected.
            case "reject" -> ClientOptions.builder()
                    .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS).build();
            default -> throw new IllegalArgumentException(scenario);
        };
    }
    // --8<-- [end:replay_options]

    static String replayKey(String scenario) {
        return LabSupport.key("ch08", "lettuce", "replay", scenario);
    }

    /**
     * Which connection a scenario watches: the local address of the first activation after
     * the watch is set (its own connect()), so a late event of the previous scenario's
     * connection, closed moments ago, cannot pass for this one's drop.
     */
    static final class Watch {
        final CountDownLatch activated = new CountDownLatch(1);
        final CountDownLatch dropped = new CountDownLatch(1);
        final AtomicReference<SocketAddress> local = new AtomicReference<>();
    }

    static void replayTrap(LabSupport.Report report, LabSupport.Settings s, ClientResources resources, Jedis control,
                           Proxy proxy) throws Exception {
        AtomicReference<Watch> watch = new AtomicReference<>(new Watch());
        resources.eventBus().get().subscribe(event -> {
            Watch w = watch.get();
            if (event instanceof ConnectionActivatedEvent activated
                    && w.local.compareAndSet(null, activated.localAddress())) {
                w.activated.countDown();
            } else if (event instanceof ConnectionDeactivatedEvent deactivated
                    && deactivated.localAddress().equals(w.local.get())) {
                w.dropped.countDown();
            }
        });
        report.fact("replay_incrs", REPLAY_N);
        report.fact("replay_reset_after_ms", RESET_AFTER_MS);
        report.fact("replay_command_timeout_s", REPLAY_TIMEOUT.toSeconds());
        for (String scenario : REPLAY_SCENARIOS) {
            Watch w = new Watch();
            watch.set(w);
            replay(report, s, resources, control, proxy, scenario, w);
        }
    }

    // --8<-- [start:replay_drop]
    /** N INCRs flushed at once; the proxy drops the connection while they are in flight. */
    static List<RedisFuture<Long>> incrsThroughDrop(StatefulRedisConnection<String, String> connection, String key,
                                                   int n) {
        List<RedisFuture<Long>> futures = new ArrayList<>(n);
        connection.setAutoFlushCommands(false);
        for (int i = 0; i < n; i++) {
            futures.add(connection.async().incr(key));
        }
        connection.flushCommands(); // all N on the wire; what has no reply at the drop is in flight
        connection.setAutoFlushCommands(true);
        return futures;
    }
    // --8<-- [end:replay_drop]

    static void awaitDrop(Watch watch, Proxy proxy) throws InterruptedException {
        if (!watch.dropped.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
            throw LabSupport.failure("the connection through proxy '" + proxy.toxics().proxy
                    + "' was not dropped within " + WAIT.toSeconds() + " s");
        }
    }

    /**
     * One scenario: N INCRs flushed at once, the connection dropped while they are in flight
     * (every one has been written: CommandHandler#addToStack put it on the stack), one more INCR
     * issued while the connection is down, then the toxics removed and every future awaited.
     * Facts replay_<scenario>_...: futures_ok, futures_failed, errors (count x message), counter (final),
     * applied_first (what the dropped connection applied), duplicates (applied twice),
     * late (the INCR issued while down: ok / its error) and late_applied, and
     * usable_after (a PING answered within 1 s; ping_error if not).
     */
    static void replay(LabSupport.Report report, LabSupport.Settings s, ClientResources resources, Jedis control,
                       Proxy proxy, String scenario, Watch watch) throws Exception {
        String key = replayKey(scenario);
        String lateKey = key + ":late";
        String p = "replay_" + scenario + "_";
        RedisClient client = client(resources, proxy.host(), proxy.port(), REPLAY_TIMEOUT, replayOptions(scenario));
        try {
            StatefulRedisConnection<String, String> connection = client.connect();
            long id = connection.sync().clientId(); // handshake done before the toxics exist
            if (!watch.activated.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw LabSupport.failure("Lettuce reported no ConnectionActivatedEvent for its connection within "
                        + WAIT.toSeconds() + " s");
            }
            proxy.toxics().addDrop((long) REPLAY_N * Toxics.incrBytes(key), PASS_MS, RESET_AFTER_MS);
            List<RedisFuture<Long>> futures = incrsThroughDrop(connection, key, REPLAY_N);
            awaitDrop(watch, proxy);
            RedisFuture<Long> late = connection.async().incr(lateKey); // written while disconnected
            proxy.toxics().removeDrop();

            long deadline = System.nanoTime() + REPLAY_TIMEOUT.plusSeconds(3).toNanos();
            Toxics.Outcomes outcomes = Toxics.awaitIncrs(futures, deadline, e -> describe(unwrap(e)));
            int ok = outcomes.ok();
            long lowest = outcomes.lowest();
            Map<String, Integer> errors = outcomes.errors(); // what the failed futures said, in order
            String lateOutcome;
            try {
                lateOutcome = "ok " + late.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (ExecutionException | CancellationException | TimeoutException e) {
                lateOutcome = describe(unwrap(e));
            }
            // Reconnected? A PING every 50 ms for up to 1 s (REJECT_COMMANDS refuses it until then).
            String pingError = null;
            long pingDeadline = System.nanoTime() + Duration.ofSeconds(1).toNanos();
            do {
                try {
                    connection.sync().ping();
                    pingError = null;
                    break;
                } catch (RuntimeException e) {
                    pingError = describe(e);
                    Thread.sleep(50);
                }
            } while (System.nanoTime() < pingDeadline);
            Toxics.awaitServerClosed(control, id); // the dropped connection's last INCRs are in the count
            long counter = Toxics.counter(control, key);
            // An INCR's reply is the counter after it, so the lowest reply - 1 is what the dropped
            // connection had applied when the first re-sent command ran; with no reply, all of it.
            long appliedFirst = ok > 0 ? lowest - 1 : counter;
            report.fact(p + "futures_ok", ok);
            report.fact(p + "futures_failed", outcomes.failed());
            StringBuilder said = new StringBuilder();
            errors.forEach((error, count) -> said.append(said.length() == 0 ? "" : "; ")
                    .append(count).append(" x ").append(error));
            report.fact(p + "errors", errors.isEmpty() ? "none" : said.toString());
            report.fact(p + "counter", counter);
            report.fact(p + "applied_first", appliedFirst);
            report.fact(p + "duplicates", Math.max(0, counter - REPLAY_N));
            report.fact(p + "late", lateOutcome);
            report.fact(p + "late_applied", Toxics.counter(control, lateKey) > 0);
            report.fact(p + "usable_after", pingError == null);
            if (pingError != null) {
                report.fact(p + "ping_error", pingError);
            }
            connection.close();
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    // ================================================================ 3. a shared connection's state

    static void sharedTrap(LabSupport.Report report, LabSupport.Settings s, ClientResources resources, Jedis control)
            throws Exception {
        String keyA = LabSupport.key("ch08", "lettuce", "multi:a");
        String keyB = LabSupport.key("ch08", "lettuce", "multi:b");
        String list = LabSupport.key("ch08", "lettuce", "blpop:list");
        String keyG = LabSupport.key("ch08", "lettuce", "blpop:b");
        control.set(keyG, "b");
        RedisClient client = client(resources, s.host(), s.port(), BLOCKING_TIMEOUT, ClientOptions.create());
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try (StatefulRedisConnection<String, String> shared = client.connect();
             StatefulRedisConnection<String, String> dedicated = client.connect()) {
            for (boolean exec : new boolean[] {false, true}) {
                String p = exec ? "multi_exec_" : "multi_shared_";
                control.del(keyA, keyB);
                long[] result = multiBeside(threads, shared, shared, keyA, keyB, exec);
                report.fact(p + "b_returned", result[0] == Long.MIN_VALUE ? "null" : String.valueOf(result[0]));
                report.fact(p + "b_applied", control.get(keyB) != null);
                report.fact(p + "b_ms", round1(result[1] / 1e3));
                if (exec) {
                    report.fact(p + "results", result[2]); // EXEC's replies: A queued one command
                }
            }
            control.del(keyA, keyB);
            long[] fixed = multiBeside(threads, dedicated, shared, keyA, keyB, false);
            report.fact("multi_dedicated_b_returned", fixed[0] == Long.MIN_VALUE ? "null" : String.valueOf(fixed[0]));
            report.fact("multi_dedicated_b_applied", control.get(keyB) != null);
            report.fact("multi_dedicated_b_ms", round1(fixed[1] / 1e3));

            report.fact("blpop_timeout_s", 1);
            report.fact("blpop_shared_get_ms", round1(getBesideBlpop(threads, shared, shared, list, keyG)));
            report.fact("blpop_dedicated_get_ms", round1(getBesideBlpop(threads, dedicated, shared, list, keyG)));
        } finally {
            threads.shutdownNow();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    // --8<-- [start:shared_multi]
    /**
     * Thread A: MULTI, SET, 200 ms of work, then DISCARD (or EXEC) on connection `a`. Thread B,
     * meanwhile, INCR on connection `b`. With a == b, StatefulRedisConnectionImpl sees a
     * transaction open (isMulti()) and queues B's INCR in it; the sync API then returns null at once.
     * Returns B's reply (Long.MIN_VALUE for null), B's microseconds and EXEC's reply count.
     */
    static long[] multiBeside(ExecutorService threads, StatefulRedisConnection<String, String> a,
                              StatefulRedisConnection<String, String> b, String keyA, String keyB, boolean exec)
            throws Exception {
        CountDownLatch inTransaction = new CountDownLatch(1);
        Future<Integer> threadA = threads.submit(() -> {
            RedisCommands<String, String> sync = a.sync();
            sync.multi();
            sync.set(keyA, "a");
            inTransaction.countDown();
            Thread.sleep(200);
            return exec ? sync.exec().size() : (sync.discard() == null ? -1 : 0);
        });
        inTransaction.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        long start = System.nanoTime();
        Long reply = b.sync().incr(keyB);
        long micros = (System.nanoTime() - start) / 1_000;
        int results = LabSupport.await(threadA);
        return new long[] {reply == null ? Long.MIN_VALUE : reply, micros, results};
    }
    // --8<-- [end:shared_multi]

    // --8<-- [start:shared_blpop]
    /** Thread A blocks for 1 s in BLPOP on `a`; 100 ms in, B's GET on `b`: B's wait in ms. */
    static double getBesideBlpop(ExecutorService threads, StatefulRedisConnection<String, String> a,
                                 StatefulRedisConnection<String, String> b, String list, String key) throws Exception {
        Future<?> threadA = threads.submit(() -> a.sync().blpop(1, list)); // the list stays empty
        Thread.sleep(100);
        long start = System.nanoTime();
        b.sync().get(key); // on the same connection it waits behind BLPOP's reply
        double ms = (System.nanoTime() - start) / 1e6;
        LabSupport.await(threadA);
        return ms;
    }
    // --8<-- [end:shared_blpop]

    // ================================================================ 4. a poisoned pool

    /**
     * ConnectionPoolSupport.createGenericObjectPool, one connection. Borrower 1 turns auto-flush
     * off, queues INCRs and gives the connection back; the pool's factory (RedisPooledObjectFactory)
     * has no passivateObject, so the connection comes back as it was left. Borrower 2's sync GET.
     */
    static void poolTrap(LabSupport.Report report, LabSupport.Settings s, ClientResources resources, Jedis control)
            throws Exception {
        int incrs = 10;
        String poisoned = LabSupport.key("ch08", "lettuce", "pool:poisoned");
        String fixed = LabSupport.key("ch08", "lettuce", "pool:fixed");
        RedisClient client = client(resources, s.host(), s.port(), TIMEOUT, ClientOptions.create());
        GenericObjectPoolConfig<StatefulRedisConnection<String, String>> config = new GenericObjectPoolConfig<>();
        config.setMaxTotal(1);
        config.setMaxWait(WAIT); // borrowObject waits at most this long (commons-pool2's default: forever)
        GenericObjectPool<StatefulRedisConnection<String, String>> pool =
                ConnectionPoolSupport.createGenericObjectPool(client::connect, config);
        try {
            report.fact("pool_command_timeout_s", TIMEOUT.toSeconds());
            Map<String, Long> before = LabSupport.commandCalls(s);
            List<RedisFuture<Long>> first = leaveUnflushed(pool, poisoned, incrs);
            long start = System.nanoTime();
            String outcome = nextBorrowerGet(pool, poisoned);
            long waitedMs = (System.nanoTime() - start) / 1_000_000;
            long appliedWhenB2Failed = Toxics.counter(control, poisoned);
            // Borrower 1's INCRs expire TIMEOUT after their write() (CommandExpiryWriter's timer).
            // A flush before that would still send them, late and on another borrower's watch.
            int b1Failed = 0;
            String b1Error = "none";
            for (RedisFuture<Long> future : first) {
                try {
                    future.get(TIMEOUT.plusSeconds(1).toMillis(), TimeUnit.MILLISECONDS);
                } catch (ExecutionException | CancellationException | TimeoutException e) {
                    b1Failed++;
                    b1Error = describe(unwrap(e));
                }
            }
            // A third borrower flushes: expired and cancelled commands are skipped, nothing is sent.
            try (StatefulRedisConnection<String, String> connection = pool.borrowObject()) {
                connection.setAutoFlushCommands(true);
                connection.flushCommands();
                connection.sync().ping();
            }
            Map<String, Long> sent = LabSupport.callsBetween(before, LabSupport.commandCalls(s));
            report.fact("pool_b2_ms", waitedMs);
            report.fact("pool_b2_outcome", outcome);
            report.fact("pool_b1_applied_when_b2_failed", appliedWhenB2Failed);
            report.fact("pool_b1_futures_failed", b1Failed);
            report.fact("pool_b1_error", b1Error);
            report.fact("pool_b1_applied_after_flush", Toxics.counter(control, poisoned));
            report.fact("pool_server_incrs", sent.getOrDefault("incr", 0L));
            report.fact("pool_server_gets", sent.getOrDefault("get", 0L) - 1); // less the control connection's GET

            flushBeforeReturn(pool, fixed, incrs);
            start = System.nanoTime();
            String value;
            try (StatefulRedisConnection<String, String> connection = pool.borrowObject()) {
                value = connection.sync().get(fixed);
            }
            report.fact("pool_fixed_b2_ms", round1((System.nanoTime() - start) / 1e6));
            report.fact("pool_fixed_b2_value", value == null ? "null" : value);
        } finally {
            pool.close();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    // --8<-- [start:pool_poison]
    /** Borrower 1: auto-flush off, INCRs queued, and the connection back in the pool as it is. */
    static List<RedisFuture<Long>> leaveUnflushed(GenericObjectPool<StatefulRedisConnection<String, String>> pool,
                                                  String key, int incrs) throws Exception {
        List<RedisFuture<Long>> replies = new ArrayList<>();
        try (StatefulRedisConnection<String, String> connection = pool.borrowObject()) {
            connection.setAutoFlushCommands(false);
            for (int i = 0; i < incrs; i++) {
                replies.add(connection.async().incr(key));
            }
        } // close() gives it back: auto-flush still off, the INCRs still buffered
        return replies;
    }

    /** Borrower 2: a plain sync GET, written into the same buffer and never sent; waits for the timeout. */
    static String nextBorrowerGet(GenericObjectPool<StatefulRedisConnection<String, String>> pool, String key)
            throws Exception {
        try (StatefulRedisConnection<String, String> connection = pool.borrowObject()) {
            return "ok " + connection.sync().get(key);
        } catch (RuntimeException e) {
            return describe(e);
        }
    }
    // --8<-- [end:pool_poison]

    // --8<-- [start:pool_fixed]
    /** The fix: whatever happens, the connection goes back flushed and with auto-flush on. */
    static void flushBeforeReturn(GenericObjectPool<StatefulRedisConnection<String, String>> pool, String key,
                                  int incrs) throws Exception {
        try (StatefulRedisConnection<String, String> connection = pool.borrowObject()) {
            connection.setAutoFlushCommands(false);
            try {
                List<RedisFuture<Long>> replies = new ArrayList<>();
                for (int i = 0; i < incrs; i++) {
                    replies.add(connection.async().incr(key));
                }
                connection.flushCommands();
                awaitAllOk(replies, "pooled INCR");
            } finally {
                connection.setAutoFlushCommands(true); // the state the next borrower expects
                connection.flushCommands();            // nothing left behind in the buffer
            }
        }
    }
    // --8<-- [end:pool_fixed]

    // ================================================================ 5. sync() with auto-flush off

    static void syncTrap(LabSupport.Report report, LabSupport.Settings s, ClientResources resources, Jedis control)
            throws Exception {
        String key = LabSupport.key("ch08", "lettuce", "sync");
        control.set(key, "x");
        RedisClient client = client(resources, s.host(), s.port(), TIMEOUT, ClientOptions.create());
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            Map<String, Long> before = LabSupport.commandCalls(s);
            connection.setAutoFlushCommands(false);
            long start = System.nanoTime();
            String outcome = syncWithAutoFlushOff(connection, key);
            long waitedMs = (System.nanoTime() - start) / 1_000_000;
            connection.flushCommands(); // the cancelled GET is skipped
            long sentGets = LabSupport.callsBetween(before, LabSupport.commandCalls(s)).getOrDefault("get", 0L);
            report.fact("sync_off_ms", waitedMs);
            report.fact("sync_off_outcome", outcome);
            report.fact("sync_off_gets_sent_after_flush", sentGets);

            start = System.nanoTime();
            String value = asyncThenFlush(connection, key);
            report.fact("sync_fixed_ms", round1((System.nanoTime() - start) / 1e6));
            report.fact("sync_fixed_value", value == null ? "null" : value);
            connection.setAutoFlushCommands(true);
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    // --8<-- [start:sync_off]
    /** A sync GET on a connection with auto-flush off: FutureSyncInvocationHandler waits on a command in the buffer. */
    static String syncWithAutoFlushOff(StatefulRedisConnection<String, String> connection, String key) {
        try {
            return "ok " + connection.sync().get(key);
        } catch (RuntimeException e) {
            return describe(e); // after the command timeout; awaitOrCancel cancels the GET
        }
    }
    // --8<-- [end:sync_off]

    // --8<-- [start:sync_fixed]
    /** The fix: the async API, and the caller flushes. */
    static String asyncThenFlush(StatefulRedisConnection<String, String> connection, String key) throws Exception {
        RedisFuture<String> reply = connection.async().get(key);
        connection.flushCommands(); // with auto-flush off, the caller sends
        return reply.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    }
    // --8<-- [end:sync_fixed]

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

    /** Heap in use after full collections: what is still reachable. */
    static long heapAfterGc() throws InterruptedException {
        for (int i = 0; i < 2; i++) {
            System.gc();
        }
        Thread.sleep(20);
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** Every future completes without error within QUEUE_TIMEOUT, or the example fails. */
    static <T> void awaitAllOk(List<RedisFuture<T>> futures, String what) throws Exception {
        long deadline = System.nanoTime() + QUEUE_TIMEOUT.toNanos();
        for (RedisFuture<T> future : futures) {
            try {
                future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (ExecutionException | TimeoutException | CancellationException e) {
                throw LabSupport.failure("a " + what + " failed: " + describe(unwrap(e)));
            }
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
