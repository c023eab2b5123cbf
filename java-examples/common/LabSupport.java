// Shared plumbing for the lab's JBang examples: arguments, the empty-database safety
// check, timing, cleanup and the result lines. Each example pulls it in with
//   //SOURCES ../common/LabSupport.java
// and declares the Jedis //DEPS itself, so the version a reader sees at the top of an
// example is the one that runs (this file compiles against that Jedis). Gson, which Jedis 8
// depends on already, writes the result line; it is declared here because this file uses it.
// Connections go where REDIS_URL (LabConnection) says, with its user, password, database and TLS;
// a Settings carries the LabConnection to log in with, so a cluster node's (LabConnection.cluster())
// travels with its host and port.
//DEPS com.google.code.gson:gson:2.14.0
//SOURCES LabDefaults.java
//SOURCES JedisSupport.java

import pipelab.JedisSupport;
import pipelab.LabConnection;
import pipelab.LabDefaults;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.time.Duration;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

final class LabSupport {

    /** Every key the lab writes starts with this; anything else belongs to someone else. */
    static final String KEY_PREFIX = LabDefaults.prefix();

    /** The lab's own port, for usage examples; a run's default is REDIS_URL's when it is set (parse). */
    static final int DEFAULT_PORT = LabDefaults.port();
    static final int DEFAULT_WARMUP = 1;

    /** Keys per UNLINK/EXISTS command when cleaning up or verifying: large enough to be quick, small enough not to block Redis. */
    private static final int KEY_BATCH = 1000;

    private LabSupport() {
    }

    /**
     * One run's settings, parsed from the positional arguments, and `url`, the user, password,
     * database and TLS that every helper here uses to reach host:port.
     */
    record Settings(String example, String host, int port, int size, int repeat, int warmup, LabConnection url) {
        /** A server reached with REDIS_URL's settings. */
        Settings(String example, String host, int port, int size, int repeat, int warmup) {
            this(example, host, port, size, repeat, warmup, LabConnection.get());
        }

        String where() {
            return host + ":" + port;
        }

        /** The same server, reached with `other`'s settings. */
        Settings with(LabConnection other) {
            return new Settings(example, host, port, size, repeat, warmup, other);
        }
    }

    /** The body of an example; LabSupport.run turns its failures into exit codes. */
    interface Body {
        void run(Settings settings) throws Exception;
    }

    /** A unit of work for measure(); may throw so examples need no try/catch noise. */
    interface Step {
        void run() throws Exception;
    }

    /**
     * Ends the example with one sentence on stderr and a chosen exit code. It is an
     * exception rather than System.exit so that finally blocks (key cleanup, client
     * shutdown) still run on the way out.
     */
    static final class Stop extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int exitCode;

        Stop(int exitCode, String message) {
            super(message, null, false, false); // the sentence is the report; no stack trace
            this.exitCode = exitCode;
        }
    }

    // ---------------------------------------------------------------- entry point

    /**
     * Parses the arguments, runs the body and exits: 0 ok, 1 failed check or unexpected
     * error, 2 bad argument (or a malformed REDIS_URL), 3 foreign keys present, 4 Redis
     * unreachable, or it refused REDIS_URL's password or TLS (CA file, handshake), 5 an ACL
     * rule of REDIS_URL's user forbids a command the example needs (NOPERM).
     */
    static void run(String example, String[] args, int defaultSize, int defaultRepeat, Body body) {
        run(example, args, defaultSize, defaultRepeat, LabConnection::get, body);
    }

    /**
     * The same for a server reached with `url`'s settings, e.g. LabConnection::cluster for an example
     * whose host and port name a cluster node; asked for inside, so a malformed URL exits with 2.
     */
    static void run(String example, String[] args, int defaultSize, int defaultRepeat, Supplier<LabConnection> url,
                    Body body) {
        int code = 0;
        Settings settings = null;
        try {
            settings = parse(example, args, defaultSize, defaultRepeat, url.get());
            body.run(settings);
        } catch (Stop stop) {
            System.out.flush();
            System.err.println(stop.getMessage());
            code = stop.exitCode;
        } catch (LabConnection.Refused refused) {
            System.out.flush();
            System.err.println(refused.getMessage());
            code = refused.exitCode;
        } catch (Exception e) {
            // Any client's refusal (credentials, TLS, NOPERM) is one sentence, wherever it surfaced.
            LabConnection.Refused refused = settings == null ? LabConnection.refusal(e, "the given address")
                    : LabConnection.refusal(e, settings.where(), settings.url());
            System.out.flush();
            if (refused != null) {
                System.err.println(refused.getMessage());
                code = refused.exitCode;
            } else if (e instanceof JedisConnectionException) {
                // The server went away mid-run (the start-up case is handled in connect()).
                System.err.println(unreachable(settings, e).getMessage());
                code = 4;
            } else {
                System.err.println(example + " failed unexpectedly:");
                e.printStackTrace();
                code = 1;
            }
        }
        System.out.flush();
        // Exit explicitly: client libraries may leave non-daemon threads behind.
        System.exit(code);
    }

    // ---------------------------------------------------------------- arguments

    static Settings parse(String example, String[] args, int defaultSize, int defaultRepeat) {
        return parse(example, args, defaultSize, defaultRepeat, LabConnection.get()); // malformed: exit code 2
    }

    static Settings parse(String example, String[] args, int defaultSize, int defaultRepeat, LabConnection url) {
        String usage = "usage: jbang " + example + " [host] [port] [size] [repeat] [warmup]"
                + " (defaults " + url.host() + " " + url.port() + " " + defaultSize + " "
                + defaultRepeat + " " + DEFAULT_WARMUP + ")";
        if (args.length > 0 && (args[0].equals("-h") || args[0].equals("--help"))) {
            System.out.println(usage);
            System.out.flush();
            System.exit(0);
        }
        if (args.length > 5) {
            throw new Stop(2, example + ": expected at most 5 arguments but got " + args.length + "; " + usage + ".");
        }
        // Host and port: the arguments', else REDIS_URL's, else the lab's defaults.
        String host = args.length > 0 ? args[0].trim() : url.host();
        if (host.isEmpty()) {
            throw new Stop(2, example + ": host must not be empty; " + usage + ".");
        }
        int port = intArg(example, usage, args, 1, "port", url.port(), 1, 65_535);
        // Upper bounds only guard against typos that would exhaust memory or take hours.
        int size = intArg(example, usage, args, 2, "size", defaultSize, 1, 10_000_000);
        int repeat = intArg(example, usage, args, 3, "repeat", defaultRepeat, 1, 1_000);
        int warmup = intArg(example, usage, args, 4, "warmup", DEFAULT_WARMUP, 0, 1_000);
        return new Settings(example, host, port, size, repeat, warmup, url);
    }

    /**
     * A comma-separated list of whole numbers from 1 to 10,000,000 ("1,16,256"), as a chapter's notebook
     * passes its parameters after the five usual arguments; anything else stops with exit code 2.
     */
    static List<Integer> intList(String example, String name, String text) {
        List<Integer> out = new ArrayList<>();
        try {
            for (String part : text.split(",")) {
                int value = Integer.parseInt(part.trim().replace("_", ""));
                if (value < 1 || value > 10_000_000) {
                    throw new NumberFormatException(part);
                }
                out.add(value);
            }
        } catch (NumberFormatException e) {
            throw new Stop(2, example + ": " + name + " must be a comma-separated list of whole numbers from 1 "
                    + "to 10,000,000, not '" + text + "'.");
        }
        return List.copyOf(out);
    }

    /**
     * Another server named on the command line as host:port (a cluster node, a replicated master), as
     * Settings so that LabSupport's sentences name it; null for "-". `what` names it in the one-sentence
     * error, e.g. "cluster must be host:port of one cluster node". Reached with s's URL settings; a
     * cluster node takes its own (ClusterSupport.seedAt).
     */
    static Settings serverAt(Settings s, String text, String what) {
        if (text.strip().equals("-")) {
            return null;
        }
        int colon = text.lastIndexOf(':');
        try {
            String host = text.substring(0, colon).strip();
            int port = Integer.parseInt(text.substring(colon + 1).strip());
            if (!host.isEmpty() && port >= 1 && port <= 65_535) {
                return new Settings(s.example(), host, port, s.size(), s.repeat(), s.warmup(), s.url());
            }
        } catch (RuntimeException malformed) {
            // reported below
        }
        throw new Stop(2, s.example() + ": " + what + ", or - for none, not '" + text + "'.");
    }

    /** The arguments after the five usual ones (none if there are not more than five). */
    static String[] extra(String[] args) {
        return args.length > 5 ? Arrays.copyOfRange(args, 5, args.length) : new String[0];
    }

    /** The five usual arguments, without what a chapter's notebook passed after them. */
    static String[] usual(String[] args) {
        return args.length > 5 ? Arrays.copyOf(args, 5) : args;
    }

    private static int intArg(String example, String usage, String[] args, int index, String name,
                              int fallback, int min, int max) {
        if (args.length <= index) {
            return fallback;
        }
        String raw = args[index].trim().replace("_", "");
        try {
            int value = Integer.parseInt(raw);
            if (value >= min && value <= max) {
                return value;
            }
        } catch (NumberFormatException ignored) {
            // reported below, with the same sentence as an out-of-range value
        }
        throw new Stop(2, example + ": " + name + " must be an integer from " + min + " to " + max
                + ", not '" + args[index] + "'; " + usage + ".");
    }

    // ---------------------------------------------------------------- connection and safety

    /**
     * A Jedis connection to `s` as new Jedis(host, port) makes one, with s.url()'s user, password,
     * database and TLS (JedisSupport); unchecked, for a connection of the example's own.
     */
    static Jedis jedis(Settings s) {
        return JedisSupport.jedis(s.url(), s.host(), s.port());
    }

    /** The settings of jedis(s), for a Jedis or Connection subclass of an example's own. */
    static JedisClientConfig jedisConfig(Settings s) {
        return jedisConfig(s, JedisSupport.plain());
    }

    /** The example's own Jedis settings (`own`: timeouts, protocol, name) plus s.url()'s. */
    static JedisClientConfig jedisConfig(Settings s, DefaultJedisClientConfig.Builder own) {
        return JedisSupport.config(s.url(), s.host(), s.port(), own);
    }

    /**
     * Opens a connection and proves it works with a PING, or stops with exit code 4 (unreachable,
     * credentials or TLS refused) or 5 (the URL's user may not run PING).
     */
    static Jedis connect(Settings s) {
        Jedis jedis = null;
        try {
            jedis = jedis(s);
            jedis.ping();
            return jedis;
        } catch (JedisException e) {
            if (jedis != null) {
                jedis.close();
            }
            throw unreachable(s, e);
        }
    }

    /**
     * The sentence for a connection that failed, as the exception to throw: a LabConnection.Refused
     * (credentials, TLS, ACL; exit code 4 or 5) or a Stop (not reached at all, exit code 4).
     */
    static RuntimeException unreachable(Settings s, Exception e) {
        String where = s == null ? "the given address" : s.where();
        LabConnection url = s == null ? LabConnection.get() : s.url();
        LabConnection.Refused refused = LabConnection.refusal(e, where, url);
        if (refused != null) {
            return refused;
        }
        String reason = reason(e);
        return new Stop(4, "Cannot reach Redis at " + where + ": " + reason + LabConnection.plainToTlsHint(reason, url)
                + ". Start the lab's Redis (make lab) or pass host and port.");
    }

    /**
     * Runs `part`, which talks to `other` (a cluster node, next to the run's own server): a refusal or
     * a lost connection there is told with other's address and URL variable, not the run's (run()).
     */
    static void against(Settings other, Step part) throws Exception {
        try {
            part.run();
        } catch (Stop | LabConnection.Refused told) {
            throw told;
        } catch (Exception e) {
            if (e instanceof JedisConnectionException || LabConnection.refusal(e, other.where(), other.url()) != null) {
                throw unreachable(other, e);
            }
            throw e;
        }
    }

    /**
     * The innermost message is the useful one ("Connection refused", "NOAUTH ..."). Jedis
     * hides the socket error as a suppressed exception rather than a cause, so follow both.
     */
    private static String reason(Throwable e) {
        String reason = null;
        Throwable t = e;
        for (int depth = 0; t != null && depth < 20; depth++) {
            String m = t.getMessage();
            if (m != null && !m.isBlank()) {
                reason = m.strip();
            } else if (reason == null) {
                reason = t.getClass().getSimpleName();
            }
            t = t.getCause() != null ? t.getCause()
                    : t.getSuppressed().length > 0 ? t.getSuppressed()[0] : null;
        }
        if (reason.length() > 200) { // Redisson, say, appends the channel and client it used
            reason = reason.substring(0, 197) + "...";
        }
        return reason.endsWith(".") ? reason.substring(0, reason.length() - 1) : reason;
    }

    /**
     * Refuses to run against a database holding keys that are not the lab's: the examples
     * delete what they create, and we never want a benchmark anywhere near real data.
     * SCAN (not KEYS) so a big database is walked in small steps; stops at the first
     * foreign key.
     */
    static void requireLabOnly(Jedis jedis, Settings s) {
        ScanParams params = new ScanParams().count(1000);
        String cursor = ScanParams.SCAN_POINTER_START;
        do {
            ScanResult<String> page = jedis.scan(cursor, params);
            for (String key : page.getResult()) {
                if (!key.startsWith(KEY_PREFIX)) {
                    String shown = key.length() > 60 ? key.substring(0, 57) + "..." : key;
                    throw new Stop(3, "The Redis at " + s.where() + " holds keys that are not the lab's (for example '"
                            + shown + "'); point the example at an empty Redis or database."
                            + " The lab never deletes keys it did not create.");
                }
            }
            cursor = page.getCursor();
        } while (!ScanParams.SCAN_POINTER_START.equals(cursor)); // cursor "0" again: full pass done
    }

    // ---------------------------------------------------------------- keys

    /** Builds a lab key: key("ch01", "sadd", 7) is "pipelab:ch01:sadd:7". */
    static String key(String chapter, Object... parts) {
        StringBuilder sb = new StringBuilder(KEY_PREFIX).append(chapter);
        for (Object part : parts) {
            sb.append(':').append(part);
        }
        return sb.toString();
    }

    /**
     * `count` numbered lab keys: keys(3, "ch01", "sadd") is pipelab:ch01:sadd:0, :1 and :2,
     * the N distinct keys of a workload such as chapters 1 and 3's SADDs.
     */
    static List<String> keys(int count, String chapter, Object... parts) {
        Object[] numbered = Arrays.copyOf(parts, parts.length + 1);
        List<String> keys = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            numbered[parts.length] = i;
            keys.add(key(chapter, numbered));
        }
        return keys;
    }

    /** Pipeline Responses that got a value: Connection#getMany hands out none when a read fails. */
    static int received(List<? extends Response<?>> replies) {
        int count = 0;
        for (Response<?> reply : replies) {
            try {
                reply.get();
                count++;
            } catch (RuntimeException notSet) {
                // "Please close pipeline or multi block before calling this method."
            }
        }
        return count;
    }

    /** Deletes exactly the given lab keys, a batch of names per UNLINK, all in one pipeline. */
    static void deleteKeys(Jedis jedis, List<String> keys) {
        for (String key : keys) {
            if (!key.startsWith(KEY_PREFIX)) {
                throw new IllegalArgumentException("refusing to delete non-lab key '" + key + "'");
            }
        }
        try (Pipeline pipeline = jedis.pipelined()) {
            for (int from = 0; from < keys.size(); from += KEY_BATCH) {
                List<String> batch = keys.subList(from, Math.min(from + KEY_BATCH, keys.size()));
                pipeline.unlink(batch.toArray(new String[0]));
            }
            pipeline.sync();
        }
    }

    /**
     * Final cleanup for a finally block. Uses a fresh connection because the example's own
     * one may be broken (for instance a pipeline that failed half-way); a cleanup problem
     * is reported but does not hide the error that got us here.
     */
    static void cleanup(Settings s, List<String> keys) {
        try (Jedis jedis = jedis(s)) {
            deleteKeys(jedis, keys);
        } catch (RuntimeException e) {
            System.err.println("Warning: could not delete the lab's " + keys.size() + " keys at " + s.where()
                    + ": " + reason(e) + ".");
        }
    }

    /**
     * cleanup(), then the client shut down even if the cleanup failed: the finally block of
     * an example whose client library starts threads of its own, which would otherwise keep
     * the JVM running. `client` is null when its start-up failed; then only the keys go.
     */
    static <C> void cleanup(Settings s, List<String> keys, C client, Consumer<? super C> shutdown) {
        try {
            cleanup(s, keys);
        } finally {
            if (client != null) {
                shutdown.accept(client);
            }
        }
    }

    /** How many of the given keys exist, counted with a batch of names per EXISTS in one pipeline. */
    static long countExisting(Jedis jedis, List<String> keys) {
        List<Response<Long>> replies = new ArrayList<>();
        try (Pipeline pipeline = jedis.pipelined()) {
            for (int from = 0; from < keys.size(); from += KEY_BATCH) {
                List<String> batch = keys.subList(from, Math.min(from + KEY_BATCH, keys.size()));
                replies.add(pipeline.exists(batch.toArray(new String[0])));
            }
            pipeline.sync();
        }
        long total = 0;
        for (Response<Long> reply : replies) {
            total += reply.get();
        }
        return total;
    }

    /**
     * What reached the server, as INFO commandstats counts it: calls per command name
     * ("sadd", "multi", "exec", "client|reply" ...). Read on a connection of its own, so a
     * mode's delta is taken around it; the INFO itself adds one "info" call per reading.
     */
    static Map<String, Long> commandCalls(Settings s) {
        Map<String, Long> calls = new LinkedHashMap<>();
        try (Jedis jedis = jedis(s)) {
            for (String line : jedis.info("commandstats").split("\r?\n")) {
                if (line.startsWith("cmdstat_")) {
                    String name = line.substring("cmdstat_".length(), line.indexOf(':'));
                    int at = line.indexOf("calls=") + "calls=".length();
                    int end = line.indexOf(',', at);
                    calls.put(name, Long.parseLong(line.substring(at, end < 0 ? line.length() : end)));
                }
            }
        }
        return calls;
    }

    /**
     * after - before, per command, leaving out unchanged commands, the readings' own INFO, and the
     * AUTH and SELECT that only REDIS_URL's password and database add to every connection's
     * handshake (the readings' own among them), so that the counts compare with a plain run's.
     */
    static Map<String, Long> callsBetween(Map<String, Long> before, Map<String, Long> after) {
        Map<String, Long> delta = new LinkedHashMap<>();
        after.forEach((name, count) -> {
            long d = count - before.getOrDefault(name, 0L);
            if (d > 0 && !name.equals("info") && !name.equals("auth") && !name.equals("select")) {
                delta.put(name, d);
            }
        });
        return delta;
    }

    /**
     * How many times Redis ran `command` (INFO commandstats, e.g. "incr") since `before`, read
     * every 200 ms until two readings agree: a client's timeout cancels nothing, so after one
     * Redis may still be working through what it was sent. Gives up after `limit`.
     */
    static long settledCalls(Settings s, Map<String, Long> before, String command, Duration limit)
            throws InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        long last = -1;
        while (true) {
            long now = callsBetween(before, commandCalls(s)).getOrDefault(command, 0L);
            if (now == last) {
                return now;
            }
            if (System.nanoTime() > deadline) {
                throw failure("Redis was still executing " + command.toUpperCase(Locale.ROOT) + " "
                        + limit.toSeconds() + " s after the run");
            }
            last = now;
            Thread.sleep(200);
        }
    }

    /**
     * The exception to throw when a reply or a result is not what it must be: the example
     * fails loudly with exit code 1. Callers build the message only after the test failed,
     * so hot loops pay nothing for it.
     */
    static Stop failure(String what) {
        return new Stop(1, "Check failed: " + what + ".");
    }

    // ---------------------------------------------------------------- timing

    /**
     * The JVM's CPU time in nanoseconds, all its threads together (ours, JIT compilers, GC),
     * or null where the platform cannot tell. On Linux it ticks in steps of 10 ms, so it is
     * only meaningful over samples of a good fraction of a second.
     */

    private static final LongSupplier PROCESS_CPU_NANOS = processCpuClock();

    private static LongSupplier processCpuClock() {
        try {
            if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
                    && os.getProcessCpuTime() >= 0) { // -1 means "not supported here"
                return os::getProcessCpuTime;
            }
        } catch (LinkageError | RuntimeException e) {
            // a runtime without the jdk.management module: no CPU times, everything else works
        }
        return null;
    }

    /**
     * The recorded iterations of one measure() call. It is the list of wall-clock seconds
     * that measure() always returned, so existing callers need no change, and carries the
     * client's CPU seconds for the same iterations (empty when the JVM cannot report them):
     * CPU close to wall time means the client, not the network or the server, is the limit.
     */
    static final class Samples extends AbstractList<Double> {
        final List<Double> wall;
        final List<Double> cpu;
        final List<Double> warmup; // wall seconds of the warm-up iterations: reported, never in a median
        final String stopped; // what ended the rounds short of the target: "time", "rounds", "asked" or ""
        final int collected; // recorded iterations a garbage collection still fell inside

        Samples(List<Double> wall, List<Double> cpu, List<Double> warmup, String stopped, int collected) {
            this.wall = List.copyOf(wall);
            this.cpu = List.copyOf(cpu);
            this.warmup = List.copyOf(warmup);
            this.stopped = stopped;
            this.collected = collected;
        }

        @Override
        public Double get(int index) {
            return wall.get(index);
        }

        @Override
        public int size() {
            return wall.size();
        }

        /** Every run of the task, warm-up included: what the server's counters saw. */
        int iterations() {
            return wall.size() + warmup.size();
        }
    }

    // --8<-- [start:measure]
    /**
     * Runs `warmup` unrecorded iterations (JIT, class loading, connection set-up), more while
     * the JIT is still compiling or they still get clearly faster, and then `repeat` recorded ones.
     * `reset` runs before and `verify` after each iteration, both outside the timed region, so
     * every iteration does the same work and only the commands are timed. Returns one sample
     * per recorded iteration, in seconds, with the process CPU time spent in the same region.
     */
    static Samples measure(Settings s, Step reset, Step task, Step verify) throws Exception {
        Map<String, Step> one = new LinkedHashMap<>();
        one.put("task", task);
        return interleaved(s, reset, one, verify).get("task");
    }

    /**
     * Times several ways of doing the same work in rounds, A B A B ..., so that a slow moment
     * of the machine falls on all of them alike; Report#paired records that their samples pair
     * up by round. Warm-up rounds go on while the JIT compiled for over JIT_SHARE of the last
     * JIT_QUIET_S of them or a round is over 10% faster than the one before, up to
     * RepeatRule#warmupMore rounds beyond `warmup` and RepeatRule#capS seconds; a first recorded
     * round that still fails that test joins them, within the extra rounds' time.
     */
    static Map<String, Samples> interleaved(Settings s, Step reset, Map<String, Step> tasks, Step verify)
            throws Exception {
        Map<String, List<double[]>> timed = new LinkedHashMap<>();
        Map<String, List<Double>> warm = new LinkedHashMap<>();
        tasks.keySet().forEach(name -> {
            timed.put(name, new ArrayList<>());
            warm.put(name, new ArrayList<>());
        });
        List<Double> warmRounds = new ArrayList<>();
        int more = RULE == null ? 0 : RULE.warmupMore();
        double warmSpent = 0;
        List<double[]> jitRounds = new ArrayList<>(); // {wall seconds, JIT milliseconds} per warm-up round
        long jit = jitMillis();
        Map<String, Integer> times = new LinkedHashMap<>(); // runs per warm-up round: alike in seconds
        tasks.keySet().forEach(name -> times.put(name, 1));
        while (warmRounds.size() < s.warmup() || (s.warmup() > 0 && warmRounds.size() < s.warmup() + more
                && warmSpent < RULE.capS() && (jitBusy(jit, jitRounds) || falling(warmRounds)))) {
            long start = System.nanoTime();
            double round = 0;
            for (Map.Entry<String, Step> task : tasks.entrySet()) {
                for (int i = 0; i < times.get(task.getKey()); i++) {
                    double[] sample = once(reset, task.getValue(), verify);
                    warm.get(task.getKey()).add(sample[0]);
                    round += sample[0];
                }
            }
            if (warmRounds.isEmpty() && RULE != null) { // quick mode runs exactly what it asked for
                evenOut(times, warm);
            }
            warmRounds.add(round);
            warmSpent += round;
            long now = jitMillis();
            jitRounds.add(new double[] {(System.nanoTime() - start) / 1e9, now - jit});
            jit = now;
        }
        double spent = 0;
        for (int i = 0; i < s.repeat(); i++) {
            spent += timedRound(reset, tasks, verify, timed);
        }
        // More rounds while a median's interval is wider than the harness's target, within the time
        // the first rounds took (bounded both ways) and a multiple of `repeat`: RepeatRule.
        double budget = RULE == null ? 0 : Math.min(Math.max(spent, RULE.floorS()), RULE.capS());
        double perRound = spent / Math.max(1, s.repeat());
        double extra = 0;
        // A recorded round over 10% slower than the next was still warming up (the warm-up's own test,
        // which its time cap cut short): it joins the warm-up, and another round takes its place.
        while (RULE != null && timed.values().iterator().next().size() >= 2 && falling(firstRounds(timed))
                && extra + perRound <= budget) {
            timed.forEach((name, samples) -> warm.get(name).add(samples.remove(0)[0]));
            extra += timedRound(reset, tasks, verify, timed);
        }
        while (RULE != null && timed.values().stream().anyMatch(samples -> !settled(samples, RULE.target()))
                && extra + perRound <= budget
                && timed.values().iterator().next().size() < RULE.maxFactor() * s.repeat()) {
            extra += timedRound(reset, tasks, verify, timed);
        }
        int rounds = timed.values().iterator().next().size();
        String stopped = RULE == null ? "asked"
                : timed.values().stream().allMatch(samples -> settled(samples, RULE.target())) ? ""
                : rounds >= RULE.maxFactor() * s.repeat() ? "rounds" : "time";
        Map<String, Samples> out = new LinkedHashMap<>();
        timed.forEach((name, samples) -> {
            List<Double> wall = new ArrayList<>();
            List<Double> cpu = new ArrayList<>();
            int collected = 0;
            for (double[] sample : samples) {
                wall.add(sample[0]);
                if (PROCESS_CPU_NANOS != null) {
                    cpu.add(sample[1]);
                }
                collected += sample[2] > 0 ? 1 : 0;
            }
            out.put(name, new Samples(wall, cpu, warm.get(name), stopped, collected));
        });
        return out;
    }

    /**
     * When more rounds are taken: the harness's rule (pipelab/measure.py), passed in
     * PIPELAB_REPEAT_RULE as "target,floor seconds,cap seconds,max factor,warm-up rounds
     * beyond the asked-for ones". Run by hand, or in quick mode, without it, an example
     * takes exactly its `warmup` and `repeat` rounds.
     */
    record RepeatRule(double target, double floorS, double capS, int maxFactor, int warmupMore) {
        static RepeatRule fromEnv() {
            String rule = System.getenv("PIPELAB_REPEAT_RULE");
            if (rule == null || rule.isBlank()) {
                return null;
            }
            String[] parts = rule.split(",");
            return new RepeatRule(Double.parseDouble(parts[0]), Double.parseDouble(parts[1]),
                    Double.parseDouble(parts[2]), Integer.parseInt(parts[3]), Integer.parseInt(parts[4]));
        }
    }

    static final RepeatRule RULE = RepeatRule.fromEnv();

    /**
     * The JIT counts as settled once it has compiled next to nothing for this long of warm-up:
     * short samples of a cold JVM (Redisson's RBatch) kept getting faster for many timed rounds
     * after a round-on-round test had stopped the warm-up.
     */
    static final double JIT_QUIET_S = 0.25;

    /** Milliseconds the JIT's compiler threads have spent so far, or -1 where the JVM does not say. */
    private static long jitMillis() {
        var jit = ManagementFactory.getCompilationMXBean();
        return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : -1;
    }

    /** Compiling for at most this share of the warm-up's wall time counts as next to nothing. */
    static final double JIT_SHARE = 0.02;

    /**
     * A short task interleaved with a long one would get a handful of warm-up runs, too few for
     * the JIT: after the first round each task runs often enough to take about the longest's time.
     */
    private static void evenOut(Map<String, Integer> times, Map<String, List<Double>> warm) {
        double longest = warm.values().stream().mapToDouble(w -> w.get(0)).max().orElse(0);
        warm.forEach((name, w) -> times.put(name, (int) Math.max(1, Math.min(50, longest / Math.max(w.get(0), 1e-6)))));
    }

    /**
     * Whether the JIT compiled for over JIT_SHARE of the last JIT_QUIET_S of warm-up (or less
     * warm-up than that has run). Over a window, not per round: the JVM counts compilation in
     * whole milliseconds, one of which is more than 2% of a short round.
     */
    private static boolean jitBusy(long jitNow, List<double[]> rounds) {
        if (jitNow < 0) {
            return false; // the JVM does not say: the round-on-round test alone decides
        }
        double wall = 0;
        double compiling = 0;
        for (int i = rounds.size() - 1; i >= 0 && wall < JIT_QUIET_S; i--) {
            wall += rounds.get(i)[0];
            compiling += rounds.get(i)[1] / 1000;
        }
        return wall < JIT_QUIET_S || compiling > JIT_SHARE * wall;
    }

    /** The first two recorded rounds' wall seconds, every task's together. */
    private static List<Double> firstRounds(Map<String, List<double[]>> timed) {
        double first = 0;
        double second = 0;
        for (List<double[]> samples : timed.values()) {
            first += samples.get(0)[0];
            second += samples.get(1)[0];
        }
        return List.of(first, second);
    }

    /** Whether the last warm-up round was over 10% faster than the one before. */
    private static boolean falling(List<Double> rounds) {
        int n = rounds.size();
        return n < 2 || rounds.get(n - 1) < 0.9 * rounds.get(n - 2);
    }

    private static double timedRound(Step reset, Map<String, Step> tasks, Step verify,
                                     Map<String, List<double[]>> timed) throws Exception {
        double round = 0;
        for (Map.Entry<String, Step> task : tasks.entrySet()) {
            double[] sample = once(reset, task.getValue(), verify);
            timed.get(task.getKey()).add(sample);
            round += sample[0];
        }
        return round;
    }

    /**
     * Whether the median's 95% interval is within ±target: the distribution-free interval between
     * the order statistics n/2 ∓ 0.98·√n (no interval under 6 samples). The harness's bootstrap
     * intervals, computed afterwards from the same samples, are what the book prints.
     */
    static boolean settled(List<double[]> samples, double target) {
        int n = samples.size();
        if (n < 6) {
            return false;
        }
        double[] sorted = samples.stream().mapToDouble(sample -> sample[0]).sorted().toArray();
        int lo = Math.max(0, (int) Math.floor(n / 2.0 - 0.98 * Math.sqrt(n)));
        int hi = Math.min(n - 1, (int) Math.ceil(n / 2.0 + 0.98 * Math.sqrt(n)));
        double median = sorted[n / 2];
        return median > 0 && (sorted[hi] - sorted[lo]) / 2 / median <= target;
    }

    /**
     * One iteration: {wall seconds, CPU seconds, collections} of `task`, with reset before and verify
     * after, untimed.
     */
    private static double[] once(Step reset, Step task, Step verify) throws Exception {
        if (reset != null) {
            reset.run();
        }
        roomFor(task);
        long collections = collections();
        long edenBefore = EDEN == null ? 0 : EDEN.getUsage().getUsed();
        // The CPU readings bracket the wall-clock ones, so their own cost is not timed.
        long cpuStart = PROCESS_CPU_NANOS == null ? 0 : PROCESS_CPU_NANOS.getAsLong();
        long start = System.nanoTime();
        task.run();
        long elapsed = System.nanoTime() - start;
        long cpuSpent = PROCESS_CPU_NANOS == null ? 0 : PROCESS_CPU_NANOS.getAsLong() - cpuStart;
        long collected = collections() - collections;
        if (EDEN != null && collected == 0) {
            ALLOCATES.merge(task, EDEN.getUsage().getUsed() - edenBefore, Math::max);
        }
        if (verify != null) {
            verify.run();
        }
        return new double[] {elapsed / 1e9, cpuSpent / 1e9, collected};
    }

    /**
     * The young generation, where the JVM names it: in Spring's SADD job a young collection fell
     * inside a timed task every few iterations and made that sample an outlier.
     */
    private static final MemoryPoolMXBean EDEN = ManagementFactory.getMemoryPoolMXBeans().stream()
            .filter(pool -> pool.getType() == MemoryType.HEAP && pool.getName().contains("Eden")).findFirst()
            .orElse(null);

    /** The most young-generation bytes one run of each task has taken, seen on runs with no collection. */
    private static final Map<Step, Long> ALLOCATES = new IdentityHashMap<>();

    /**
     * Collects before `task` when what it took on an earlier run, and half again, would not fit in the
     * young generation's free room (and before its first run): the collection it would have started
     * falls outside the timed region, as Python's measure.timed collects first.
     */
    private static void roomFor(Step task) {
        if (EDEN == null) {
            return;
        }
        Long needs = ALLOCATES.get(task);
        MemoryUsage eden = EDEN.getUsage();
        if (needs == null || eden.getCommitted() - eden.getUsed() < needs + needs / 2) {
            System.gc();
        }
    }

    /** Collections of every collector so far. */
    private static long collections() {
        return ManagementFactory.getGarbageCollectorMXBeans().stream()
                .mapToLong(GarbageCollectorMXBean::getCollectionCount).filter(n -> n > 0).sum();
    }
    // --8<-- [end:measure]

    // ---------------------------------------------------------------- versions

    /**
     * A client library's version as it is on the classpath right now: the jar manifest's
     * Implementation-Version, else Maven's pom.properties inside the jar, else the version
     * pinned in //DEPS.
     */
    static String versionOf(Class<?> anchor, String groupId, String artifactId, String pinned) {
        Package pkg = anchor.getPackage();
        String version = pkg == null ? null : pkg.getImplementationVersion();
        if (version != null && !version.isBlank()) {
            return version.strip();
        }
        String resource = "/META-INF/maven/" + groupId + "/" + artifactId + "/pom.properties";
        try (InputStream in = anchor.getResourceAsStream(resource)) {
            if (in != null) {
                Properties props = new Properties();
                props.load(in);
                version = props.getProperty("version");
                if (version != null && !version.isBlank()) {
                    return version.strip();
                }
            }
        } catch (IOException ignored) {
            // fall through to the pinned version
        }
        return pinned;
    }

    // ---------------------------------------------------------------- output

    /**
     * The result line's JSON. NaN and infinities stay numbers (Python's json reads them) and HTML
     * characters stay as they are: the reader is the harness, not a browser.
     */
    private static final Gson GSON = new GsonBuilder().serializeSpecialFloatingPointValues().disableHtmlEscaping().create();

    static String toJson(Object value) {
        return GSON.toJson(value);
    }

    /**
     * Collects the samples of each mode, prints a readable line per mode as it goes, and
     * at the end exactly one machine-readable line for the Python harness:
     * PIPELAB-RESULT {"example":...,"java_version":...,"jvm":{"gc":...,"cpus":...},"clients":{...},"size":...,
     * "repeat":...,"warmup":...,"modes":{"mode":[seconds,...],...} [,"fields":{"mode":{"depth":256,...}}]
     * [,"ops":{"mode":commands per sample,...}] [,"cpu_s":{"mode":[client CPU seconds,...],...}]
     * [,"warmup_s":{"mode":[seconds of each warm-up iteration,...],...}]
     * [,"stopped":{"mode":"time", "rounds", "asked" or "" (settled),...}] (pipelab.measure.STOP_CAUSES)
     * [,"collected":{"mode":recorded samples a garbage collection fell inside,...}]
     * [,"wire":{"mode":{"command":calls over all the mode's iterations,...},...}]
     * [,"facts":{"name":"text" or number or boolean,...}]}
     * "ops" appears only when some mode's samples did not run `size` commands (then it lists
     * every mode); "cpu_s" for the modes measured by measure() on a JVM that reports its CPU
     * time, sample for sample as in "modes".
     */
    static final class Report {
        /** Below this much measured wall time per mode the 10 ms CPU clock tick makes a CPU percentage noise. */
        private static final double CPU_NOTE_MIN_WALL_S = 0.5;

        private final Settings s;
        private final Map<String, String> clients = new LinkedHashMap<>();
        private final Map<String, List<Double>> modes = new LinkedHashMap<>();
        private final Map<String, String> labels = new LinkedHashMap<>();
        private final Map<String, Integer> ops = new LinkedHashMap<>();
        private final Map<String, List<Double>> cpu = new LinkedHashMap<>();
        private final Map<String, List<Double>> warmups = new LinkedHashMap<>();
        private final Map<String, String> pairs = new LinkedHashMap<>();
        private final Map<String, String> stops = new LinkedHashMap<>();
        private final Map<String, Integer> collected = new LinkedHashMap<>();
        private final Map<String, Map<String, Long>> wire = new LinkedHashMap<>();
        private final Map<String, Object> facts = new LinkedHashMap<>();
        private final Map<String, Map<String, Object>> fields = new LinkedHashMap<>();
        private boolean speedUps = true;

        Report(Settings s) {
            this.s = s;
        }

        Report client(String name, String version) {
            clients.put(name, version);
            return this;
        }

        /**
         * Leaves out finish()'s "speed-up of X over Y" lines, for an example whose modes do the
         * same number of commands without being the same work against the first mode (chapter
         * 4's lists of different lengths); it prints its own comparisons. The JSON is unchanged.
         */
        Report withoutSpeedUps() {
            speedUps = false;
            return this;
        }

        /** First human line: what is about to be measured, where, with what. */
        void header(String work) {
            StringBuilder sb = new StringBuilder();
            clients.forEach((name, version) -> sb.append(", ").append(name).append(' ').append(version));
            System.out.println(s.example() + ": " + work + " against " + s.where() + ", " + s.repeat()
                    + " repetition(s) after " + s.warmup() + " warm-up (Java "
                    + System.getProperty("java.version") + sb + ")");
        }

        /** Records what a mode sent over the wire in total (all its iterations), e.g. from callsBetween(). */
        void wire(String mode, Map<String, Long> calls) {
            wire.put(mode, Map.copyOf(calls));
            System.out.println(String.format(Locale.ROOT, "%-20s on the wire: %s", labels.getOrDefault(mode, mode), calls));
        }

        /**
         * Records an observation that is not a timing (what an exception said, how many commands
         * the server applied): a String, a Number or a Boolean, printed and passed on as is.
         */
        void fact(String name, Object value) {
            if (!(value instanceof String || value instanceof Number || value instanceof Boolean)) {
                throw new IllegalArgumentException("a fact is a String, Number or Boolean: " + name);
            }
            facts.put(name, value);
            System.out.println(String.format(Locale.ROOT, "%-20s %s", name + ":", value));
        }

        /**
         * What a mode is, as fields the harness reads (e.g. depth 256, command SET, mode pipelined),
         * so that no reader parses a mode's name.
         */
        Report fields(String mode, Map<String, Object> described) {
            fields.put(mode, Map.copyOf(described));
            return this;
        }

        /** Says that these modes were measured in the same rounds (LabSupport.interleaved). */
        Report paired(Collection<String> modes) {
            String group = String.join(" / ", modes);
            modes.forEach(mode -> pairs.put(mode, group));
            return this;
        }

        /** Records a mode whose every sample ran `size` commands. */
        void add(String mode, String label, String unit, List<Double> samples) {
            add(mode, label, unit, s.size(), samples);
        }

        /**
         * Records a mode whose samples each ran `count` commands, and prints its human line
         * (the only place a median is computed). Samples from measure() bring their CPU times.
         */
        void add(String mode, String label, String unit, int count, List<Double> samples) {
            modes.put(mode, List.copyOf(samples));
            labels.put(mode, label);
            ops.put(mode, count);
            double median = median(samples);
            String cpuNote = "";
            if (samples instanceof Samples measured && !measured.warmup.isEmpty()) {
                warmups.put(mode, measured.warmup);
            }
            if (samples instanceof Samples measured) {
                stops.put(mode, measured.stopped);
                collected.put(mode, measured.collected);
            }
            if (samples instanceof Samples measured && !measured.cpu.isEmpty()) {
                cpu.put(mode, measured.cpu);
                double wall = sum(measured.wall);
                if (wall >= CPU_NOTE_MIN_WALL_S) {
                    cpuNote = String.format(Locale.ROOT, ", client CPU %.0f%% of a core", 100 * sum(measured.cpu) / wall);
                }
            }
            System.out.println(String.format(Locale.ROOT, "%-20s %9d %-6s median %s s  (min %s, max %s)  %,.0f %s/s%s",
                    label, count, unit, seconds(median), seconds(Collections.min(samples)),
                    seconds(Collections.max(samples)), count / median, unit, cpuNote));
        }

        /** Human comparison of throughputs against the first mode, then the single machine line. */
        void finish() {
            String baseline = modes.isEmpty() ? null : modes.keySet().iterator().next();
            double base = baseline == null ? 0 : throughput(baseline);
            modes.keySet().forEach(mode -> {
                // Only modes that did the baseline's work compare; demonstrations do other work.
                if (speedUps && !mode.equals(baseline) && ops.get(mode).equals(ops.get(baseline))) {
                    System.out.println(String.format(Locale.ROOT, "speed-up of %s over %s: %.1fx (medians)",
                            labels.get(mode), labels.get(baseline), throughput(mode) / base));
                }
            });
            System.out.println("PIPELAB-RESULT " + json());
        }

        /** Commands per second at the median; with equal counts the ratio of two is the ratio of medians. */
        private double throughput(String mode) {
            return ops.get(mode) / median(modes.get(mode));
        }

        String json() {
            Map<String, Object> doc = new LinkedHashMap<>();
            doc.put("example", s.example());
            doc.put("java_version", System.getProperty("java.version"));
            doc.put("jvm", jvm());
            doc.put("clients", clients);
            doc.put("size", s.size());
            doc.put("repeat", s.repeat());
            doc.put("warmup", s.warmup());
            doc.put("modes", modes);
            if (!fields.isEmpty()) {
                doc.put("fields", fields);
            }
            if (ops.values().stream().anyMatch(count -> count != s.size())) {
                doc.put("ops", ops);
            }
            if (!cpu.isEmpty()) {
                doc.put("cpu_s", cpu);
            }
            if (!warmups.isEmpty()) {
                doc.put("warmup_s", warmups);
            }
            if (!pairs.isEmpty()) {
                doc.put("paired", pairs);
            }
            if (!stops.isEmpty()) {
                doc.put("stopped", stops);
                doc.put("collected", collected);
            }
            if (!wire.isEmpty()) {
                Map<String, Map<String, Long>> sorted = new LinkedHashMap<>();
                wire.forEach((mode, calls) -> sorted.put(mode, new TreeMap<>(calls))); // commands in name order
                doc.put("wire", sorted);
            }
            if (!facts.isEmpty()) {
                doc.put("facts", facts);
            }
            return toJson(doc);
        }

        /** The collector and CPU count this JVM chose: pinned to one CPU, HotSpot picks Serial and
         *  sizes its pools for one, so two runs are only alike when these are. */
        private static Map<String, Object> jvm() {
            String gc = "unknown";
            for (var bean : ManagementFactory.getGarbageCollectorMXBeans()) {
                String name = bean.getName();
                gc = name.startsWith("G1") ? "G1" : name.startsWith("PS ") ? "Parallel"
                        : name.equals("Copy") || name.equals("MarkSweepCompact") ? "Serial"
                        : name.startsWith("ZGC") ? "Z" : name.startsWith("Shenandoah") ? "Shenandoah" : name;
                break;
            }
            Map<String, Object> jvm = new LinkedHashMap<>();
            jvm.put("gc", gc);
            jvm.put("cpus", Runtime.getRuntime().availableProcessors());
            return jvm;
        }

        private static double sum(List<Double> values) {
            double total = 0;
            for (double v : values) {
                total += v;
            }
            return total;
        }

        private static double median(List<Double> samples) {
            List<Double> sorted = new ArrayList<>(samples);
            Collections.sort(sorted);
            int n = sorted.size();
            return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
        }

        /** Three decimals read well for seconds; tiny runs (pipelines of a few PINGs) need more. */
        private static String seconds(double v) {
            return String.format(Locale.ROOT, v >= 0.01 ? "%.3f" : "%.5f", v);
        }
    }

    // ---------------------------------------------------------------- threads

    /** `total` calls split over `threads` tasks of `pool` that start together; rethrows a task's failure. */
    static void split(ExecutorService pool, int threads, int total, Step call) throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        List<Future<?>> done = new ArrayList<>(threads);
        for (int t = 0; t < threads; t++) {
            int count = total / threads + (t < total % threads ? 1 : 0);
            done.add(pool.submit(() -> {
                go.await();
                for (int i = 0; i < count; i++) {
                    call.run();
                }
                return null;
            }));
        }
        go.countDown();
        for (Future<?> f : done) {
            await(f);
        }
    }

    /** The future's value; a failure comes out as what the task threw, not wrapped. */
    static <T> T await(Future<T> future) throws Exception {
        try {
            return future.get();
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception cause ? cause : e;
        }
    }

    static double round2(double v) {
        return Math.round(100 * v) / 100.0;
    }

    // ---------------------------------------------------------------- what the server reports

    /** The numeric fields of one INFO section ("total_reads_processed" -> 1234); text fields are left out. */
    static Map<String, Long> infoNumbers(Jedis jedis, String section) {
        Map<String, Long> fields = new LinkedHashMap<>();
        for (String line : jedis.info(section).split("\r?\n")) {
            int colon = line.indexOf(':');
            if (colon > 0 && !line.startsWith("#") && line.substring(colon + 1).strip().matches("-?\\d+")) {
                fields.put(line.substring(0, colon), Long.parseLong(line.substring(colon + 1).strip()));
            }
        }
        return fields;
    }

    /** How many of the server's connections carry `name` (CLIENT SETNAME; "" counts the unnamed ones). */
    static int connectionsNamed(Jedis jedis, String name) {
        int count = 0;
        for (String line : jedis.clientList().split("\r?\n")) {
            if (line.contains(" name=" + name + " ")) {
                count++;
            }
        }
        return count;
    }
}
