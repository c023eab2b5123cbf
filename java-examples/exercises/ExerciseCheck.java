//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LettuceSupport.java

// What the course kit's nine checks share. Each exercise's check is a class of its own beside it
// (Ex01Check ... Ex09Check), which extends this one to reach its static members by name. An
// exercise (exercises/ExNN*.java) and its solution (solutions/ExNN*.java) differ only in the task
// method, so both pull in their check and hand it that method, ExNNCheck.exNN(args, method):
//   //SOURCES Ex01Check.java               from an exercise
//   //SOURCES ../exercises/Ex01Check.java  from a solution
// (JBang resolves each //SOURCES line against the file that declares it, so the check's own line
// reaches this file, and this file's reaches ../common/LabSupport.java.) The Lettuce //DEPS is
// declared here because exercise 3's check uses it (and LettuceSupport, which exercise 8's
// task uses too); the exercises declare Jedis themselves.
//
// Every check connects, refuses a Redis holding keys that are not the lab's, deletes the keys
// under its own prefix (pipelab:ex01: ... pipelab:ex09:), checks, and deletes them again.
// Exit codes: 0 solved, with "Exercise N solved: <figure>" as the last line; 1 not solved, one
// sentence saying what is wrong and where in the book to look; 2 bad arguments, a malformed
// REDIS_URL, Redis unreachable or refusing REDIS_URL's password, TLS or a command (NOPERM), or
// a Redis holding foreign keys (LabSupport's 3, 4 and 5 folded into one code). Every connection,
// the student's too, takes REDIS_URL's user, password, database and TLS (LabConnection).

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

import pipelab.LabConnection;

class ExerciseCheck {

    /** Timed checks: one warm-up (JIT, first connection use), then three recorded runs, medians. */
    static final int REPEAT = 3;

    /** The speed-up exercises 1 and 2 ask for. Tolerant on purpose: the lab machine is shared and noisy. */
    static final double REQUIRED_SPEED_UP = 3.0;

    static final int KEY_BATCH = 1000;

    ExerciseCheck() {  // extended by the per-exercise checks, never made
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
    interface Check {
        String run(LabSupport.Settings s) throws Exception;
    }

    /** The part of a check that needs the lab's Redis, given a connection to it. */
    interface LabBody {
        String run(Jedis jedis) throws Exception;
    }

    interface StudentCall<T> {
        T call() throws Exception;
    }

    static void run(Exercise ex, String[] args, int size, Check check) {
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
        } catch (LabConnection.Refused refused) {
            System.out.flush();
            System.err.println(refused.getMessage());
            code = 2;
        } catch (Exception e) {
            // Credentials, TLS or an ACL rule refused, wherever it surfaced: one sentence.
            String where = s == null ? "the given address" : s.where();
            LabConnection.Refused refused = LabConnection.refusal(e, where);
            System.out.flush();
            if (refused != null) {
                System.err.println(refused.getMessage());
                code = 2;
            } else if (e instanceof JedisConnectionException || e instanceof RedisConnectionException) {
                String reason = String.valueOf(e.getMessage()).replaceAll("\\.$", "");
                System.err.println("Lost the connection to Redis at " + where + " (" + reason
                        + "); check that it is still running and run the exercise again.");
                code = 2;
            } else {
                System.err.println(ex.alias() + ": the checker itself failed unexpectedly:");
                e.printStackTrace();
                code = 1;
            }
        }
        if (code == 0) {
            System.out.println("Exercise " + ex.number() + " solved: " + figure);
        }
        System.out.flush();
        // Exit explicitly: Lettuce may leave non-daemon threads behind.
        System.exit(code);
    }

    static LabSupport.Settings parse(Exercise ex, String[] args, int size) {
        LabConnection url = LabConnection.get(); // a malformed REDIS_URL stops here
        String usage = "usage: jbang " + ex.alias() + " (or " + ex.alias() + "-solution) [host] [port] (defaults "
                + url.host() + " " + url.port() + ")";
        if (args.length > 0 && (args[0].equals("-h") || args[0].equals("--help"))) {
            System.out.println(usage);
            System.out.flush();
            System.exit(0);
        }
        if (args.length > 2) {
            throw new LabSupport.Stop(2, ex.alias() + ": expected at most 2 arguments (host and port) but got "
                    + args.length + "; " + usage + ".");
        }
        // Host and port: the arguments', else REDIS_URL's, else the lab's defaults.
        String host = args.length > 0 ? args[0].trim() : url.host();
        int port = -1;
        try {
            port = args.length > 1 ? Integer.parseInt(args[1].trim()) : url.port();
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
    static String inLab(Exercise ex, LabSupport.Settings s, LabBody body) throws Exception {
        try (Jedis jedis = LabSupport.connect(s)) {
            LabSupport.requireLabOnly(jedis, s);
            deletePrefix(jedis, ex.prefix());
            try {
                return body.run(jedis);
            } finally {
                try (Jedis fresh = LabSupport.jedis(s)) {
                    deletePrefix(fresh, ex.prefix());
                } catch (RuntimeException e) {
                    System.err.println("Warning: could not delete the " + ex.prefix() + "* keys at " + s.where()
                            + ": " + e.getMessage());
                }
            }
        }
    }

    /** Deletes every key under `prefix`, found with SCAN, so keys of an earlier broken run go too. */
    static void deletePrefix(Jedis jedis, String prefix) {
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
    static <T> T student(Exercise ex, StudentCall<T> call) {
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

    // ---------------------------------------------------------------- helpers

    /** Reads the keys with one MGET per batch in one pipeline; stops at the first key without `value`. */
    static void requireValues(Exercise ex, Jedis jedis, List<String> keys, String value, String when) {
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

    static double median(List<Double> samples) {
        List<Double> sorted = new ArrayList<>(samples);
        Collections.sort(sorted);
        int n = sorted.size();
        return (sorted.get((n - 1) / 2) + sorted.get(n / 2)) / 2;
    }

    /** "median 0.512 s (0.498-0.530 s)": the median and the min-max of a measure() run. */
    static String spread(List<Double> samples) {
        return "median " + seconds(median(samples)) + " s (" + seconds(Collections.min(samples)) + "-"
                + seconds(Collections.max(samples)) + " s)";
    }

    static String seconds(double s) {
        return String.format(Locale.ROOT, s >= 0.01 ? "%.3f" : "%.5f", s);
    }

    static String millis(double s) {
        return String.format(Locale.ROOT, "%.1f ms", 1000 * s);
    }

}
