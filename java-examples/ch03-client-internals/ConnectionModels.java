///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.springframework.data:spring-data-redis:4.1.1
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.openjdk.jmh:jmh-core:1.37
//DEPS org.openjdk.jmh:jmh-generator-annprocess:1.37
//DEPS org.slf4j:slf4j-simple:2.0.17
//DEPS com.google.code.gson:gson:2.14.0
//SOURCES ../common/LabDefaults.java
//SOURCES ../common/JedisSupport.java
//SOURCES ../common/LettuceSupport.java
//SOURCES ../common/SpringSupport.java
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn

// Chapter 3: connection models under concurrency, measured with JMH. Many threads each issue
// one blocking SET after another (SET pipelab:ch03:jmh:<thread index> v, one key per thread),
// through four models:
//   jedis_pool_8    a JedisPool with the default GenericObjectPoolConfig (maxTotal 8): each
//                   call borrows a connection, so at most 8 commands are in flight;
//   jedis_pool_100  the same with maxTotal 100;
//   lettuce_shared  one StatefulRedisConnection, sync API, shared by every thread: Lettuce
//                   writes each caller's command as it comes and matches the replies in order,
//                   so all the waiting threads' commands are in flight on one socket together;
//   spring_lettuce  a StringRedisTemplate on a LettuceConnectionFactory, shareNativeConnection
//                   true (the default), so again one native connection for all threads.
// Throughput is commands in flight / round-trip time (Little's law): with a 1 ms round trip a
// pool of 8 tops out near 8 ops/ms, while the shared connection keeps one command per waiting
// thread in flight. On loopback the round trip is some tens of µs and CPU time (the client's
// threads and Redis sharing the same cores) is the limit instead, so the models come out much
// closer. Nothing here assumes loopback; the timeouts are 10 s.
//
//   jbang ch03-jmh [host] [port] [warmups] [iterations] [seconds] [threads] [forks]
//                                  (defaults: 127.0.0.1, the lab's port, 1 3 1 10,50,100,150 1)
//
// warmups x seconds of warm-up, then iterations x seconds of measurement, one fork per run
// (forks 0 runs every model in this JVM: a quick check of the code, not a measurement),
// for each model at each thread count; counts above 100 run only for jedis_pool_100, as in
// the published table. The chapter (pipelab/chapters/ch03.py) passes its own settings.
//
// JMH's annotation processor (jmh-generator-annprocess, found on the classpath by javac
// when JBang compiles this file) writes the benchmark stubs and META-INF/BenchmarkList. It
// refuses classes in the default package, hence the package below; for the same reason this
// example cannot use the lab's LabSupport (a default-package class) and carries its own
// small safety check, cleanup and result line. Its connections take REDIS_URL's user, password,
// database and TLS from the same helpers as every other example (package pipelab); the forked
// JVMs read REDIS_URL from the environment they inherit, never from their command line.

package pipelab.ch03;

import pipelab.JedisSupport;
import pipelab.LabConnection;
import pipelab.LabDefaults;
import pipelab.LettuceSupport;
import pipelab.SpringSupport;
import com.google.gson.GsonBuilder;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.ThreadParams;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.StringRedisTemplate;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisPool;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class ConnectionModels {

    static final String PREFIX = LabDefaults.prefix();
    static final String KEY_PREFIX = PREFIX + "ch03:jmh:";
    static final String VALUE = "v";
    static final int TIMEOUT_MS = 10_000;

    /** The published study's ops/ms, by model and thread count, printed beside ours. */
    static final Map<String, Map<Integer, Integer>> PUBLISHED = Map.of(
            "jedis_pool_8", Map.of(10, 61, 50, 73, 100, 89),
            "jedis_pool_100", Map.of(10, 72, 50, 356, 100, 626, 150, 640),
            "lettuce_shared", Map.of(10, 78, 50, 370, 100, 726),
            "spring_lettuce", Map.of(10, 78, 50, 382, 100, 725));

    // ------------------------------------------------------------ where the server is

    // The benchmark JVM (a fork) gets host and port as system properties, see run().
    static String host() {
        return System.getProperty("pipelab.host", LabDefaults.HOST);
    }

    static int port() {
        return Integer.getInteger("pipelab.port", LabDefaults.port());
    }

    /**
     * The Jedis settings of every connection here: the timeout, RESP2 stated outright (Jedis, unlike
     * its newer RedisClient, cannot negotiate RESP3 and warns when a config leaves negotiation on),
     * plus REDIS_URL's user, password, database and TLS.
     */
    static JedisClientConfig jedisConfig(String host, int port) {
        return JedisSupport.config(host, port, DefaultJedisClientConfig.builder().timeoutMillis(TIMEOUT_MS)
                .autoNegotiateProtocol(false));
    }

    // ------------------------------------------------------------ the four models

    /** One key per benchmark thread, so no two threads write the same key. */
    @State(Scope.Thread)
    public static class ThreadKey {
        String key;

        @Setup(Level.Trial)
        public void setUp(ThreadParams threads) {
            key = KEY_PREFIX + threads.getThreadIndex();
        }
    }

    /**
     * JedisPool is commons-pool2 GenericObjectPool of Jedis connections; one call is
     * getResource() (borrow, blocking while all maxTotal are lent out), the command, and
     * close() (return). Jedis 8 marks JedisPool deprecated in favour of RedisClient, which
     * keeps a pool of connections too; JedisPool keeps the pool in sight, the point here.
     */
    @State(Scope.Benchmark)
    public static class JedisPool8 {
        JedisPool pool;

        @Setup(Level.Trial)
        @SuppressWarnings("deprecation")
        public void open() {
            // new GenericObjectPoolConfig<>(): maxTotal 8, maxIdle 8, block without limit when empty.
            pool = new JedisPool(new GenericObjectPoolConfig<Jedis>(), new HostAndPort(host(), port()),
                    jedisConfig(host(), port()));
        }

        @TearDown(Level.Trial)
        public void close() {
            pool.close();
        }
    }

    @State(Scope.Benchmark)
    public static class JedisPool100 {
        JedisPool pool;

        @Setup(Level.Trial)
        @SuppressWarnings("deprecation")
        public void open() {
            GenericObjectPoolConfig<Jedis> config = new GenericObjectPoolConfig<>();
            config.setMaxTotal(100);
            // maxIdle defaults to 8: connections returned beyond 8 idle ones would be closed and
            // reopened on the next borrow, so a pool of 100 keeps up to 100 idle as well.
            config.setMaxIdle(100);
            pool = new JedisPool(config, new HostAndPort(host(), port()), jedisConfig(host(), port()));
        }

        @TearDown(Level.Trial)
        public void close() {
            pool.close();
        }
    }

    /** One Lettuce connection for all threads; sync() blocks each caller on its own reply future. */
    @State(Scope.Benchmark)
    public static class LettuceShared {
        RedisClient client;
        StatefulRedisConnection<String, String> connection;
        RedisCommands<String, String> commands;

        @Setup(Level.Trial)
        public void open() {
            client = LettuceSupport.client(LettuceSupport.uri(host(), port())
                    .withTimeout(Duration.ofMillis(TIMEOUT_MS)).build());
            connection = client.connect();
            commands = connection.sync();
        }

        @TearDown(Level.Trial)
        public void close() {
            connection.close();
            client.shutdown();
        }
    }

    /**
     * Spring Data Redis as a Spring Boot app would configure it, without the container:
     * afterPropertiesSet() starts the LettuceConnectionFactory, destroy() stops it. Every
     * template call gets a LettuceConnection wrapping the factory's shared native connection.
     */
    @State(Scope.Benchmark)
    public static class SpringLettuce {
        LettuceConnectionFactory factory;
        StringRedisTemplate template;

        @Setup(Level.Trial)
        public void open() {
            factory = SpringSupport.factory(host(), port(), LettuceClientConfiguration.builder()
                    .commandTimeout(Duration.ofMillis(TIMEOUT_MS)));
            factory.afterPropertiesSet(); // shareNativeConnection is true by default
            template = new StringRedisTemplate(factory);
            template.afterPropertiesSet();
        }

        @TearDown(Level.Trial)
        public void close() {
            factory.destroy();
        }
    }

    // One command per call, each waiting for its reply; JMH consumes the returned value.

    @Benchmark
    public String jedis_pool_8(JedisPool8 state, ThreadKey k) {
        try (Jedis jedis = state.pool.getResource()) {
            return jedis.set(k.key, VALUE);
        }
    }

    @Benchmark
    public String jedis_pool_100(JedisPool100 state, ThreadKey k) {
        try (Jedis jedis = state.pool.getResource()) {
            return jedis.set(k.key, VALUE);
        }
    }

    @Benchmark
    public String lettuce_shared(LettuceShared state, ThreadKey k) {
        return state.commands.set(k.key, VALUE);
    }

    @Benchmark
    public void spring_lettuce(SpringLettuce state, ThreadKey k) {
        state.template.opsForValue().set(k.key, VALUE); // void: Spring drops SET's "OK"
    }

    // ------------------------------------------------------------ driver

    record Run(String model, int threads) {
    }

    public static void main(String[] args) {
        int code;
        try {
            code = drive(args);
        } catch (LabConnection.Refused refused) {
            // A malformed REDIS_URL (2), credentials or TLS refused (4), an ACL rule (5).
            System.out.flush();
            System.err.println(refused.getMessage());
            code = refused.exitCode;
        } catch (Exception e) {
            LabConnection.Refused refused = LabConnection.refusal(e, host() + ":" + port());
            System.out.flush();
            if (refused != null) {
                System.err.println(refused.getMessage());
                code = refused.exitCode;
            } else {
                System.err.println("ch03-jmh failed unexpectedly:");
                e.printStackTrace();
                code = 1;
            }
        }
        System.out.flush();
        System.exit(code); // client libraries may leave non-daemon threads behind
    }

    static int drive(String[] args) throws Exception {
        String usage = "usage: jbang ch03-jmh [host] [port] [warmups] [iterations] [seconds] [threads] [forks]"
                + " (defaults: 127.0.0.1, the lab's port, 1 3 1 10,50,100,150 1)";
        if (args.length > 0 && (args[0].equals("-h") || args[0].equals("--help"))) {
            System.out.println(usage);
            return 0;
        }
        // Host and port: the arguments', else REDIS_URL's, else the lab's defaults.
        LabConnection url = LabConnection.get();
        String host = args.length > 0 ? args[0].trim() : url.host();
        int port;
        Settings jmh;
        List<Integer> threadCounts = new ArrayList<>();
        try {
            port = args.length > 1 ? Integer.parseInt(args[1].trim()) : url.port();
            jmh = new Settings(args.length > 2 ? Integer.parseInt(args[2].trim()) : 1,
                    args.length > 3 ? Integer.parseInt(args[3].trim()) : 3,
                    args.length > 4 ? Integer.parseInt(args[4].trim()) : 1,
                    args.length > 6 ? Integer.parseInt(args[6].trim()) : 1);
            for (String count : (args.length > 5 ? args[5] : "10,50,100,150").split(",")) {
                threadCounts.add(Integer.parseInt(count.trim()));
            }
            if (args.length > 7 || jmh.forks() < 0 || jmh.forks() > 1 || host.isEmpty() || port < 1 || port > 65_535 || jmh.warmups() < 0
                    || jmh.iterations() < 1 || jmh.seconds() < 1 || threadCounts.stream().anyMatch(t -> t < 1)) {
                throw new NumberFormatException();
            }
        } catch (NumberFormatException e) {
            System.err.println("ch03-jmh: bad arguments " + List.of(args) + "; " + usage + ".");
            return 2;
        }
        System.setProperty("pipelab.host", host); // for forks(0); forked JVMs get -D below
        System.setProperty("pipelab.port", Integer.toString(port));

        List<Run> runs = new ArrayList<>();
        for (String model : List.of("jedis_pool_8", "jedis_pool_100", "lettuce_shared", "spring_lettuce")) {
            for (int threads : threadCounts) {
                if (threads <= 100 || model.equals("jedis_pool_100")) {
                    runs.add(new Run(model, threads));
                }
            }
        }
        int maxThreads = runs.stream().mapToInt(Run::threads).max().orElse(0);

        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("warmup_iterations", jmh.warmups());
        settings.put("warmup_s", jmh.seconds());
        settings.put("measurement_iterations", jmh.iterations());
        settings.put("measurement_s", jmh.seconds());
        settings.put("forks", jmh.forks());
        settings.put("command", "SET " + KEY_PREFIX + "<thread index> " + VALUE);

        Map<String, String> clients = new LinkedHashMap<>();
        clients.put("jedis", version(Jedis.class, "8.0.2"));
        clients.put("lettuce", version(RedisClient.class, "7.7.0.RELEASE"));
        clients.put("spring-data-redis", version(RedisTemplate.class, "4.1.1"));
        clients.put("jmh", version(Runner.class, "1.37"));

        Jedis connection = connect(host, port);
        if (connection == null) {
            return 4;
        }
        try (Jedis jedis = connection) {
            String foreign = foreignKey(jedis);
            if (foreign != null) {
                System.err.println("The Redis at " + host + ":" + port + " holds keys that are not the lab's (for example '"
                        + foreign + "'); point the example at an empty Redis or database."
                        + " The lab never deletes keys it did not create.");
                return 3;
            }
            System.out.println("ch03-jmh: " + runs.size() + " JMH runs of one SET per call against " + host + ":" + port
                    + " (Java " + System.getProperty("java.version") + ", " + clients + ", " + settings + ")");

            List<Map<String, Object>> rows = new ArrayList<>();
            try {
                for (Run run : runs) {
                    RunResult result = run(run, host, port, jmh);
                    Result<?> primary = result.getPrimaryResult();
                    Integer published = PUBLISHED.get(run.model()).get(run.threads());
                    System.out.println(String.format(Locale.ROOT, "%-15s %4d threads  %8.1f ± %6.1f %s%s",
                            run.model(), run.threads(), primary.getScore(), primary.getScoreError(),
                            primary.getScoreUnit(), published == null ? "" : "   (published " + published + ")"));
                    Map<String, Object> row = new LinkedHashMap<>();
                    row.put("model", run.model());
                    row.put("threads", run.threads());
                    row.put("ops_per_ms", number(primary.getScore()));
                    row.put("error", number(primary.getScoreError()));
                    // The slowest and fastest measured iteration: the spread the method page asks for.
                    row.put("min", number(primary.getStatistics().getMin()));
                    row.put("max", number(primary.getStatistics().getMax()));
                    row.put("unit", primary.getScoreUnit());
                    rows.add(row);
                }
            } finally {
                // Exactly the keys the threads wrote; one UNLINK.
                String[] keys = new String[maxThreads];
                for (int i = 0; i < maxThreads; i++) {
                    keys[i] = KEY_PREFIX + i;
                }
                jedis.unlink(keys);
            }
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("example", "ch03-jmh");
            result.put("java_version", System.getProperty("java.version"));
            result.put("clients", clients);
            result.put("settings", settings);
            result.put("jmh", rows);
            System.out.println("PIPELAB-RESULT " + new GsonBuilder().disableHtmlEscaping().serializeNulls().create().toJson(result));
        }
        return 0;
    }

    /** JMH's iterations, as the chapter sizes them. */
    record Settings(int warmups, int iterations, int seconds, int forks) {
    }

    /**
     * One JMH run: one benchmark method at one thread count, in a forked JVM (forks 1) so that
     * each model starts from a fresh JIT and heap, or in this one (forks 0). JMH starts the fork with this JVM's
     * classpath and options, to which we append where the server is.
     */
    static RunResult run(Run run, String host, int port, Settings jmh) throws Exception {
        Options options = new OptionsBuilder()
                .include(ConnectionModels.class.getName() + "\\." + run.model() + "$")
                .threads(run.threads())
                .forks(jmh.forks())
                .jvmArgsAppend("-Dpipelab.host=" + host, "-Dpipelab.port=" + port)
                .warmupIterations(jmh.warmups())
                .warmupTime(TimeValue.seconds(jmh.seconds()))
                .measurementIterations(jmh.iterations())
                .measurementTime(TimeValue.seconds(jmh.seconds()))
                .shouldFailOnError(true) // a failed SET ends the run instead of giving a number
                .verbosity(VerboseMode.SILENT)
                .build();
        Collection<RunResult> results = new Runner(options).run();
        if (results.size() != 1) {
            throw new IllegalStateException("JMH ran " + results.size() + " benchmarks for " + run
                    + "; is META-INF/BenchmarkList missing (annotation processing off)?");
        }
        return results.iterator().next();
    }

    /**
     * A checked Jedis connection for the safety check and the cleanup, or null after saying why not;
     * REDIS_URL's credentials or TLS refused, or an ACL rule, throw LabConnection.Refused.
     */
    static Jedis connect(String host, int port) {
        Jedis jedis = null;
        try {
            jedis = new Jedis(new HostAndPort(host, port), jedisConfig(host, port)); // connects here
            jedis.ping();
            return jedis;
        } catch (JedisException e) {
            if (jedis != null) {
                jedis.close();
            }
            LabConnection.Refused refused = LabConnection.refusal(e, host + ":" + port);
            if (refused != null) {
                throw refused;
            }
            // Jedis keeps the socket's own error ("Connection refused") as cause or suppressed.
            Throwable t = e;
            String reason = e.getMessage();
            while ((t = t.getCause() != null ? t.getCause()
                    : t.getSuppressed().length > 0 ? t.getSuppressed()[0] : null) != null) {
                reason = t.getMessage() != null ? t.getMessage() : reason;
            }
            System.err.println("Cannot reach Redis at " + host + ":" + port + ": " + reason
                    + LabConnection.plainToTlsHint(reason)
                    + ". Start the lab's Redis (make lab) or pass host and port.");
            return null;
        }
    }

    /** The first key that is not the lab's, walking with SCAN (not KEYS), or null. */
    static String foreignKey(Jedis jedis) {
        ScanParams params = new ScanParams().count(1000);
        String cursor = ScanParams.SCAN_POINTER_START;
        do {
            ScanResult<String> page = jedis.scan(cursor, params);
            for (String key : page.getResult()) {
                if (!key.startsWith(PREFIX)) {
                    return key.length() > 60 ? key.substring(0, 57) + "..." : key;
                }
            }
            cursor = page.getCursor();
        } while (!ScanParams.SCAN_POINTER_START.equals(cursor));
        return null;
    }

    static String version(Class<?> anchor, String pinned) {
        Package pkg = anchor.getPackage();
        String v = pkg == null ? null : pkg.getImplementationVersion();
        return v == null || v.isBlank() ? pinned : v.strip();
    }

    /** The score rounded to three decimals; JMH reports NaN as the error of a single iteration, written as null. */
    static Double number(double v) {
        return Double.isFinite(v) ? Math.round(v * 1000) / 1000.0 : null;
    }
}
