//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//SOURCES ../common/LabSupport.java

// The checker of the course kit's eight exercises. An exercise (exercises/ExNN*.java) and its
// solution (solutions/ExNN*.java) differ only in the task method, so both pull this file in
// and hand that method to ExerciseCheck.exNN(args, method):
//   //SOURCES ExerciseCheck.java               from an exercise
//   //SOURCES ../exercises/ExerciseCheck.java  from a solution
// (JBang resolves each //SOURCES line against the file that declares it: the line above
// reaches ../common/LabSupport.java from here, whoever included this file.) The Lettuce
// //DEPS is declared here because exercise 3's check compiles into every exercise; the
// exercises declare Jedis themselves, as every example does.
//
// Every check connects, refuses a Redis holding keys that are not the lab's, deletes the keys
// under its own prefix (pipelab:ex01: ... pipelab:ex08:), checks, and deletes them again.
// Exit codes: 0 solved, with "Exercise N solved: <figure>" as the last line; 1 not solved, one
// sentence saying what is wrong and where in the book to look; 2 bad arguments, Redis
// unreachable, or a Redis holding foreign keys (LabSupport's 3 and 4 folded into one code).

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;
import redis.clients.jedis.util.JedisClusterCRC16;

final class ExerciseCheck {

    /** Timed checks: one warm-up (JIT, first connection use), then three recorded runs, medians. */
    private static final int REPEAT = 3;

    /** The speed-up exercises 1 and 2 ask for. Tolerant on purpose: the lab machine is shared and noisy. */
    private static final double REQUIRED_SPEED_UP = 3.0;

    private static final int KEY_BATCH = 1000;

    private ExerciseCheck() {
    }

    /** One exercise: its number, the class and method the student writes, and the book section that teaches it. */
    record Exercise(int number, String className, String method, String section) {
        String alias() {
            return String.format(Locale.ROOT, "ex%02d", number);
        }

        /** Every key this exercise writes starts with this, and only these keys are deleted. */
        String prefix() {
            return LabSupport.key(alias()) + ":";
        }

        LabSupport.Stop notSolved(String what) {
            return new LabSupport.Stop(1, "Exercise " + number + " is not solved yet: " + what + " (" + section + ").");
        }
    }

    static final Exercise EX01 = new Exercise(1, "Ex01PipelineTheLoop", "incrAll",
            "chapter 1, 'One request, one reply, one wait'");
    static final Exercise EX02 = new Exercise(2, "Ex02ChunkABigJob", "setInChunks",
            "chapter 2, 'Throughput against depth'");
    static final Exercise EX03 = new Exercise(3, "Ex03FlushOnce", "queueAll",
            "chapter 3, 'Lettuce: every connection is a pipeline already'");
    static final Exercise EX04 = new Exercise(4, "Ex04KeepLatest", "pushKeepLatest",
            "chapter 4, 'LREM against LTRIM: a pipeline does not make a command cheaper'");
    static final Exercise EX05 = new Exercise(5, "Ex05OneSlotPerUser", "userKey",
            "chapter 5, 'CROSSSLOT, and what hash tags cost'");
    static final Exercise EX06 = new Exercise(6, "Ex06StayUnderTheBudget", "getAll",
            "chapter 6, 'Limits that cut a pipeline'");
    static final Exercise EX07 = new Exercise(7, "Ex07MoveMoney", "transfer",
            "chapter 7, 'WATCH: optimistic transactions and pipelines'");
    static final Exercise EX08 = new Exercise(8, "Ex08ChargeOnce", "charge",
            "chapter 8, 'Lettuce: a reconnect writes again what was in flight'");

    // ---------------------------------------------------------------- the tasks' shapes

    interface IncrAll {
        List<Long> incrAll(Jedis jedis, List<String> keys);
    }

    interface SetInChunks {
        int setInChunks(Jedis jedis, List<String> keys, String value, int depth);
    }

    interface QueueAll {
        List<RedisFuture<Long>> queueAll(RedisAsyncCommands<String, String> async, String key, List<String> members);
    }

    interface PushKeepLatest {
        void pushKeepLatest(Jedis jedis, String key, List<String> items, int keep);
    }

    interface UserKey {
        String userKey(String userId, String field);
    }

    interface GetAll {
        List<String> getAll(Jedis jedis, List<String> keys, int budget);
    }

    interface Transfer {
        boolean transfer(Jedis jedis, String src, String dst, long amount);
    }

    interface Charge {
        void charge(String host, int port, String account, String chargeId, List<Long> amounts) throws Exception;
    }

    // ---------------------------------------------------------------- entry point

    /** A check: returns the figure for the "solved" line, or throws a Stop. */
    private interface Check {
        String run(LabSupport.Settings s) throws Exception;
    }

    /** The part of a check that needs the lab's Redis, given a connection to it. */
    private interface LabBody {
        String run(Jedis jedis) throws Exception;
    }

    private interface StudentCall<T> {
        T call() throws Exception;
    }

    private static void run(Exercise ex, String[] args, int size, Check check) {
        int code;
        String figure = null;
        LabSupport.Settings s = null;
        try {
            s = parse(ex, args, size);
            figure = check.run(s);
            code = 0;
        } catch (LabSupport.Stop stop) {
            System.out.flush();
            System.err.println(stop.getMessage());
            code = stop.exitCode == 1 ? 1 : 2;
        } catch (JedisConnectionException | RedisConnectionException e) {
            System.out.flush();
            String where = s == null ? "the given address" : s.where();
            String reason = String.valueOf(e.getMessage()).replaceAll("\\.$", "");
            System.err.println("Lost the connection to Redis at " + where + " (" + reason
                    + "); check that it is still running and run the exercise again.");
            code = 2;
        } catch (Exception e) {
            System.out.flush();
            System.err.println(ex.alias() + ": the checker itself failed unexpectedly:");
            e.printStackTrace();
            code = 1;
        }
        if (code == 0) {
            System.out.println("Exercise " + ex.number() + " solved: " + figure);
        }
        System.out.flush();
        // Exit explicitly: Lettuce may leave non-daemon threads behind.
        System.exit(code);
    }

    private static LabSupport.Settings parse(Exercise ex, String[] args, int size) {
        String usage = "usage: jbang " + ex.alias() + " (or " + ex.alias() + "-solution) [host] [port] (defaults "
                + LabSupport.DEFAULT_HOST + " " + LabSupport.DEFAULT_PORT + ")";
        if (args.length > 0 && (args[0].equals("-h") || args[0].equals("--help"))) {
            System.out.println(usage);
            System.out.flush();
            System.exit(0);
        }
        if (args.length > 2) {
            throw new LabSupport.Stop(2, ex.alias() + ": expected at most 2 arguments (host and port) but got "
                    + args.length + "; " + usage + ".");
        }
        String host = args.length > 0 ? args[0].trim() : LabSupport.DEFAULT_HOST;
        int port = -1;
        try {
            port = args.length > 1 ? Integer.parseInt(args[1].trim()) : LabSupport.DEFAULT_PORT;
        } catch (NumberFormatException ignored) {
            // reported below, like an out-of-range port
        }
        if (host.isEmpty() || port < 1 || port > 65_535) {
            throw new LabSupport.Stop(2, ex.alias() + ": " + (host.isEmpty() ? "host must not be empty"
                    : "port must be an integer from 1 to 65535, not '" + args[1] + "'") + "; " + usage + ".");
        }
        return new LabSupport.Settings(ex.alias(), host, port, size, REPEAT, LabSupport.DEFAULT_WARMUP);
    }

    /**
     * Connects, refuses foreign keys, clears the exercise's prefix, runs the body and clears
     * the prefix again (on a fresh connection: the body's may be broken), whatever happened.
     */
    private static String inLab(Exercise ex, LabSupport.Settings s, LabBody body) throws Exception {
        try (Jedis jedis = LabSupport.connect(s)) {
            LabSupport.requireLabOnly(jedis, s);
            deletePrefix(jedis, ex.prefix());
            try {
                return body.run(jedis);
            } finally {
                try (Jedis fresh = new Jedis(s.host(), s.port())) {
                    deletePrefix(fresh, ex.prefix());
                } catch (RuntimeException e) {
                    System.err.println("Warning: could not delete the " + ex.prefix() + "* keys at " + s.where()
                            + ": " + e.getMessage());
                }
            }
        }
    }

    /** Deletes every key under `prefix`, found with SCAN, so keys of an earlier broken run go too. */
    private static void deletePrefix(Jedis jedis, String prefix) {
        ScanParams params = new ScanParams().match(prefix + "*").count(KEY_BATCH);
        List<String> found = new ArrayList<>();
        String cursor = ScanParams.SCAN_POINTER_START;
        do {
            ScanResult<String> page = jedis.scan(cursor, params);
            found.addAll(page.getResult());
            cursor = page.getCursor();
        } while (!ScanParams.SCAN_POINTER_START.equals(cursor));
        LabSupport.deleteKeys(jedis, found);
    }

    /**
     * Calls the student's method. A TODO still in place, or any exception it throws, becomes
     * the one-sentence "not solved" report; a lost connection stays what it is (exit 2).
     */
    private static <T> T student(Exercise ex, StudentCall<T> call) {
        try {
            return call.call();
        } catch (JedisConnectionException | RedisConnectionException e) {
            throw e;
        } catch (Exception e) {
            if (e instanceof UnsupportedOperationException && String.valueOf(e.getMessage()).startsWith("TODO")) {
                throw ex.notSolved(ex.method() + " still throws TODO; fill it in");
            }
            String at = "";
            for (StackTraceElement frame : e.getStackTrace()) {
                if (frame.getClassName().equals(ex.className()) || frame.getClassName().startsWith(ex.className() + "$")) {
                    at = " at " + frame.getFileName() + ":" + frame.getLineNumber();
                    break;
                }
            }
            throw ex.notSolved(ex.method() + " threw " + e.getClass().getSimpleName() + " (" + e.getMessage() + ")"
                    + at + "; fix that first");
        }
    }

    // ---------------------------------------------------------------- exercise 1

    private static final int EX01_KEYS = 10_000;

    static void ex01(String[] args, IncrAll incrAll) {
        run(EX01, args, EX01_KEYS, s -> inLab(EX01, s, jedis -> checkIncrAll(s, jedis, incrAll)));
    }

    private static String checkIncrAll(LabSupport.Settings s, Jedis jedis, IncrAll incrAll) throws Exception {
        List<String> theirs = LabSupport.keys(EX01_KEYS, EX01.alias(), "yours");
        List<String> ours = LabSupport.keys(EX01_KEYS, EX01.alias(), "loop");
        System.out.println("Exercise 1: incrAll on " + String.format(Locale.ROOT, "%,d", EX01_KEYS)
                + " new keys at " + s.where() + ", 1 warm-up and " + REPEAT + " timed runs each");

        // The student's first: a TODO or a wrong reply is reported before the slow loop runs.
        AtomicReference<List<Long>> replies = new AtomicReference<>();
        Map<String, Long> before = LabSupport.commandCalls(s);
        List<Double> yours = LabSupport.measure(s, () -> LabSupport.deleteKeys(jedis, theirs),
                () -> replies.set(student(EX01, () -> incrAll.incrAll(jedis, theirs))),
                () -> checkIncrReplies(jedis, theirs, replies.get()));
        Map<String, Long> sent = LabSupport.callsBetween(before, LabSupport.commandCalls(s));
        if (sent.containsKey("multi") || sent.containsKey("exec")) {
            throw EX01.notSolved("incrAll sent MULTI/EXEC, a transaction; use a plain jedis.pipelined(),"
                    + " not jedis.multi()");
        }
        List<Double> loop = LabSupport.measure(s, () -> LabSupport.deleteKeys(jedis, ours), () -> {
            for (String key : ours) {
                jedis.incr(key);
            }
        }, null);

        double speedUp = median(loop) / median(yours);
        System.out.println("one INCR at a time (checker): " + spread(loop));
        System.out.println("incrAll (yours):              " + spread(yours));
        System.out.println(String.format(Locale.ROOT, "speed-up: %.1fx (at least %.0fx needed)", speedUp,
                REQUIRED_SPEED_UP));
        if (speedUp < REQUIRED_SPEED_UP) {
            throw EX01.notSolved(String.format(Locale.ROOT, "incrAll ran only %.1fx as fast as one INCR at a time"
                    + " (at least %.0fx needed); queue every INCR on one jedis.pipelined() and sync() once, so"
                    + " they share one round trip", speedUp, REQUIRED_SPEED_UP));
        }
        return String.format(Locale.ROOT, "%,d INCRs pipelined in %s s against %s s one by one, %.1fx faster"
                + " (medians)", EX01_KEYS, seconds(median(yours)), seconds(median(loop)), speedUp);
    }

    private static void checkIncrReplies(Jedis jedis, List<String> keys, List<Long> replies) {
        if (replies == null || replies.size() != keys.size()) {
            throw EX01.notSolved(String.format(Locale.ROOT, "incrAll returned %s for %,d keys; return one reply"
                    + " per key, in order", replies == null ? "null"
                    : String.format(Locale.ROOT, "%,d replies", replies.size()), keys.size()));
        }
        for (int i = 0; i < replies.size(); i++) {
            if (!Long.valueOf(1).equals(replies.get(i))) {
                throw EX01.notSolved("reply " + i + " is " + replies.get(i) + ", but INCR of a new key replies 1;"
                        + " return each INCR's reply, in the order of the keys");
            }
        }
        requireValues(EX01, jedis, keys, "1", "after incrAll");
    }

    // ---------------------------------------------------------------- exercise 2

    private static final int EX02_KEYS = 20_000;
    private static final int[] EX02_DEPTHS = {1, 10, 100, 1000};
    private static final int EX02_COMPARED_DEPTH = 100;

    static void ex02(String[] args, SetInChunks setInChunks) {
        run(EX02, args, EX02_KEYS, s -> inLab(EX02, s, jedis -> checkSetInChunks(s, jedis, setInChunks)));
    }

    private static String checkSetInChunks(LabSupport.Settings s, Jedis jedis, SetInChunks setInChunks)
            throws Exception {
        List<String> keys = LabSupport.keys(EX02_KEYS, EX02.alias(), "key");
        System.out.println(String.format(Locale.ROOT, "Exercise 2: setInChunks on %,d keys at %s, depths %s,"
                + " a warm-up pass over all depths, then %d timed runs each", EX02_KEYS, s.where(), Arrays.toString(EX02_DEPTHS),
                REPEAT));
        // One unrecorded pass over every depth first: timed first and cold (JIT, first use of
        // each code path), depth 1 would look slower than it is, to the benefit of every other depth.
        LabSupport.Settings once = new LabSupport.Settings(s.example(), s.host(), s.port(), s.size(), 1, 0);
        for (int depth : EX02_DEPTHS) {
            timeDepth(once, jedis, keys, setInChunks, depth);
        }
        LabSupport.Settings timed = new LabSupport.Settings(s.example(), s.host(), s.port(), s.size(), REPEAT, 0);
        Map<Integer, Double> opsPerSecond = new LinkedHashMap<>();
        for (int depth : EX02_DEPTHS) {
            List<Double> runs = timeDepth(timed, jedis, keys, setInChunks, depth);
            double ops = EX02_KEYS / median(runs);
            opsPerSecond.put(depth, ops);
            System.out.println(String.format(Locale.ROOT, "depth %4d: %,10.0f SETs/s  %,6d pipelines  %s  %.1fx depth 1",
                    depth, ops, chunks(depth), spread(runs), ops / opsPerSecond.get(1)));
        }
        double gain = opsPerSecond.get(EX02_COMPARED_DEPTH) / opsPerSecond.get(1);
        if (gain < REQUIRED_SPEED_UP) {
            throw EX02.notSolved(String.format(Locale.ROOT, "at depth %d setInChunks moves only %.1fx the SETs per"
                    + " second of depth 1 (at least %.0fx needed); the speed should grow with depth: one"
                    + " pipeline per chunk of up to depth SETs, synced once per chunk", EX02_COMPARED_DEPTH, gain,
                    REQUIRED_SPEED_UP));
        }
        return String.format(Locale.ROOT, "depth %d moves %,.0f SETs/s, %.1fx the %,.0f of depth 1 (medians)",
                EX02_COMPARED_DEPTH, opsPerSecond.get(EX02_COMPARED_DEPTH), gain, opsPerSecond.get(1));
    }

    /** setInChunks at one depth, s.repeat() times on fresh keys, each run's count and keys checked. */
    private static List<Double> timeDepth(LabSupport.Settings s, Jedis jedis, List<String> keys,
                                          SetInChunks setInChunks, int depth) throws Exception {
        String value = "depth-" + depth; // a value per depth, so a run cannot pass on an earlier one's keys
        AtomicInteger synced = new AtomicInteger();
        return LabSupport.measure(s, () -> LabSupport.deleteKeys(jedis, keys),
                () -> synced.set(student(EX02, () -> setInChunks.setInChunks(jedis, keys, value, depth))),
                () -> {
                    if (synced.get() != chunks(depth)) {
                        throw EX02.notSolved(String.format(Locale.ROOT, "at depth %d setInChunks returned %d but"
                                + " %,d keys in pipelines of at most %d make %,d; sync() after every chunk and return"
                                + " how many times you synced", depth, synced.get(), EX02_KEYS, depth, chunks(depth)));
                    }
                    requireValues(EX02, jedis, keys, value, "after setInChunks at depth " + depth);
                });
    }

    /** ceil(keys / depth): the pipelines a chunked job of EX02_KEYS SETs syncs. */
    private static int chunks(int depth) {
        return (EX02_KEYS + depth - 1) / depth;
    }

    // ---------------------------------------------------------------- exercise 3

    private static final int EX03_MEMBERS = 10_000;

    /** How long bytes that did leave the client get to reach the server before the check looks. */
    private static final long EX03_SETTLE_MS = 200;

    static void ex03(String[] args, QueueAll queueAll) {
        run(EX03, args, EX03_MEMBERS, s -> inLab(EX03, s, jedis -> checkQueueAll(s, jedis, queueAll)));
    }

    private static String checkQueueAll(LabSupport.Settings s, Jedis jedis, QueueAll queueAll) throws Exception {
        String key = LabSupport.key(EX03.alias(), "set");
        List<String> members = new ArrayList<>(EX03_MEMBERS);
        for (int i = 0; i < EX03_MEMBERS; i++) {
            members.add("member:" + i);
        }
        System.out.println(String.format(Locale.ROOT, "Exercise 3: queueAll of %,d SADDs on a Lettuce connection"
                + " with auto-flush off, at %s", EX03_MEMBERS, s.where()));
        RedisClient client = null;
        try {
            client = RedisClient.create(RedisURI.builder().withHost(s.host()).withPort(s.port()).build());
            StatefulRedisConnection<String, String> connection = client.connect();
            connection.setAutoFlushCommands(false);
            warmUp(connection, LabSupport.key(EX03.alias(), "warm-up"), members);
            List<RedisFuture<Long>> futures = student(EX03, () -> queueAll.queueAll(connection.async(), key, members));

            // Nothing may have reached Redis yet: read the set on the other connection (Jedis).
            Thread.sleep(EX03_SETTLE_MS);
            long early = jedis.scard(key);
            long done = futures == null ? 0 : futures.stream().filter(Future::isDone).count();
            if (early > 0 || done > 0) {
                throw EX03.notSolved(String.format(Locale.ROOT, "bytes left before the flush: when queueAll returned"
                        + " the set already had %,d members and %,d futures were done; only queue the SADDs (no"
                        + " flushCommands(), no waiting on futures, auto-flush stays off) and return the futures",
                        early, done));
            }
            if (futures == null || futures.size() != members.size()) {
                throw EX03.notSolved(String.format(Locale.ROOT, "queueAll returned %s for %,d members; return one"
                        + " SADD future per member, in order", futures == null ? "null"
                        : String.format(Locale.ROOT, "%,d futures", futures.size()), members.size()));
            }

            long start = System.nanoTime();
            connection.flushCommands();
            boolean all;
            try {
                all = LettuceFutures.awaitAll(Duration.ofSeconds(30), futures.toArray(new Future<?>[0]));
            } catch (RedisCommandExecutionException e) { // Redis answered a queued command with an error
                throw EX03.notSolved("a queued command failed after the flush (" + e.getMessage()
                        + "); queue SADD key member, one per member");
            }
            double flushToLast = (System.nanoTime() - start) / 1e9;
            if (!all) {
                throw EX03.notSolved("not every future completed within 30 s of flushCommands(); return the"
                        + " futures of the SADDs you queued");
            }
            for (int i = 0; i < futures.size(); i++) {
                Long reply = futures.get(i).get();
                if (!Long.valueOf(1).equals(reply)) {
                    throw EX03.notSolved("future " + i + " holds " + reply + ", but SADD of a new member replies 1;"
                            + " return the SADD futures in the order of the members");
                }
            }
            long scard = jedis.scard(key);
            if (scard != EX03_MEMBERS) {
                throw EX03.notSolved(String.format(Locale.ROOT, "after the flush the set has %,d members, not %,d;"
                        + " SADD every member to the given key", scard, EX03_MEMBERS));
            }
            System.out.println(String.format(Locale.ROOT, "before flushCommands(): SCARD 0, no future done;"
                    + " after: %,d replies of 1, SCARD %,d", EX03_MEMBERS, scard));
            System.out.println("flushCommands() to the last reply: " + millis(flushToLast));
            return String.format(Locale.ROOT, "%,d SADDs held back until one flushCommands(), the last reply %s"
                    + " after it", EX03_MEMBERS, millis(flushToLast));
        } catch (ExecutionException e) {
            throw EX03.notSolved("a future failed (" + e.getCause() + "); queue SADD key member, one per member");
        } finally {
            if (client != null) {
                // No quiet period: nothing is in flight once the check is over.
                client.shutdown(0, 2, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * The same SADDs once, flushed and awaited, to another key: the first flush of a fresh JVM
     * spends most of its time compiling Lettuce's encoding path, and the figure reported is
     * meant to be the flush's. The key goes with the rest of the prefix at the end.
     */
    private static void warmUp(StatefulRedisConnection<String, String> connection, String key, List<String> members)
            throws Exception {
        List<RedisFuture<Long>> futures = new ArrayList<>(members.size());
        for (String member : members) {
            futures.add(connection.async().sadd(key, member));
        }
        connection.flushCommands();
        if (!LettuceFutures.awaitAll(Duration.ofSeconds(30), futures.toArray(new Future<?>[0]))) {
            throw LabSupport.failure("the checker's warm-up SADDs did not complete within 30 s");
        }
    }

    // ---------------------------------------------------------------- exercise 4

    private static final int EX04_ITEMS = 5_000;
    private static final int EX04_KEEP = 100;

    static void ex04(String[] args, PushKeepLatest pushKeepLatest) {
        run(EX04, args, EX04_ITEMS, s -> inLab(EX04, s, jedis -> checkPushKeepLatest(s, jedis, pushKeepLatest)));
    }

    private static String checkPushKeepLatest(LabSupport.Settings s, Jedis jedis, PushKeepLatest pushKeepLatest) {
        String key = LabSupport.key(EX04.alias(), "latest");
        List<String> items = new ArrayList<>(EX04_ITEMS);
        for (int i = 0; i < EX04_ITEMS; i++) {
            items.add("item:" + i);
        }
        System.out.println(String.format(Locale.ROOT, "Exercise 4: pushKeepLatest of %,d items, keeping %d, at %s",
                EX04_ITEMS, EX04_KEEP, s.where()));
        Map<String, Long> callsBefore = LabSupport.commandCalls(s);
        Map<String, Long> usecBefore = commandUsec(s);
        student(EX04, () -> {
            pushKeepLatest.pushKeepLatest(jedis, key, items, EX04_KEEP);
            return null;
        });
        Map<String, Long> calls = LabSupport.callsBetween(callsBefore, LabSupport.commandCalls(s));
        Map<String, Long> usec = LabSupport.callsBetween(usecBefore, commandUsec(s));
        System.out.println("commands the server ran: " + calls);

        long lrems = calls.getOrDefault("lrem", 0L);
        long ltrims = calls.getOrDefault("ltrim", 0L);
        if (lrems > 0) {
            throw EX04.notSolved(String.format(Locale.ROOT, "pushKeepLatest sent %,d LREM calls, and LREM scans the"
                    + " list for its value, O(N) per call; drop the oldest by position instead, LTRIM key 0 keep-1"
                    + " after the LPUSH", lrems));
        }
        if (ltrims == 0) {
            throw EX04.notSolved("pushKeepLatest sent no LTRIM; LPUSH each item, then LTRIM key 0 keep-1 keeps the"
                    + " newest keep elements");
        }
        List<String> expected = new ArrayList<>(items.subList(EX04_ITEMS - EX04_KEEP, EX04_ITEMS));
        Collections.reverse(expected);
        List<String> list = jedis.lrange(key, 0, -1);
        if (!list.equals(expected)) {
            throw EX04.notSolved(String.format(Locale.ROOT, "the list holds %,d elements from %s to %s, but should"
                    + " hold the newest %d, %s first down to %s; LPUSH puts an item at the head, LTRIM key 0 %d"
                    + " keeps the head", list.size(), list.isEmpty() ? "-" : list.get(0),
                    list.isEmpty() ? "-" : list.get(list.size() - 1), EX04_KEEP, expected.get(0),
                    expected.get(EX04_KEEP - 1), EX04_KEEP - 1));
        }
        // Redis sums whole microseconds per call, so a very cheap command can average below 1.
        double perLtrim = (double) usec.getOrDefault("ltrim", 0L) / ltrims;
        System.out.println(String.format(Locale.ROOT, "the list is the newest %d items; 0 LREM, %,d LTRIM at"
                + " %.2f µs each on the server (INFO commandstats)", EX04_KEEP, ltrims, perLtrim));
        return String.format(Locale.ROOT, "no LREM, %,d LTRIM calls at %.2f µs each on the server", ltrims, perLtrim);
    }

    /**
     * INFO commandstats as microseconds per command name (LabSupport.commandCalls counts
     * calls only), in the same shape so LabSupport.callsBetween takes the difference.
     */
    private static Map<String, Long> commandUsec(LabSupport.Settings s) {
        Map<String, Long> usec = new HashMap<>();
        try (Jedis jedis = new Jedis(s.host(), s.port())) {
            for (String line : jedis.info("commandstats").split("\r?\n")) {
                int colon = line.indexOf(':');
                if (!line.startsWith("cmdstat_") || colon < 0) {
                    continue;
                }
                for (String field : line.substring(colon + 1).split(",")) {
                    if (field.startsWith("usec=")) {
                        usec.put(line.substring("cmdstat_".length(), colon), Long.parseLong(field.substring(5)));
                    }
                }
            }
        }
        return usec;
    }

    // ---------------------------------------------------------------- exercise 5

    private static final int EX05_USERS = 1_000;
    private static final List<String> EX05_FIELDS = List.of("profile", "cart", "sessions");
    private static final int EX05_WRITTEN_USERS = 50;
    /** The slot ranges of a three-master cluster as redis-cli --cluster create splits 16,384 slots. */
    private static final int[][] EX05_RANGES = {{0, 5460}, {5461, 10922}, {10923, 16383}};
    private static final double EX05_MIN_SHARE = 0.20;
    private static final double EX05_MAX_SHARE = 0.47;

    static void ex05(String[] args, UserKey userKey) {
        run(EX05, args, EX05_USERS, s -> inLab(EX05, s, jedis -> checkUserKey(s, jedis, userKey)));
    }

    private static String checkUserKey(LabSupport.Settings s, Jedis jedis, UserKey userKey) {
        System.out.println(String.format(Locale.ROOT, "Exercise 5: userKey for %,d users x %s, slots by Jedis's"
                + " JedisClusterCRC16, then %d users written at %s", EX05_USERS, EX05_FIELDS, EX05_WRITTEN_USERS,
                s.where()));
        Map<String, List<String>> keysOf = new LinkedHashMap<>();
        Set<String> seen = new HashSet<>();
        int[] userSlot = new int[EX05_USERS];
        for (int u = 0; u < EX05_USERS; u++) {
            String user = "user:" + u;
            List<String> keys = new ArrayList<>();
            for (String field : EX05_FIELDS) {
                String key = student(EX05, () -> userKey.userKey(user, field));
                String call = "userKey(\"" + user + "\", \"" + field + "\") gave '" + key + "'";
                if (key == null || !key.startsWith(EX05.prefix())) {
                    throw EX05.notSolved(call + ", which does not start with " + EX05.prefix()
                            + "; every key of this exercise must");
                }
                if (!key.contains(user) || !key.contains(field)) {
                    throw EX05.notSolved(call + ", which does not contain both the user id and the field");
                }
                if (!seen.add(key)) {
                    throw EX05.notSolved(call + ", a key another user or field already got; keys must be distinct");
                }
                keys.add(key);
            }
            Set<Integer> slots = new TreeSet<>();
            keys.forEach(key -> slots.add(JedisClusterCRC16.getSlot(key)));
            if (slots.size() > 1) {
                throw EX05.notSolved(user + "'s keys " + keys + " fall in slots " + slots + "; put the user id in a"
                        + " hash tag, e.g. " + EX05.prefix() + "{" + user + "}:cart, so only it is hashed");
            }
            userSlot[u] = slots.iterator().next();
            keysOf.put(user, keys);
        }

        if (Arrays.stream(userSlot).distinct().count() == 1) {
            throw EX05.notSolved(String.format(Locale.ROOT, "all %,d users land in slot %d, so one cluster node"
                    + " would serve everyone; the hash tag should hold the user id only, not something all users"
                    + " share", EX05_USERS, userSlot[0]));
        }
        int[] perRange = new int[EX05_RANGES.length];
        for (int slot : userSlot) {
            for (int r = 0; r < EX05_RANGES.length; r++) {
                if (slot >= EX05_RANGES[r][0] && slot <= EX05_RANGES[r][1]) {
                    perRange[r]++;
                }
            }
        }
        StringBuilder shares = new StringBuilder();
        boolean even = true;
        for (int r = 0; r < EX05_RANGES.length; r++) {
            double share = (double) perRange[r] / EX05_USERS;
            even &= share >= EX05_MIN_SHARE && share <= EX05_MAX_SHARE;
            shares.append(r == 0 ? "" : ", ").append(String.format(Locale.ROOT, "slots %d-%d %.1f%%",
                    EX05_RANGES[r][0], EX05_RANGES[r][1], 100 * share));
        }
        System.out.println("users per slot range (one per master of a three-master cluster): " + shares);
        if (!even) {
            throw EX05.notSolved(String.format(Locale.ROOT, "the users crowd into part of the slots (%s; each range"
                    + " needs %.0f-%.0f%%); the hash tag should hold the user id only", shares,
                    100 * EX05_MIN_SHARE, 100 * EX05_MAX_SHARE));
        }

        // A cluster accepts a multi-key command only within one slot: one MSET per user is that case.
        List<Map.Entry<String, List<String>>> written = new ArrayList<>(keysOf.entrySet()).subList(0, EX05_WRITTEN_USERS);
        for (Map.Entry<String, List<String>> user : written) {
            List<String> keys = user.getValue();
            List<String> keysAndValues = new ArrayList<>();
            for (int f = 0; f < keys.size(); f++) {
                keysAndValues.add(keys.get(f));
                keysAndValues.add(EX05_FIELDS.get(f) + " of " + user.getKey());
            }
            jedis.mset(keysAndValues.toArray(new String[0]));
            List<String> back = jedis.mget(keys.toArray(new String[0]));
            for (int f = 0; f < keys.size(); f++) {
                if (!keysAndValues.get(2 * f + 1).equals(back.get(f))) {
                    throw LabSupport.failure("key '" + keys.get(f) + "' read back '" + back.get(f)
                            + "' right after its MSET");
                }
            }
        }
        System.out.println(written.size() + " users written with one MSET each and read back");
        return String.format(Locale.ROOT, "each user's %d keys share a slot; %,d users over the three ranges: %s",
                EX05_FIELDS.size(), EX05_USERS, shares);
    }

    // ---------------------------------------------------------------- helpers

    /** Reads the keys with one MGET per batch in one pipeline; stops at the first key without `value`. */
    private static void requireValues(Exercise ex, Jedis jedis, List<String> keys, String value, String when) {
        List<Response<List<String>>> batches = new ArrayList<>();
        try (Pipeline pipeline = jedis.pipelined()) {
            for (int from = 0; from < keys.size(); from += KEY_BATCH) {
                List<String> batch = keys.subList(from, Math.min(from + KEY_BATCH, keys.size()));
                batches.add(pipeline.mget(batch.toArray(new String[0])));
            }
            pipeline.sync();
        }
        int i = 0;
        for (Response<List<String>> batch : batches) {
            for (String held : batch.get()) {
                if (!value.equals(held)) {
                    throw ex.notSolved(String.format(Locale.ROOT, "%s, key %s holds %s instead of '%s'; every one"
                            + " of the %,d keys must", when, keys.get(i), held == null ? "nothing" : "'" + held + "'",
                            value, keys.size()));
                }
                i++;
            }
        }
    }

    private static double median(List<Double> samples) {
        List<Double> sorted = new ArrayList<>(samples);
        Collections.sort(sorted);
        int n = sorted.size();
        return (sorted.get((n - 1) / 2) + sorted.get(n / 2)) / 2;
    }

    /** "median 0.512 s (0.498-0.530 s)": the median and the min-max of a measure() run. */
    private static String spread(List<Double> samples) {
        return "median " + seconds(median(samples)) + " s (" + seconds(Collections.min(samples)) + "-"
                + seconds(Collections.max(samples)) + " s)";
    }

    private static String seconds(double s) {
        return String.format(Locale.ROOT, s >= 0.01 ? "%.3f" : "%.5f", s);
    }

    private static String millis(double s) {
        return String.format(Locale.ROOT, "%.1f ms", 1000 * s);
    }

    // ---------------------------------------------------------------- exercise 6

    private static final int EX06_KEYS = 300;
    private static final int[] EX06_SIZES = {1_000, 4_000, 16_000, 64_000, 100_000};
    private static final int EX06_BUDGET = 256 * 1024;

    static void ex06(String[] args, GetAll getAll) {
        run(EX06, args, EX06_KEYS, s -> inLab(EX06, s, jedis -> checkGetAll(s, jedis, getAll)));
    }

    /** A Jedis whose pipelines record the keys of the GETs each sync() sends. */
    static final class RecordingJedis extends Jedis {
        final List<List<String>> synced = new ArrayList<>();

        RecordingJedis(String host, int port) {
            super(host, port);
        }

        @Override
        public Pipeline pipelined() {
            return new RecordingPipeline(this, synced);
        }
    }

    static final class RecordingPipeline extends Pipeline {
        private final List<String> queued = new ArrayList<>();
        private final List<List<String>> synced;

        RecordingPipeline(Jedis jedis, List<List<String>> synced) {
            super(jedis);
            this.synced = synced;
        }

        @Override
        public Response<String> get(String key) {
            queued.add(key);
            return super.get(key);
        }

        @Override
        public Response<byte[]> get(byte[] key) {
            queued.add(new String(key, java.nio.charset.StandardCharsets.UTF_8));
            return super.get(key);
        }

        @Override
        public void sync() {
            record();
            super.sync();
        }

        @Override
        public List<Object> syncAndReturnAll() {
            record();
            return super.syncAndReturnAll();
        }

        private void record() {
            if (!queued.isEmpty()) {
                synced.add(new ArrayList<>(queued));
                queued.clear();
            }
        }
    }

    private static String checkGetAll(LabSupport.Settings s, Jedis jedis, GetAll getAll) {
        List<String> keys = LabSupport.keys(EX06_KEYS, EX06.alias(), "value");
        Map<String, Integer> sizeOf = new HashMap<>();
        List<String> values = new ArrayList<>(EX06_KEYS);
        long total = 0;
        try (Pipeline pipeline = jedis.pipelined()) {
            for (int i = 0; i < EX06_KEYS; i++) {
                int size = EX06_SIZES[i % EX06_SIZES.length];
                String value = (i + ":").repeat(size).substring(0, size);
                sizeOf.put(keys.get(i), size);
                values.add(value);
                pipeline.set(keys.get(i), value);
                total += size;
            }
            pipeline.sync();
        }
        System.out.println(String.format(Locale.ROOT, "Exercise 6: getAll of %,d keys, %.1f MiB of values (%s bytes,"
                + " cycled), budget %d KiB of values per sync(), at %s", EX06_KEYS, total / 1048576.0,
                Arrays.toString(EX06_SIZES), EX06_BUDGET / 1024, s.where()));
        Map<String, Long> before = LabSupport.commandCalls(s);
        List<String> got;
        List<List<String>> synced;
        try (RecordingJedis recording = new RecordingJedis(s.host(), s.port())) {
            got = student(EX06, () -> getAll.getAll(recording, keys, EX06_BUDGET));
            synced = recording.synced;
        }
        Map<String, Long> calls = LabSupport.callsBetween(before, LabSupport.commandCalls(s));
        if (got == null || !got.equals(values)) {
            int wrong = 0;
            while (got != null && wrong < Math.min(got.size(), EX06_KEYS) && got.get(wrong).equals(values.get(wrong))) {
                wrong++;
            }
            throw EX06.notSolved(String.format(Locale.ROOT, "getAll returned %s for %,d keys, the first wrong at"
                    + " position %d; return every key's value in the order of the keys", got == null ? "null"
                    : String.format(Locale.ROOT, "%,d values", got.size()), EX06_KEYS, wrong));
        }
        long piped = synced.stream().mapToLong(List::size).sum();
        long gets = calls.getOrDefault("get", 0L);
        if (piped < EX06_KEYS || gets > EX06_KEYS) {
            throw EX06.notSolved(String.format(Locale.ROOT, "the server ran %,d GETs of which %,d came in pipelines,"
                    + " for %,d keys; send each key's GET once, on jedis.pipelined() (an MGET holds all its replies"
                    + " at once, so it does not help here)", gets, piped, EX06_KEYS));
        }
        long biggest = 0;
        for (List<String> batch : synced) {
            biggest = Math.max(biggest, batch.stream().mapToLong(sizeOf::get).sum());
        }
        if (biggest > EX06_BUDGET) {
            throw EX06.notSolved(String.format(Locale.ROOT, "one sync() asked for %,d bytes of values, over the"
                    + " budget of %,d; learn the sizes first (STRLEN, pipelined) and sync before a GET would pass"
                    + " the budget", biggest, EX06_BUDGET));
        }
        int fewest = 0;
        long used = EX06_BUDGET;
        for (String key : keys) { // filling each pipeline up to the budget, in key order
            if (used + sizeOf.get(key) > EX06_BUDGET) {
                fewest++;
                used = 0;
            }
            used += sizeOf.get(key);
        }
        if (synced.size() > 2 * fewest) {
            throw EX06.notSolved(String.format(Locale.ROOT, "getAll synced %,d pipelines of GETs where %,d suffice;"
                    + " fill each pipeline up to the budget before syncing it", synced.size(), fewest));
        }
        System.out.println(String.format(Locale.ROOT, "%d pipelines of GETs (the fewest in key order: %d), the"
                + " largest asking for %d KiB; STRLEN calls: %,d", synced.size(), fewest, biggest / 1024,
                calls.getOrDefault("strlen", 0L)));
        return String.format(Locale.ROOT, "%.1f MiB in %d pipelines, none over %d KiB of replies",
                total / 1048576.0, synced.size(), EX06_BUDGET / 1024);
    }

    // ---------------------------------------------------------------- exercise 7

    private static final int EX07_ACCOUNTS = 10;
    private static final long EX07_BALANCE = 1_000;
    private static final int EX07_WRITERS = 4;
    private static final int EX07_EACH = 300;
    private static final int EX07_MAX_AMOUNT = 10;
    /** What the check pays into a source between the transfer's read and its write. */
    private static final long EX07_DEPOSIT = 1;
    private static final int EX07_DEPOSIT_EVERY = 4;
    private static final Set<String> EX07_WRITES = Set.of("SET", "MSET", "SETEX", "PSETEX", "SETNX", "MSETNX",
            "GETSET", "SETRANGE", "APPEND", "INCR", "DECR", "INCRBY", "DECRBY", "INCRBYFLOAT", "DEL", "UNLINK",
            "GETDEL", "GETEX");

    static void ex07(String[] args, Transfer transfer) {
        run(EX07, args, EX07_EACH, s -> inLab(EX07, s, jedis -> checkTransfer(s, jedis, transfer)));
    }

    /** One call of transfer as it reached the server: each WATCH's keys and each EXEC's fate. */
    static final class TransferCall {
        final String src;
        final String dst;
        final long amount;
        final boolean depositDue;
        int depositAt = -1; // index in execRan of the EXEC that followed the check's deposit
        final List<Set<String>> watches = new ArrayList<>();
        final List<Boolean> execRan = new ArrayList<>();
        final List<Set<String>> execWatched = new ArrayList<>(); // the keys watched when each EXEC went
        boolean result;

        TransferCall(String src, String dst, long amount, boolean depositDue) {
            this.src = src;
            this.dst = dst;
            this.amount = amount;
            this.depositDue = depositDue;
        }

        boolean guarded(int exec) {
            return execWatched.get(exec).contains(src) && execWatched.get(exec).contains(dst);
        }

        /** An EXEC that ran with no WATCH at all after one that was aborted: the aborted writes sent again. */
        boolean blindRetry() {
            int aborted = execRan.indexOf(false);
            for (int i = aborted + 1; aborted >= 0 && i < execRan.size(); i++) {
                if (execRan.get(i) && execWatched.get(i).isEmpty()) {
                    return true;
                }
            }
            return false;
        }

        /** The keys watched for an EXEC that ran without a WATCH on both accounts, or null. */
        Set<String> unguarded() {
            for (int i = 0; i < execRan.size(); i++) {
                if (execRan.get(i) && !guarded(i)) {
                    return execWatched.get(i);
                }
            }
            return null;
        }

        boolean lastExecAborted() {
            return !execRan.isEmpty() && !execRan.get(execRan.size() - 1);
        }

        boolean forcedAbort() {
            return depositAt >= 0 && depositAt < execRan.size() && !execRan.get(depositAt);
        }
    }

    /**
     * The connection under the Jedis handed to transfer. Every command passes through
     * sendCommand(CommandArguments), and Transaction.exec() reads EXEC's reply with
     * getObjectMultiBulkReply(), so this notes each WATCH's keys and each EXEC's fate (a null
     * reply: aborted). When a call is due a deposit, it pays EX07_DEPOSIT into the source from a
     * connection of its own right before the call's first write or EXEC: another client's write
     * at the moment it does the most harm.
     */
    static final class SpyConnection extends Connection {
        private final Jedis depositor;
        private final Set<String> watched = new HashSet<>();
        private TransferCall call;
        private Set<String> awaitedExec; // the keys watched when the EXEC whose reply is due went out

        SpyConnection(String host, int port, Jedis depositor) {
            super(host, port);
            this.depositor = depositor;
        }

        TransferCall begin(String src, String dst, long amount, boolean deposit) {
            call = new TransferCall(src, dst, amount, deposit);
            awaitedExec = null;
            return call;
        }

        @Override
        public void sendCommand(CommandArguments args) {
            String name = new String(args.getCommand().getRaw(), StandardCharsets.UTF_8).toUpperCase(Locale.ROOT);
            if (call != null) {
                if (name.equals("WATCH")) {
                    Set<String> keys = new HashSet<>();
                    for (int i = 1; i < args.size(); i++) { // 0 is the command
                        keys.add(new String(args.get(i).getRaw(), StandardCharsets.UTF_8));
                    }
                    watched.addAll(keys);
                    call.watches.add(keys);
                } else if (name.equals("UNWATCH") || name.equals("DISCARD")) {
                    watched.clear();
                } else if (name.equals("EXEC") || EX07_WRITES.contains(name)) {
                    if (call.depositDue && call.depositAt < 0) {
                        depositor.incrBy(call.src, EX07_DEPOSIT);
                        call.depositAt = call.execRan.size();
                    }
                    if (name.equals("EXEC")) {
                        awaitedExec = new HashSet<>(watched);
                        watched.clear(); // EXEC ends every WATCH, whether it runs or not
                    }
                }
            }
            super.sendCommand(args);
        }

        @Override
        public List<Object> getObjectMultiBulkReply() {
            List<Object> reply = super.getObjectMultiBulkReply();
            if (awaitedExec != null && call != null) {
                call.execRan.add(reply != null);
                call.execWatched.add(awaitedExec);
                awaitedExec = null;
            }
            return reply;
        }
    }

    private static String checkTransfer(LabSupport.Settings s, Jedis jedis, Transfer transfer) throws Exception {
        List<String> keys = LabSupport.keys(EX07_ACCOUNTS, EX07.alias(), "acct");
        System.out.println(String.format(Locale.ROOT, "Exercise 7: transfer by %d writers x %,d transfers of 1 to %d"
                + " between %d accounts of %,d at %s; before the first write of every %dth transfer the check pays"
                + " %d into its source from another connection", EX07_WRITERS, EX07_EACH, EX07_MAX_AMOUNT,
                EX07_ACCOUNTS, EX07_BALANCE, s.where(), EX07_DEPOSIT_EVERY, EX07_DEPOSIT));
        openAccounts(jedis, keys);
        checkRefusals(s, jedis, keys, transfer);
        openAccounts(jedis, keys);

        List<List<long[]>> plans = planTransfers();
        List<TransferCall> calls = Collections.synchronizedList(new ArrayList<>());
        AtomicReference<RuntimeException> failed = new AtomicReference<>();
        List<Jedis> opened = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        CountDownLatch go = new CountDownLatch(1);
        Map<String, Long> before = LabSupport.commandCalls(s);
        long start;
        try {
            for (List<long[]> plan : plans) {
                Jedis depositor = new Jedis(s.host(), s.port());
                SpyConnection spy = new SpyConnection(s.host(), s.port(), depositor);
                Jedis handed = new Jedis(spy);
                opened.add(depositor);
                opened.add(handed);
                Thread writer = new Thread(() -> {
                    try {
                        go.await();
                        for (int i = 0; i < plan.size(); i++) {
                            String src = keys.get((int) plan.get(i)[0]);
                            String dst = keys.get((int) plan.get(i)[1]);
                            long amount = plan.get(i)[2];
                            TransferCall call = spy.begin(src, dst, amount, i % EX07_DEPOSIT_EVERY == 1);
                            call.result = student(EX07, () -> transfer.transfer(handed, src, dst, amount));
                            calls.add(call);
                        }
                    } catch (RuntimeException e) {
                        failed.compareAndSet(null, e);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                threads.add(writer);
                writer.start();
            }
            start = System.nanoTime();
            go.countDown();
            for (Thread writer : threads) {
                writer.join();
            }
        } finally {
            opened.forEach(Jedis::close);
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        if (failed.get() != null) {
            throw failed.get();
        }
        Map<String, Long> server = LabSupport.callsBetween(before, LabSupport.commandCalls(s));
        long[] held = balances(jedis, keys);
        diagnose(calls, held, keys, server);

        long execs = 0;
        long aborted = 0;
        long forced = 0;
        long deposits = 0;
        for (TransferCall call : calls) {
            execs += call.execRan.size();
            aborted += call.execRan.stream().filter(ran -> !ran).count();
            forced += call.forcedAbort() ? 1 : 0;
            deposits += call.depositAt >= 0 ? 1 : 0;
        }
        int n = calls.size();
        System.out.println(String.format(Locale.ROOT, "%,d transfers in %.2f s (%,.0f/s), all true; %,d in the"
                + " accounts, as went in (%,d and %,d deposits); lowest balance %,d; every balance is what the"
                + " transfers and deposits make it", n, seconds, n / seconds, Arrays.stream(held).sum(),
                EX07_ACCOUNTS * EX07_BALANCE, deposits, Arrays.stream(held).min().orElse(0)));
        System.out.println(String.format(Locale.ROOT, "EXECs: %,d, of which %,d aborted, exec() returning null"
                + " (%,d by the check's deposits, %,d by the other writers), each followed by a new WATCH and read",
                execs, aborted, forced, aborted - forced));
        System.out.println(String.format(Locale.ROOT, "the server counted %,d WATCH, %,d MULTI, %,d EXEC, %,d"
                + " UNWATCH", server.getOrDefault("watch", 0L), server.getOrDefault("multi", 0L),
                server.getOrDefault("exec", 0L), server.getOrDefault("unwatch", 0L)));
        return String.format(Locale.ROOT, "%,d transfers by %d writers, %,d aborted EXECs retried, not one unit lost",
                n, EX07_WRITERS, aborted);
    }

    private static void openAccounts(Jedis jedis, List<String> keys) {
        List<String> keysAndValues = new ArrayList<>();
        for (String key : keys) {
            keysAndValues.add(key);
            keysAndValues.add(Long.toString(EX07_BALANCE));
        }
        jedis.mset(keysAndValues.toArray(new String[0]));
    }

    private static long[] balances(Jedis jedis, List<String> keys) {
        return jedis.mget(keys.toArray(new String[0])).stream().mapToLong(Long::parseLong).toArray();
    }

    /** One writer first: a transfer the source cannot pay is refused and writes nothing; all it holds can go. */
    private static void checkRefusals(LabSupport.Settings s, Jedis jedis, List<String> keys, Transfer transfer) {
        String src = keys.get(0);
        String dst = keys.get(1);
        try (Jedis depositor = new Jedis(s.host(), s.port());
             Jedis handed = new Jedis(new SpyConnection(s.host(), s.port(), depositor))) {
            // {amount, 1 if it must go through, the two balances after}
            long[][] cases = {{EX07_BALANCE + 1, 0, EX07_BALANCE, EX07_BALANCE},
                    {EX07_BALANCE, 1, 0, 2 * EX07_BALANCE}};
            for (long[] c : cases) {
                long amount = c[0];
                boolean want = c[1] == 1;
                boolean got = student(EX07, () -> transfer.transfer(handed, src, dst, amount));
                long[] held = balances(jedis, List.of(src, dst));
                if (got && !want) {
                    throw EX07.notSolved(String.format(Locale.ROOT, "transfer of %,d from an account holding %,d"
                            + " returned true and left %,d in it; return false, writing nothing, when the source"
                            + " would go negative", amount, EX07_BALANCE, held[0]));
                }
                if (want && !got) {
                    throw EX07.notSolved(String.format(Locale.ROOT, "transfer refused to move %,d out of an account"
                            + " holding exactly %,d; refuse only when the source would go negative", amount,
                            EX07_BALANCE));
                }
                if (held[0] != c[2] || held[1] != c[3]) {
                    throw EX07.notSolved(String.format(Locale.ROOT, "after transfer(\"%s\", \"%s\", %,d) returned %s"
                            + " the accounts hold %,d and %,d where %,d and %,d were expected; %s", src, dst, amount,
                            got, held[0], held[1], c[2], c[3], got ? "write the source's balance less the amount"
                            + " and the destination's plus it" : "a refusal writes nothing"));
                }
            }
        }
        System.out.println(String.format(Locale.ROOT, "one writer: %,d from %,d refused with nothing written; %,d"
                + " from %,d moved (0 and %,d)", EX07_BALANCE + 1, EX07_BALANCE, EX07_BALANCE, EX07_BALANCE,
                2 * EX07_BALANCE));
    }

    /**
     * Each writer's transfers {source, destination, amount}, random, yet no account's planned
     * outflow passes its opening balance: every transfer can be paid in whatever order the
     * writers run, so a refusal is a bug.
     */
    private static List<List<long[]>> planTransfers() {
        Random random = new Random(7);
        long[] out = new long[EX07_ACCOUNTS];
        List<List<long[]>> plans = new ArrayList<>();
        for (int w = 0; w < EX07_WRITERS; w++) {
            plans.add(new ArrayList<>());
        }
        for (int i = 0; i < EX07_EACH; i++) {
            for (List<long[]> plan : plans) {
                int src;
                int dst;
                long amount;
                do {
                    src = random.nextInt(EX07_ACCOUNTS);
                    dst = (src + 1 + random.nextInt(EX07_ACCOUNTS - 1)) % EX07_ACCOUNTS;
                    amount = 1 + random.nextInt(EX07_MAX_AMOUNT);
                } while (out[src] + amount > EX07_BALANCE);
                out[src] += amount;
                plan.add(new long[] {src, dst, amount});
            }
        }
        return plans;
    }

    /** The first thing wrong with the concurrent run, cause before consequence. */
    private static void diagnose(List<TransferCall> calls, long[] held, List<String> keys, Map<String, Long> server) {
        long deposits = calls.stream().filter(c -> c.depositAt >= 0).count();
        long putIn = EX07_ACCOUNTS * EX07_BALANCE + deposits * EX07_DEPOSIT;
        long total = Arrays.stream(held).sum();
        long negative = Arrays.stream(held).filter(b -> b < 0).count();
        String money = String.format(Locale.ROOT, "the accounts hold %,d in all where %,d went in (%,d and the"
                + " check's %,d deposits)%s", total, putIn, EX07_ACCOUNTS * EX07_BALANCE, deposits,
                negative == 0 ? "" : String.format(Locale.ROOT, ", and %d account%s negative", negative,
                        negative == 1 ? " is" : "s are"));
        long[] expected = new long[EX07_ACCOUNTS];
        Arrays.fill(expected, EX07_BALANCE);
        for (TransferCall c : calls) {
            if (c.depositAt >= 0) {
                expected[keys.indexOf(c.src)] += EX07_DEPOSIT;
            }
            if (c.result) {
                expected[keys.indexOf(c.src)] -= c.amount;
                expected[keys.indexOf(c.dst)] += c.amount;
            }
        }
        boolean right = Arrays.equals(held, expected);
        int n = calls.size();
        String writers = "with " + EX07_WRITERS + " writers";

        if (calls.stream().allMatch(c -> c.watches.isEmpty()) && server.getOrDefault("watch", 0L) == 0) {
            if (right) {
                throw EX07.notSolved("transfer moved the money right with no WATCH (on the server, in one command or"
                        + " script, as the section recommends where it can); this exercise asks for the WATCH loop:"
                        + " WATCH both accounts, read them, MULTI/EXEC, and retry when exec() returns null");
            }
            if (calls.stream().anyMatch(c -> !c.execRan.isEmpty()) || server.getOrDefault("exec", 0L) > 0) {
                throw EX07.notSolved("transfer sent MULTI/EXEC but no WATCH, so no EXEC could abort: " + writers + " "
                        + money + "; MULTI only queues the writes, jedis.watch(src, dst) before reading them");
            }
            throw EX07.notSolved("transfer sent no WATCH: " + writers + " " + money + "; jedis.watch(src, dst), read"
                    + " both, write in jedis.multi() ... exec(), and retry when exec() returns null");
        }
        long blind = calls.stream().filter(TransferCall::blindRetry).count();
        if (blind > 0) {
            throw EX07.notSolved(String.format(Locale.ROOT, "after an aborted EXEC transfer sent MULTI/EXEC again"
                    + " without a new WATCH and read (%,d times), writing balances computed before the abort: %s; a"
                    + " retry starts over from WATCH and the read", blind, money));
        }
        List<TransferCall> unguarded = calls.stream().filter(c -> c.unguarded() != null).toList();
        if (!unguarded.isEmpty()) {
            TransferCall c = unguarded.get(0);
            Set<String> seen = new TreeSet<>(c.unguarded());
            throw EX07.notSolved(String.format(Locale.ROOT, "%,d of %,d transfers ran EXEC without a WATCH on both"
                    + " accounts (from %s to %s watched %s): %s; a write to an unwatched account between the read"
                    + " and EXEC is overwritten, so WATCH the source and the destination", unguarded.size(), n,
                    c.src, c.dst, seen.isEmpty() ? "nothing" : String.join(", ", seen), money));
        }
        long ignored = calls.stream().filter(c -> c.result && c.lastExecAborted()).count();
        if (ignored > 0) {
            throw EX07.notSolved(String.format(Locale.ROOT, "%,d of %,d transfers returned true although their last"
                    + " EXEC was aborted, so their money never moved; Transaction.exec() returns null when a watched"
                    + " key changed (it does not throw): check for null, read both balances again and retry",
                    ignored, n));
        }
        List<TransferCall> refused = calls.stream().filter(c -> !c.result).toList();
        if (!refused.isEmpty()) {
            long afterAbort = refused.stream().filter(c -> c.execRan.contains(false)).count();
            throw EX07.notSolved(String.format(Locale.ROOT, "transfer returned false for %,d of %,d transfers that"
                    + " the source could pay (the check plans each account's outflow within its balance), %s",
                    refused.size(), n, afterAbort > 0 ? String.format(Locale.ROOT, "%,d of them right after an"
                    + " aborted EXEC; an aborted EXEC is not a refusal: read both balances again and retry",
                    afterAbort) : "refuse only when the source's balance is below the amount"));
        }
        long watches = server.getOrDefault("watch", 0L);
        if (watches < n) {
            throw EX07.notSolved(String.format(Locale.ROOT, "the server counted %,d WATCH calls for %,d transfers;"
                    + " each transfer WATCHes its two accounts before reading them", watches, n));
        }
        long done = calls.stream().filter(c -> c.result).count();
        long execs = server.getOrDefault("exec", 0L);
        if (execs < done) {
            throw EX07.notSolved(String.format(Locale.ROOT, "the server counted %,d EXEC calls for %,d transfers"
                    + " that returned true; write each transfer's two balances in MULTI/EXEC", execs, done));
        }
        if (!right) {
            int wrong = 0;
            while (held[wrong] == expected[wrong]) {
                wrong++;
            }
            throw EX07.notSolved(String.format(Locale.ROOT, "%s, and the transfers that returned true do not explain"
                    + " the balances (%s holds %,d where %,d was expected); every retry reads both balances again"
                    + " after its WATCH, and true means that exec() ran", money, keys.get(wrong), held[wrong],
                    expected[wrong]));
        }
    }

    // ---------------------------------------------------------------- exercise 8

    private static final List<Long> EX08_AMOUNTS = List.of(7L, 12L, 19L, 25L, 37L);
    /** The amounts' sum: a balance that moved by 200 means the charge ran twice. */
    private static final long EX08_TOTAL = 100;
    /** A silenced connection stays open this long, then the proxy closes it (as the Python check). */
    private static final long EX08_HOLD_MS = 6_000;
    /** A call still running after this long is reported as hanging. */
    private static final long EX08_BOUND_MS = 20_000;
    private static final Set<String> EX08_WRITES = Set.of("SET", "SETNX", "SETEX", "PSETEX", "GETSET", "MSET",
            "MSETNX", "APPEND", "INCR", "DECR", "INCRBY", "DECRBY", "INCRBYFLOAT", "DEL", "UNLINK", "GETDEL", "GETEX",
            "EXPIRE", "HSET", "HSETNX", "HINCRBY", "SADD", "LPUSH", "RPUSH", "ZADD");
    private static final Set<String> EX08_SCRIPTS = Set.of("EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL",
            "FCALL_RO");

    static void ex08(String[] args, Charge charge) {
        run(EX08, args, EX08_AMOUNTS.size(), s -> inLab(EX08, s, jedis -> checkCharge(s, jedis, charge)));
    }

    /** The keys a write or a script names (a script's KEYS); none for any other command. */
    static List<String> writtenKeys(List<String> args) {
        String name = args.get(0).toUpperCase(Locale.ROOT);
        if (EX08_SCRIPTS.contains(name) && args.size() > 2 && args.get(2).matches("\\d+")) {
            return args.subList(3, Math.min(args.size(), 3 + Integer.parseInt(args.get(2))));
        }
        if (name.equals("MSET") || name.equals("MSETNX")) {
            List<String> keys = new ArrayList<>();
            for (int i = 1; i < args.size(); i += 2) {
                keys.add(args.get(i));
            }
            return keys;
        }
        return EX08_WRITES.contains(name) && args.size() > 1 ? List.of(args.get(1)) : List.of();
    }

    /** The complete commands at the head of buf[0, len) go to `out`; returns the bytes they took. */
    static int parseCommands(byte[] buf, int len, List<List<String>> out) {
        int at = 0;
        while (at < len) {
            int start = at;
            int end = crlf(buf, at, len);
            if (end < 0) {
                return start;
            }
            if (buf[at] != '*') { // an inline command: one line of words
                String line = new String(buf, at, end - at, StandardCharsets.UTF_8).trim();
                if (!line.isEmpty()) {
                    out.add(List.of(line.split("\\s+")));
                }
                at = end + 2;
                continue;
            }
            int count = Integer.parseInt(new String(buf, at + 1, end - at - 1, StandardCharsets.US_ASCII));
            at = end + 2;
            List<String> args = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                int head = crlf(buf, at, len);
                if (head < 0) {
                    return start;
                }
                int length = Integer.parseInt(new String(buf, at + 1, head - at - 1, StandardCharsets.US_ASCII));
                if (len < head + 2 + length + 2) {
                    return start;
                }
                args.add(new String(buf, head + 2, length, StandardCharsets.UTF_8));
                at = head + 4 + length;
            }
            if (!args.isEmpty()) {
                out.add(args);
            }
        }
        return at;
    }

    private static int crlf(byte[] buf, int from, int len) {
        for (int i = from; i + 1 < len; i++) {
            if (buf[i] == '\r' && buf[i + 1] == '\n') {
                return i;
            }
        }
        return -1;
    }

    /** One command the student's client sent through the proxy. */
    record Sent(String step, int link, List<String> args, boolean inMulti, boolean forwarded) {
        String name() {
            return args.get(0).toUpperCase(Locale.ROOT);
        }
    }

    /** One connection through the proxy, and what the check did to it. */
    static final class Link {
        final int number;
        final Socket client;
        final Socket upstream;
        volatile String fault; // "reply" or "request": what the proxy drops on it from the fault on
        volatile long faultAt;
        volatile long closedAt;
        volatile String closedBy; // "client" (it gave up), "check" (after EX08_HOLD_MS), "server", "end"
        boolean inMulti;

        Link(int number, Socket client, Socket upstream) {
            this.number = number;
            this.client = client;
            this.upstream = upstream;
        }

        double silentSeconds() {
            return (closedAt - faultAt) / 1e9;
        }
    }

    /**
     * A TCP proxy on loopback in front of the lab's Redis, handed to charge instead of it. Armed
     * with a fault, it waits for the first command that writes the account (INCRBY, a script
     * naming it, ...) and, on that connection only, drops from then on the replies ("reply": the
     * server ran the commands, the client hears nothing) or the requests ("request": nothing more
     * reaches the server). That connection stays open and silent until the client gives up on
     * it, or EX08_HOLD_MS, then the proxy closes it; every other connection, and every later
     * one, passes untouched. It records every command it sees. No toxiproxy (a laptop without
     * Go has none), and one silenced connection makes the count exact: a resend meets a healthy
     * connection and runs.
     */
    static final class FaultProxy implements AutoCloseable {
        private final String targetHost;
        private final int targetPort;
        private final String account;
        private final ServerSocket listener;
        private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(daemon("ex08-hold"));
        private final List<Link> links = new ArrayList<>();
        private final List<Sent> sent = new ArrayList<>();
        private String step = "";
        private String fault;
        private Link fired;

        FaultProxy(String targetHost, int targetPort, String account) throws IOException {
            this.targetHost = targetHost;
            this.targetPort = targetPort;
            this.account = account;
            listener = new ServerSocket();
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            daemon("ex08-proxy").newThread(this::accept).start();
        }

        String host() {
            return listener.getInetAddress().getHostAddress();
        }

        int port() {
            return listener.getLocalPort();
        }

        synchronized void arm(String step, String fault) {
            this.step = step;
            this.fault = fault;
            this.fired = null;
        }

        /** No more faults; the connection the last one hit, or null. */
        synchronized Link disarm() {
            fault = null;
            return fired;
        }

        synchronized int sentCount() {
            return sent.size();
        }

        synchronized List<Sent> sentSince(int first) {
            return new ArrayList<>(sent.subList(first, sent.size()));
        }

        private void accept() {
            while (true) {
                Socket client;
                try {
                    client = listener.accept();
                } catch (IOException e) {
                    return; // the listener closed: the check is over
                }
                Socket upstream = new Socket();
                try {
                    upstream.connect(new InetSocketAddress(targetHost, targetPort), 5_000);
                } catch (IOException e) {
                    closeQuietly(client); // the student's client sees a refused connection, as without the proxy
                    closeQuietly(upstream);
                    continue;
                }
                Link link;
                synchronized (this) {
                    link = new Link(links.size() + 1, client, upstream);
                    links.add(link);
                }
                daemon("ex08-requests").newThread(() -> requests(link)).start();
                daemon("ex08-replies").newThread(() -> replies(link)).start();
            }
        }

        private void requests(Link link) {
            byte[] chunk = new byte[65_536];
            byte[] pending = new byte[65_536];
            int pendingLen = 0;
            String end = "client";
            try {
                InputStream in = link.client.getInputStream();
                OutputStream out = link.upstream.getOutputStream();
                int n;
                while ((n = in.read(chunk)) >= 0) {
                    if (pendingLen + n > pending.length) {
                        pending = Arrays.copyOf(pending, Math.max(pending.length * 2, pendingLen + n));
                    }
                    System.arraycopy(chunk, 0, pending, pendingLen, n);
                    pendingLen += n;
                    List<List<String>> commands = new ArrayList<>();
                    int used = parseCommands(pending, pendingLen, commands);
                    System.arraycopy(pending, used, pending, 0, pendingLen - used);
                    pendingLen -= used;
                    boolean forward;
                    synchronized (this) {
                        // Decided before the chunk is forwarded: no reply to it can slip through.
                        if (fault != null && fired == null
                                && commands.stream().anyMatch(c -> writtenKeys(c).contains(account))) {
                            link.fault = fault;
                            link.faultAt = System.nanoTime();
                            fired = link;
                            timer.schedule(() -> close(link, "check"), EX08_HOLD_MS, TimeUnit.MILLISECONDS);
                        }
                        forward = !"request".equals(link.fault);
                        for (List<String> c : commands) {
                            String name = c.get(0).toUpperCase(Locale.ROOT);
                            sent.add(new Sent(step, link.number, c, link.inMulti && !name.equals("EXEC"), forward));
                            if (name.equals("MULTI")) {
                                link.inMulti = true;
                            } else if (name.equals("EXEC") || name.equals("DISCARD")) {
                                link.inMulti = false;
                            }
                        }
                    }
                    if (forward) {
                        end = "server";
                        out.write(chunk, 0, n);
                        out.flush();
                        end = "client";
                    }
                }
            } catch (IOException e) {
                // the side named by `end` went away
            }
            close(link, end);
        }

        private void replies(Link link) {
            byte[] chunk = new byte[65_536];
            String end = "server";
            try {
                InputStream in = link.upstream.getInputStream();
                OutputStream out = link.client.getOutputStream();
                int n;
                while ((n = in.read(chunk)) >= 0) {
                    if (link.fault == null) {
                        end = "client";
                        out.write(chunk, 0, n);
                        out.flush();
                        end = "server";
                    }
                }
            } catch (IOException e) {
                // the side named by `end` went away
            }
            close(link, end);
        }

        private void close(Link link, String by) {
            synchronized (this) {
                if (link.closedBy != null) {
                    return;
                }
                link.closedAt = System.nanoTime();
                link.closedBy = by;
            }
            closeQuietly(link.client);
            closeQuietly(link.upstream);
        }

        @Override
        public void close() {
            closeQuietly(listener);
            timer.shutdownNow();
            List<Link> all;
            synchronized (this) {
                all = new ArrayList<>(links);
            }
            for (Link link : all) {
                close(link, "end");
            }
        }
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception ignored) {
            // already closed
        }
    }

    /** Daemon threads: a student's call that never returns must not keep the JVM up. */
    private static java.util.concurrent.ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }

    /** One call of the student's charge through the proxy, and what the balance says about it. */
    record ChargeCall(String step, String chargeId, String fault, Throwable error, double seconds, boolean hung,
                      long moved, Link fired, List<Sent> sent) {
        double runs() {
            return (double) moved / EX08_TOTAL;
        }

        String runsText() {
            return moved % EX08_TOTAL == 0 ? Long.toString(moved / EX08_TOTAL)
                    : String.format(Locale.ROOT, "%.2f", runs());
        }

        String raised() {
            String text = String.valueOf(error.getMessage()).replaceAll("\\s+", " ").trim();
            if (text.length() > 90) {
                text = text.substring(0, 90) + "...";
            }
            return error.getClass().getSimpleName() + " (" + text + ")" + studentLine(error);
        }

        /** On how many connections a write to the account reached the server. */
        long sends(String account) {
            return sent.stream().filter(x -> x.forwarded() && writtenKeys(x.args()).contains(account))
                    .map(Sent::link).distinct().count();
        }

        /** How the silenced connection ended, for the sentences below. */
        String silence() {
            if (fired == null || fired.closedBy == null) {
                return "the connection whose replies went silent was still open";
            }
            if (fired.closedBy.equals("client")) {
                return String.format(Locale.ROOT, "your client gave up on the silent connection after %.1f s",
                        fired.silentSeconds());
            }
            return String.format(Locale.ROOT, "the check closed the silent connection after %d s, your client still"
                    + " waiting (Lettuce's default command timeout is 60 s)", EX08_HOLD_MS / 1000);
        }
    }

    /** " at Ex08ChargeOnce.java:NN", the student's line that threw, or "". */
    private static String studentLine(Throwable e) {
        for (StackTraceElement frame : e.getStackTrace()) {
            String cls = frame.getClassName();
            if (cls.equals(EX08.className()) || cls.startsWith(EX08.className() + "$")) {
                return " at " + frame.getFileName() + ":" + frame.getLineNumber();
            }
        }
        return "";
    }

    private static long balance(Jedis jedis, String account) {
        String value = jedis.get(account);
        try {
            return value == null ? 0 : Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw EX08.notSolved(account + " holds '" + value + "', not a whole number; INCRBY each amount into it");
        }
    }

    /** charge(proxy host, proxy port, account, chargeId, amounts) on a thread of its own, bounded. */
    private static ChargeCall callCharge(Jedis jedis, FaultProxy proxy, Charge charge, String account, String step,
                                         String chargeId, String fault) throws InterruptedException {
        long before = balance(jedis, account);
        int first = proxy.sentCount();
        proxy.arm(step, fault);
        ExecutorService worker = Executors.newSingleThreadExecutor(daemon("ex08-charge"));
        long start = System.nanoTime();
        Future<?> done = worker.submit(() -> {
            charge.charge(proxy.host(), proxy.port(), account, chargeId, new ArrayList<>(EX08_AMOUNTS));
            return null;
        });
        Throwable error = null;
        boolean hung = false;
        try {
            done.get(EX08_BOUND_MS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            hung = true;
        } catch (ExecutionException e) {
            error = e.getCause();
            while ((error instanceof ExecutionException || error instanceof CompletionException)
                    && error.getCause() != null) {
                error = error.getCause(); // a future's failure: what failed it
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        worker.shutdown();
        Link fired = proxy.disarm();
        if (error instanceof UnsupportedOperationException && String.valueOf(error.getMessage()).startsWith("TODO")) {
            throw EX08.notSolved("charge still throws TODO; fill it in");
        }
        Thread.sleep(100); // a resend still on the wire reaches the server before the balance is read
        return new ChargeCall(step, chargeId, fault, error, seconds, hung, balance(jedis, account) - before, fired,
                proxy.sentSince(first));
    }

    private static void checkKeys(ChargeCall call) {
        for (Sent x : call.sent()) {
            for (String key : writtenKeys(x.args())) {
                if (!key.startsWith(EX08.prefix())) {
                    throw EX08.notSolved("charge wrote '" + key + "', outside " + EX08.prefix() + "; keep every key"
                            + " it writes, the marker too, under " + EX08.prefix() + ", which the check deletes when"
                            + " it ends (delete '" + key + "' yourself)");
                }
            }
        }
    }

    /** Why a call that returned normally ran the charge more than once: the first cause that fits. */
    private static String chargedTwice(ChargeCall call, String account) {
        String due = call.moved() % EX08_TOTAL == 0
                ? String.format(Locale.ROOT, "the server ran the charge %s times (the balance moved by %,d where %d"
                        + " was due)", call.runsText(), call.moved(), EX08_TOTAL)
                : String.format(Locale.ROOT, "part of the charge ran more than once (the balance moved by %,d where"
                        + " %d was due; send all the INCRBYs together, in one MULTI/EXEC)", call.moved(), EX08_TOTAL);
        String resend = call.silence() + ", and the charge went again on a new connection (" + call.sends(account)
                + " connections carried it)";
        List<Sent> markers = call.sent().stream().filter(x -> EX08_WRITES.contains(x.name())
                && writtenKeys(x.args()).stream().anyMatch(k -> !k.equals(account))).toList();
        if (call.sent().stream().anyMatch(x -> EX08_SCRIPTS.contains(x.name()))) {
            return due + ": " + resend + ", and your script charged each time it ran; let the script SET the marker"
                    + " with NX first and charge only when that succeeded, so that a second run changes nothing";
        }
        if (markers.stream().anyMatch(Sent::inMulti)) {
            return due + ": the marker is in the MULTI/EXEC with the INCRBYs, but a transaction has no 'if': "
                    + resend + ", where the SET NX failed and the INCRBYs ran; make the client at-most-once"
                    + " (ClientOptions.builder().autoReconnect(false)) and look for the marker before each send"
                    + " yourself";
        }
        if (!markers.isEmpty()) {
            return due + ": the marker was written on its own, outside the MULTI/EXEC of the INCRBYs, and nothing"
                    + " looked at it before the resend: " + resend + "; write it in the same MULTI/EXEC as the"
                    + " INCRBYs and look for it before each send";
        }
        if (call.sent().stream().anyMatch(x -> x.name().equals("WATCH") && x.args().contains(account))) {
            return due + ": " + resend + " under a WATCH of the balance, which read the new balance and charged"
                    + " once more; WATCH guards what you read, not the charge: a marker keyed by chargeId, written"
                    + " with the INCRBYs, tells a second attempt that the work is done";
        }
        return due + ": " + resend + "; Lettuce does that with autoReconnect on, its default: after a reconnect it"
                + " writes again every command still waiting for its reply (at-least-once), and so does any loop"
                + " that sends again blindly; write a marker keyed by chargeId in the same MULTI/EXEC as the"
                + " INCRBYs, make the client at-most-once (ClientOptions.builder().autoReconnect(false)) and send"
                + " again only when the marker is absent";
    }

    /** The first thing wrong with one call, as one Stop; nothing when it charged as due. */
    private static void judge(ChargeCall call, String account) {
        String step = call.step();
        if (call.hung()) {
            throw EX08.notSolved(String.format(Locale.ROOT, "charge had not returned %d s after the call%s; bound"
                    + " every wait: a command timeout you choose, and a bounded number of attempts",
                    EX08_BOUND_MS / 1000, call.fired() == null ? "" : " (" + call.silence() + ")"));
        }
        if (call.fault() != null && call.fired() == null) {
            throw EX08.notSolved("charge sent no write to " + account + " through the host and port it was handed"
                    + " (call '" + call.chargeId() + "'); build the client from host and port on every call");
        }
        if (step.equals("plain")) {
            if (call.error() != null) {
                throw EX08.notSolved("charge threw " + call.raised() + " with no fault at all; fix that first");
            }
            if (call.sends(account) == 0) {
                throw EX08.notSolved("charge did not charge through the host and port it was handed (the check's"
                        + " proxy saw no write to " + account + "); build the client from them");
            }
            if (call.moved() != EX08_TOTAL) {
                throw EX08.notSolved(String.format(Locale.ROOT, "with no fault, one call moved the balance by %,d"
                        + " where %d was due; INCRBY each amount into the account once", call.moved(), EX08_TOTAL));
            }
            return;
        }
        if (step.equals("again")) {
            if (call.error() != null) {
                throw EX08.notSolved("charge threw " + call.raised() + " when called again with chargeId '"
                        + call.chargeId() + "', already charged; return normally, charging nothing");
            }
            if (call.moved() != 0) {
                throw EX08.notSolved(String.format(Locale.ROOT, "calling charge again with chargeId '%s', already"
                        + " charged, moved the balance by %,d; look for the marker before charging, so that your"
                        + " caller's retry is harmless too", call.chargeId(), call.moved()));
            }
            return;
        }
        if (call.error() != null) {
            if (step.equals("reply") && call.moved() == EX08_TOTAL) {
                throw EX08.notSolved("charge threw " + call.raised() + " after its replies went silent, although"
                        + " the server had run the charge once (the balance moved by " + call.moved() + "): your"
                        + " caller cannot tell whether to charge again; on a timeout, find out whether it ran (a"
                        + " marker written in the same MULTI/EXEC as the INCRBYs) and return normally");
            }
            if (step.equals("request") && call.moved() == 0) {
                throw EX08.notSolved("charge threw " + call.raised() + " when its request was lost before reaching"
                        + " the server (the balance did not move): when a timeout leaves you unsure, look for the"
                        + " marker; absent means the charge did not run, so send it again and return normally");
            }
            throw EX08.notSolved("charge threw " + call.raised() + " after the server had run the charge "
                    + call.runsText() + " times; run it exactly once and return normally");
        }
        if (call.moved() == EX08_TOTAL) {
            return;
        }
        if (call.moved() == 0) {
            throw EX08.notSolved("charge returned normally although " + (step.equals("request")
                    ? "its request never reached the server" : "the server ran nothing it was sent") + ": the balance"
                    + " did not move; a timeout means 'unknown', not 'done': look for the marker and send the charge"
                    + " again when it is absent");
        }
        throw EX08.notSolved(chargedTwice(call, account));
    }

    private static String checkCharge(LabSupport.Settings s, Jedis jedis, Charge charge) throws Exception {
        String account = LabSupport.key(EX08.alias(), "account:42");
        List<ChargeCall> calls = new ArrayList<>();
        try (FaultProxy proxy = new FaultProxy(s.host(), s.port(), account)) {
            System.out.println(String.format(Locale.ROOT, "Exercise 8: charge of %s (%d in all) to %s, through the"
                    + " check's proxy at %s:%d in front of %s; four calls:", EX08_AMOUNTS, EX08_TOTAL, account,
                    proxy.host(), proxy.port(), s.where()));
            String[][] steps = {
                {"plain", "order-1", null, "no fault"},
                {"reply", "order-2", "reply", "the replies to its first write to the account are dropped"},
                {"again", "order-2", null, "the same chargeId again, no fault"},
                {"request", "order-3", "request", "its first write to the account is dropped before the server"},
            };
            for (String[] step : steps) {
                ChargeCall call = callCharge(jedis, proxy, charge, account, step[0], step[1], step[2]);
                checkKeys(call);
                judge(call, account);
                calls.add(call);
                System.out.println(String.format(Locale.ROOT, "  %d. %s (%s): the balance moved by %,d (%s x %d)%s;"
                        + " charge returned after %.2f s", calls.size(), step[3], step[1], call.moved(),
                        call.runsText(), EX08_TOTAL, call.fired() == null ? "" : "; " + call.silence(),
                        call.seconds()));
            }
        }
        return String.format(Locale.ROOT, "charged exactly once when its replies were lost (returned after %.1f s)"
                + " and when its request was lost (%.1f s); the same chargeId again charged nothing",
                calls.get(1).seconds(), calls.get(3).seconds());
    }
}
