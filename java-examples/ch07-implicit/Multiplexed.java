///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.redisson:redisson:4.7.0
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LabTiming.java
//SOURCES ../common/RedissonSupport.java
//SOURCES ../common/LettuceSupport.java

// Chapter 7: pipelining that nobody asked for. Many threads each send one blocking command at a
// time; no code pipelines, yet on one shared Lettuce connection the commands of different threads
// travel together, and the server finds several in one read. For each thread count T, `size`
// INCRs split over T threads through
//   Jedis      a pool of T connections, one command per connection at a time (the baseline);
//   Lettuce    ONE StatefulRedisConnection shared by all T threads;
//   Redisson   a sync RAtomicLong.incrementAndGet(), over Redisson's own pool of connections.
// Around each run the server's INFO stats give commands per read(): about 1 means every command
// came alone, more means the client's writes carried several. A second part measures what the
// sharing costs: readers doing small GETs on the shared Lettuce connection, alone, while another
// thread sends a slow LRANGE with a big reply on the SAME connection, and on a separate one.
// `clients` picks some of the three (chapter 10 reads Jedis and Lettuce only); listLength 0 leaves the
// second part out.
//
//   jbang ch07-mux [host] [port] [size] [repeat] [warmup] threads listLength [readers] [holdMs] [clients]
//   e.g.  jbang ch07-mux 127.0.0.1 "$PIPELAB_PORT" 20000 3 1 1,8,64 200000 8 2000  (the notebook passes chapter 7's)

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;

import org.redisson.Redisson;
import org.redisson.api.RAtomicLong;
import org.redisson.api.RedissonClient;

import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.util.SafeEncoder;

import pipelab.LettuceSupport;

public class Multiplexed {

    static final String EXAMPLE = "ch07-mux";
    /** Connection names, so CLIENT LIST tells the clients apart (Redisson's stay unnamed). */
    static final String CONTROL_NAME = "pipelab-ch07-control";
    static final String LETTUCE_NAME = "pipelab-ch07-lettuce";
    static final String JEDIS_NAME = "pipelab-ch07-jedis";
    /** Elements per RPUSH while building the big list. */
    static final int PUSH_CHUNK = 1_000;
    /** Upper bound on a thread count: beyond it the run measures the scheduler, not Redis. */
    static final int MAX_THREADS = 512;

    public static void main(String[] args) {
        String[] extra = LabSupport.extra(args);
        LabSupport.run(EXAMPLE, LabSupport.usual(args), 20_000, 3, s -> bench(s, extra));
    }

    static final List<String> CLIENTS = List.of("jedis", "lettuce", "redisson");

    record Params(List<Integer> threads, int listLength, int readers, int holdMs, List<String> clients) {
    }

    static Params params(String[] extra) {
        if (extra.length > 5) {
            throw new LabSupport.Stop(2, EXAMPLE + ": expected at most 5 arguments after the usual five"
                    + " (threads listLength readers holdMs clients) but got " + extra.length + ".");
        }
        List<Integer> threads = extra.length > 0 ? LabSupport.intList(EXAMPLE, "threads", extra[0]) : List.of(1, 8, 64);
        if (threads.stream().anyMatch(t -> t > MAX_THREADS)) {
            throw new LabSupport.Stop(2, EXAMPLE + ": threads must be at most " + MAX_THREADS + ", not " + threads + ".");
        }
        int listLength = extra.length < 2 ? 200_000
                : extra[1].equals("0") ? 0 : LabSupport.intList(EXAMPLE, "listLength", extra[1]).get(0);
        int readers = extra.length > 2 ? LabSupport.intList(EXAMPLE, "readers", extra[2]).get(0) : 8;
        int holdMs = extra.length > 3 ? LabSupport.intList(EXAMPLE, "holdMs", extra[3]).get(0) : 2_000;
        if (readers > MAX_THREADS) {
            throw new LabSupport.Stop(2, EXAMPLE + ": readers must be at most " + MAX_THREADS + ", not " + readers + ".");
        }
        List<String> clients = extra.length > 4 ? List.of(extra[4].split(",")) : CLIENTS;
        if (clients.isEmpty() || !CLIENTS.containsAll(clients)) {
            throw new LabSupport.Stop(2, EXAMPLE + ": clients must be some of " + String.join(",", CLIENTS)
                    + ", not " + extra[4] + ".");
        }
        return new Params(threads, listLength, readers, holdMs, clients);
    }

    static void bench(LabSupport.Settings s, String[] extra) throws Exception {
        Params p = params(extra);
        String lettuceKey = LabSupport.key("ch07", "mux", "lettuce");
        String redissonKey = LabSupport.key("ch07", "mux", "redisson");
        String jedisKey = LabSupport.key("ch07", "mux", "jedis");
        String small = LabSupport.key("ch07", "mux", "small");
        String list = LabSupport.key("ch07", "mux", "list");
        List<String> keys = List.of(lettuceKey, redissonKey, jedisKey, small, list);
        LabSupport.Report report = new LabSupport.Report(s)
                // The manifest says e.g. "7.7.0.RELEASE/1960d49": keep the version, drop the commit.
                .client("lettuce", LabSupport.versionOf(RedisClient.class, "io.lettuce", "lettuce-core",
                        "7.7.0.RELEASE").split("/")[0])
                .client("redisson", LabSupport.versionOf(Redisson.class, "org.redisson", "redisson", "4.7.0"))
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"));

        try (Jedis control = LabSupport.connect(s)) {
            LabSupport.requireLabOnly(control, s);
            control.clientSetname(CONTROL_NAME);
            RedisClient lettuce = null;
            RedissonClient redisson = null;
            try {
                lettuce = LettuceSupport.client(LettuceSupport.uri(s.host(), s.port())
                        .withClientName(LETTUCE_NAME).build());
                StatefulRedisConnection<String, String> shared = lettuce.connect();
                // Redisson's connections are the unnamed ones it adds to what is there already.
                int unnamedBefore = LabSupport.connectionsNamed(control, "");
                if (p.clients().contains("redisson")) {
                    redisson = Redisson.create(RedissonSupport.config(s));
                    report.fact("redisson_connections_at_start",
                            LabSupport.connectionsNamed(control, "") - unnamedBefore);
                }
                report.header(s.size() + " INCRs split over " + p.threads() + " threads per client ("
                        + String.join(", ", p.clients()) + ")" + (p.listLength() == 0 ? "" : ", then " + p.readers()
                        + " readers' GETs beside a slow LRANGE of " + p.listLength() + " elements"));

                for (int threads : p.threads()) {
                    ExecutorService pool = Executors.newFixedThreadPool(threads);
                    try {
                        if (p.clients().contains("jedis")) {
                            jedisPooled(report, s, control, pool, threads, jedisKey);
                        }
                        if (p.clients().contains("lettuce")) {
                            RedisCommands<String, String> sync = shared.sync();
                            run(report, s, control, "lettuce_t" + threads, "lettuce 1 conn t" + threads, lettuceKey,
                                    () -> LabSupport.split(pool, threads, s.size(), () -> lettuceIncr(sync, lettuceKey)),
                                    () -> LabSupport.connectionsNamed(control, LETTUCE_NAME));
                        }
                        if (redisson != null) {
                            RAtomicLong counter = redisson.getAtomicLong(redissonKey);
                            run(report, s, control, "redisson_t" + threads, "redisson t" + threads, redissonKey,
                                    () -> LabSupport.split(pool, threads, s.size(), () -> redissonIncr(counter)),
                                    () -> LabSupport.connectionsNamed(control, "") - unnamedBefore);
                        }
                    } finally {
                        pool.shutdownNow();
                    }
                }

                if (p.listLength() > 0) {
                    headOfLine(report, s, control, lettuce, shared, p, small, list);
                }
            } finally {
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

    /** The Jedis baseline for one thread count: a pool of exactly `threads` connections, opened before the run. */
    static void jedisPooled(LabSupport.Report report, LabSupport.Settings s, Jedis control, ExecutorService pool,
                            int threads, String key) throws Exception {
        ConnectionPoolConfig config = new ConnectionPoolConfig();
        config.setMaxTotal(threads);
        config.setMaxIdle(threads);
        try (redis.clients.jedis.RedisClient pooled = redis.clients.jedis.RedisClient.builder()
                .hostAndPort(s.host(), s.port())
                .clientConfig(LabSupport.jedisConfig(s, DefaultJedisClientConfig.builder().clientName(JEDIS_NAME)))
                .poolConfig(config).build()) {
            pooled.getPool().addObjects(threads); // connection set-up stays out of the server's counters
            run(report, s, control, "jedis_pool_t" + threads, "jedis pool t" + threads, key,
                    () -> LabSupport.split(pool, threads, s.size(), () -> jedisIncr(pooled, key)),
                    () -> LabSupport.connectionsNamed(control, JEDIS_NAME));
        }
    }

    interface Count {
        int get() throws Exception;
    }

    /**
     * Times one client's INCRs and reads the server's counters around all of its iterations:
     * facts <mode>_cmds_per_read, <mode>_server_reads and <mode>_connections (open right after).
     */
    static void run(LabSupport.Report report, LabSupport.Settings s, Jedis control, String mode, String label,
                    String key, LabSupport.Step task, Count connections) throws Exception {
        control.del(key);
        Map<String, Long> callsBefore = LabSupport.commandCalls(s);
        Map<String, Long> before = LabSupport.infoNumbers(control, "stats");
        LabSupport.Samples samples = LabSupport.measure(s, null, task, null);
        Map<String, Long> after = LabSupport.infoNumbers(control, "stats");
        int open = connections.get(); // before commandCalls opens and closes a connection of its own
        Map<String, Long> calls = LabSupport.callsBetween(callsBefore, LabSupport.commandCalls(s));
        calls.remove("client|list"); // the count of connections just above, not the mode's
        long expected = (long) s.size() * samples.iterations();
        long value = Long.parseLong(control.get(key));
        if (value != expected) {
            throw LabSupport.failure(mode + " left the counter at " + value + " instead of " + expected);
        }
        report.add(mode, label, "INCRs", samples);
        report.wire(mode, calls);
        long commands = after.get("total_commands_processed") - before.get("total_commands_processed");
        long reads = after.get("total_reads_processed") - before.get("total_reads_processed");
        report.fact(mode + "_cmds_per_read", LabSupport.round2((double) commands / Math.max(1, reads)));
        report.fact(mode + "_server_reads", reads);
        report.fact(mode + "_connections", open);
    }

    // --8<-- [start:mux]
    /** Jedis: each call borrows a connection, writes one INCR, reads its reply, returns the connection. */
    static long jedisIncr(redis.clients.jedis.RedisClient pooled, String key) {
        return pooled.incr(key);
    }

    /**
     * Lettuce: every thread writes into the same connection and blocks on its own future; replies
     * come back in order and complete the oldest command. Commands issued while others are in
     * flight reach the socket, and the server, together: pipelining without asking.
     */
    static long lettuceIncr(RedisCommands<String, String> sync, String key) {
        return sync.incr(key);
    }

    /** Redisson: a sync call is the async one plus a wait; the command goes out on a pooled connection. */
    static long redissonIncr(RAtomicLong counter) {
        return counter.incrementAndGet();
    }

    // --8<-- [end:mux]

    // ---------------------------------------------------------------- head-of-line blocking

    /** Three cases, each `holdMs` long: readers alone, beside a slow command on the same connection, on another. */
    static void headOfLine(LabSupport.Report report, LabSupport.Settings s, Jedis control, RedisClient lettuce,
                           StatefulRedisConnection<String, String> shared, Params p, String small, String list)
            throws Exception {
        control.set(small, "v");
        long replyBytes = buildList(control, list, p.listLength());
        report.fact("list_length", p.listLength());
        report.fact("lrange_reply_bytes", replyBytes);
        report.fact("readers", p.readers());
        report.fact("hold_ms", p.holdMs());
        report.fact("slowlog_slower_than_us", Long.parseLong(control.configGet("slowlog-log-slower-than")
                .getOrDefault("slowlog-log-slower-than", "-1")));
        try (StatefulRedisConnection<String, String> separate = lettuce.connect()) {
            // Unrecorded: compiles the GET and LRANGE paths, so no case pays for the JIT.
            readersBesideSlow(shared, separate, new Params(p.threads(), p.listLength(), p.readers(),
                    Math.max(1, p.holdMs() / 4), p.clients()), small, list);
            holCase(report, s, control, "alone", shared, null, p, small, list);
            holCase(report, s, control, "shared", shared, shared, p, small, list);
            holCase(report, s, control, "separate", shared, separate, p, small, list);
        }
    }

    /** RPUSHes `length` ten-digit elements in one pipeline; returns the bytes of LRANGE's reply (RESP2). */
    static long buildList(Jedis control, String list, int length) {
        control.del(list);
        try (Pipeline pipeline = control.pipelined()) {
            for (int from = 0; from < length; from += PUSH_CHUNK) {
                String[] chunk = new String[Math.min(PUSH_CHUNK, length - from)];
                for (int i = 0; i < chunk.length; i++) {
                    chunk[i] = element(from + i);
                }
                pipeline.rpush(list, chunk);
            }
            pipeline.sync();
        }
        if (control.llen(list) != length) {
            throw LabSupport.failure("the list holds " + control.llen(list) + " elements instead of " + length);
        }
        // "*<n>\r\n", then "$10\r\n<10 digits>\r\n" per element.
        return ("*" + length + "\r\n").length() + 17L * length;
    }

    static String element(int i) {
        return String.format(Locale.ROOT, "%010d", i);
    }

    /**
     * One case: facts hol_<name>_p50_us, _p99_us, _max_us (the readers' GET latencies), _gets,
     * _slow_commands, and for the slow cases _lrange_server_us (INFO commandstats, per call) and
     * _slowlog_entries (new LRANGE entries in the slow log, which keeps slowlog-max-len of them).
     */
    static void holCase(LabSupport.Report report, LabSupport.Settings s, Jedis control, String name,
                        StatefulRedisConnection<String, String> readersConn,
                        StatefulRedisConnection<String, String> slowConn, Params p, String small, String list)
            throws Exception {
        System.gc(); // the previous case's LRANGE replies are garbage: collect them outside this one
        long lastSlowlogId = lastSlowlogId(control);
        long[] lrangeBefore = commandStat(control, "lrange");
        Hol hol = readersBesideSlow(readersConn, slowConn, p, small, list);
        long[] lrangeAfter = commandStat(control, "lrange");
        long[] sorted = hol.latencies();
        Arrays.sort(sorted);
        report.fact("hol_" + name + "_p50_us", micros(percentile(sorted, 0.50)));
        report.fact("hol_" + name + "_p99_us", micros(percentile(sorted, 0.99)));
        report.fact("hol_" + name + "_max_us", micros(sorted[sorted.length - 1]));
        report.fact("hol_" + name + "_gets", sorted.length);
        report.fact("hol_" + name + "_slow_commands", hol.slowCommands());
        if (slowConn != null) {
            long calls = lrangeAfter[0] - lrangeBefore[0];
            report.fact("hol_" + name + "_lrange_server_us", LabSupport.round2((double) (lrangeAfter[1] - lrangeBefore[1]) / calls));
            report.fact("hol_" + name + "_slowlog_entries", newSlowlogEntries(control, lastSlowlogId, "lrange"));
        }
    }

    /** The readers' latencies in nanoseconds, and how many slow commands ran meanwhile. */
    record Hol(long[] latencies, long slowCommands) {
    }

    // --8<-- [start:hol]
    /**
     * `readers` threads GET a small key on `readersConn` for holdMs and time every call. If
     * slowConn is not null, one more thread sends LRANGE list 0 -1 on it in a loop meanwhile.
     * On the same connection a GET issued after an LRANGE waits for the LRANGE's whole reply to
     * be produced, sent and decoded (by the event loop that also serves the readers); on a
     * separate connection it waits only while the single-threaded server runs the LRANGE.
     */
    static Hol readersBesideSlow(StatefulRedisConnection<String, String> readersConn,
                                 StatefulRedisConnection<String, String> slowConn, Params p, String small, String list)
            throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong slowCommands = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(p.readers() + 1);
        try {
            Future<?> slow = null;
            if (slowConn != null) {
                RedisCommands<String, String> slowSync = slowConn.sync();
                CountDownLatch started = new CountDownLatch(1);
                slow = pool.submit(() -> {
                    while (!stop.get()) {
                        started.countDown();
                        int got = slowSync.lrange(list, 0, -1).size();
                        if (got != p.listLength()) {
                            throw LabSupport.failure("LRANGE returned " + got + " of " + p.listLength() + " elements");
                        }
                        slowCommands.incrementAndGet();
                    }
                    return null;
                });
                started.await(); // the readers start with the slow command already under way
            }
            RedisCommands<String, String> sync = readersConn.sync();
            long deadline = System.nanoTime() + p.holdMs() * 1_000_000L;
            List<Future<long[]>> readers = new ArrayList<>();
            for (int r = 0; r < p.readers(); r++) {
                readers.add(pool.submit(() -> timedGets(sync, small, deadline)));
            }
            List<long[]> all = new ArrayList<>();
            for (Future<long[]> reader : readers) {
                all.add(LabSupport.await(reader));
            }
            stop.set(true);
            if (slow != null) {
                LabSupport.await(slow);
            }
            return new Hol(concat(all), slowCommands.get());
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
    }

    /** GETs until the deadline; each call's latency in nanoseconds. */
    static long[] timedGets(RedisCommands<String, String> sync, String key, long deadline) {
        long[] latencies = new long[1024];
        int n = 0;
        for (long start = System.nanoTime(); start < deadline; start = System.nanoTime()) {
            if (sync.get(key) == null) {
                throw LabSupport.failure("GET " + key + " returned nothing");
            }
            if (n == latencies.length) {
                latencies = Arrays.copyOf(latencies, 2 * n);
            }
            latencies[n++] = System.nanoTime() - start;
        }
        return Arrays.copyOf(latencies, n);
    }
    // --8<-- [end:hol]

    // ---------------------------------------------------------------- server readings

    /** {calls, usec} of one command from INFO commandstats ({0, 0} before its first call). */
    static long[] commandStat(Jedis control, String command) {
        for (String line : control.info("commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_" + command + ":")) {
                return new long[] {field(line, "calls="), field(line, "usec=")};
            }
        }
        return new long[] {0, 0};
    }

    static long field(String line, String name) {
        int at = line.indexOf(name) + name.length();
        int end = line.indexOf(',', at);
        return Long.parseLong(line.substring(at, end < 0 ? line.length() : end));
    }

    static long lastSlowlogId(Jedis control) {
        List<Object> newest = control.slowlogGetBinary(1);
        return newest.isEmpty() ? -1 : (Long) ((List<?>) newest.get(0)).get(0);
    }

    /**
     * Slow-log entries newer than `afterId` for `command` (at most the server's slowlog-max-len).
     * Read raw: Jedis's Slowlog parses each entry's client address, and one entry with an empty
     * address made slowlogGet throw (StringIndexOutOfBoundsException in HostAndPort.from).
     */
    static long newSlowlogEntries(Jedis control, long afterId, String command) {
        return control.slowlogGetBinary(1_000).stream()
                .map(entry -> (List<?>) entry) // id, time, duration, [command, args...], ...
                .filter(entry -> (Long) entry.get(0) > afterId && !((List<?>) entry.get(3)).isEmpty()
                        && command.equalsIgnoreCase(SafeEncoder.encode((byte[]) ((List<?>) entry.get(3)).get(0))))
                .count();
    }

    // ---------------------------------------------------------------- helpers

    static long[] concat(List<long[]> parts) {
        long[] all = new long[parts.stream().mapToInt(part -> part.length).sum()];
        int at = 0;
        for (long[] part : parts) {
            System.arraycopy(part, 0, all, at, part.length);
            at += part.length;
        }
        if (all.length == 0) {
            throw LabSupport.failure("the readers completed no GET at all");
        }
        return all;
    }

    /** Nearest-rank percentile of sorted values. */
    static long percentile(long[] sorted, double q) {
        int rank = (int) Math.ceil(q * sorted.length);
        return sorted[Math.max(0, rank - 1)];
    }

    static double micros(long nanos) {
        return Math.round(nanos / 100.0) / 10.0;
    }

}
