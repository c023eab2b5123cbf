// Shared plumbing for the lab's JBang examples: arguments, the empty-database safety
// check, timing, cleanup and the result lines. Each example pulls it in with
//   //SOURCES ../common/LabSupport.java
// and declares the Jedis //DEPS itself, so the version a reader sees at the top of an
// example is the one that runs (this file compiles against that Jedis). Gson, which Jedis 8
// depends on already, writes the result line; it is declared here because this file uses it.
// Connections go where REDIS_URL (LabConnection) says, with its user, password, database and TLS;
// a Settings carries the LabConnection to log in with, so a cluster node's (LabConnection.cluster())
// travels with its host and port. Its parts (LabArgs, LabTiming, LabReport, LabInfo) keep each file
// under 600 lines; the //SOURCES lines below bring them in, and the examples call them by LabSupport's names.
//DEPS com.google.code.gson:gson:2.14.0
//SOURCES LabDefaults.java
//SOURCES JedisSupport.java
//SOURCES LabArgs.java
//SOURCES LabTiming.java
//SOURCES LabReport.java
//SOURCES LabInfo.java

import pipelab.JedisSupport;
import pipelab.LabConnection;
import pipelab.LabDefaults;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;

import java.time.Duration;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.function.Consumer;
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
            settings = LabArgs.parse(example, args, defaultSize, defaultRepeat, url.get());
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

    // LabArgs reads them; the examples call it by these names.

    static List<Integer> intList(String example, String name, String text) {
        return LabArgs.intList(example, name, text);
    }

    static Settings serverAt(Settings s, String text, String what) {
        return LabArgs.serverAt(s, text, what);
    }

    static String[] extra(String[] args) {
        return LabArgs.extra(args);
    }

    static String[] usual(String[] args) {
        return LabArgs.usual(args);
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

    // What the server reports (INFO commandstats and sections, CLIENT LIST): LabInfo's, by these names.

    static Map<String, Long> commandCalls(Settings s) {
        return LabInfo.commandCalls(s);
    }

    static Map<String, Long> callsBetween(Map<String, Long> before, Map<String, Long> after) {
        return LabInfo.callsBetween(before, after);
    }

    static long settledCalls(Settings s, Map<String, Long> before, String command, Duration limit)
            throws InterruptedException {
        return LabInfo.settledCalls(s, before, command, limit);
    }

    static Map<String, Long> infoNumbers(Jedis jedis, String section) {
        return LabInfo.infoNumbers(jedis, section);
    }

    static int connectionsNamed(Jedis jedis, String name) {
        return LabInfo.connectionsNamed(jedis, name);
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

    /** Times `task` after its warm-up, `reset` and `verify` untimed around it (LabTiming.measure). */
    static Samples measure(Settings s, Step reset, Step task, Step verify) throws Exception {
        return LabTiming.measure(s, reset, task, verify);
    }

    /** Times several ways of doing the same work in rounds, A B A B ... (LabTiming.interleaved). */
    static Map<String, Samples> interleaved(Settings s, Step reset, Map<String, Step> tasks, Step verify)
            throws Exception {
        return LabTiming.interleaved(s, reset, tasks, verify);
    }

    // ---------------------------------------------------------------- versions

    /** A client library's version as it is on the classpath right now (LabReport.versionOf). */
    static String versionOf(Class<?> anchor, String groupId, String artifactId, String pinned) {
        return LabReport.versionOf(anchor, groupId, artifactId, pinned);
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

    /** The result lines (LabReport), under the name the examples use: its chained calls stay a Report. */
    static final class Report extends LabReport {
        Report(Settings s) {
            super(s);
        }

        @Override
        Report client(String name, String version) {
            super.client(name, version);
            return this;
        }

        @Override
        Report withoutSpeedUps() {
            super.withoutSpeedUps();
            return this;
        }

        @Override
        Report fields(String mode, Map<String, Object> described) {
            super.fields(mode, described);
            return this;
        }

        @Override
        Report paired(Collection<String> modes) {
            super.paired(modes);
            return this;
        }
    }

    // ---------------------------------------------------------------- threads

    /** `total` calls split over `threads` tasks that start together, as a timed task (LabTiming.split). */
    static void split(ExecutorService pool, int threads, int total, Step call) throws Exception {
        LabTiming.split(pool, threads, total, call);
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
}
