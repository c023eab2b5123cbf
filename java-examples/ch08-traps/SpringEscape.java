///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.springframework.data:spring-data-redis:4.1.1
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LabTiming.java
//SOURCES ../common/SpringSupport.java

// Chapter 8: a RedisCallback that escapes RedisTemplate#executePipelined. N SETs through a
// StringRedisTemplate on Lettuce, all inside executePipelined, written five ways:
//   one_by_one     no pipeline at all: N template calls, the baseline;
//   escape         executePipelined(RedisCallback) whose body calls the TEMPLATE
//                  (template.opsForValue().set) instead of the connection it was handed:
//                  no error, no warning; an empty result list, and N round trips;
//   connection     the fix: the same callback using its argument, connection.stringCommands();
//   session        executePipelined(SessionCallback) through the RedisOperations it is handed;
//   session_outer  the same SessionCallback calling the outer template instead.
// Why: executePipelined(RedisCallback) opens the pipeline on the connection it passes in and
// binds nothing to the thread. A template call inside asks RedisConnectionUtils.getConnection()
// for a connection, finds none bound, and gets a fresh LettuceConnection, which runs the SET
// on the factory's shared native connection and waits for its reply. executePipelined
// (SessionCallback) first binds its connection to the thread (RedisConnectionUtils
// .bindConnection), so every template call on that thread, through `operations` or the outer
// template, finds the pipelined connection and is queued.
//
//   jbang ch08-spring [host] [port] [size] [repeat] [warmup]     (defaults: 127.0.0.1, the lab's port, 10000 3 1)
//
// For every mode the example records, per call of the mode (warm-up included, averaged): the
// size of the list executePipelined returned, the SETs the server ran (INFO commandstats),
// the server's read() calls on client sockets (total_reads_processed) and the connections it
// accepted (total_connections_received). Plain objects, no application context: the example
// calls afterPropertiesSet(), start() and destroy() itself.
//
// Lettuce's command timeout is 2 s here (commandTimeout); Spring's default, Lettuce's
// RedisURI.DEFAULT_TIMEOUT, is 60 s, and a fact says so.

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.lettuce.core.RedisClient;
import org.springframework.data.redis.connection.RedisStringCommands;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisOperations;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.SessionCallback;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.data.redis.core.ValueOperations;

import redis.clients.jedis.Jedis;

import pipelab.SpringSupport;

public class SpringEscape {

    static final String EXAMPLE = "ch08-spring";
    /** Lettuce's command timeout here; RedisURI.DEFAULT_TIMEOUT (60 s) otherwise. */
    static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(2);
    static final String VALUE = "v";
    private static final byte[] VALUE_BYTES = VALUE.getBytes(StandardCharsets.UTF_8);

    public static void main(String[] args) {
        LabSupport.run(EXAMPLE, args, 10_000, 3, SpringEscape::run);
    }

    /** One way of writing the N SETs; returns what executePipelined returned (null for no pipeline). */
    interface Mode {
        List<Object> run(StringRedisTemplate template, List<String> keys);
    }

    static void run(LabSupport.Settings s) throws Exception {
        List<String> keys = LabSupport.keys(s.size(), "ch08", "spring");
        String demoKey = LabSupport.key("ch08", "spring", "demo");
        List<String> all = new ArrayList<>(keys);
        all.add(demoKey);

        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"))
                .client("spring-data-redis", LabSupport.versionOf(RedisTemplate.class,
                        "org.springframework.data", "spring-data-redis", "4.1.1"))
                // The manifest says e.g. "7.7.0.RELEASE/1960d49": keep the version, drop the commit.
                .client("lettuce", LabSupport.versionOf(RedisClient.class, "io.lettuce", "lettuce-core",
                        "7.7.0.RELEASE").split("/")[0]);

        // Two Jedis connections of our own: one deletes and checks keys, one only reads INFO, so
        // its own reads are exactly one per reading.
        try (Jedis control = LabSupport.connect(s); Jedis stats = LabSupport.connect(s)) {
            LabSupport.requireLabOnly(control, s);
            LettuceConnectionFactory factory = null;
            try {
                factory = startFactory(s);
                StringRedisTemplate template = new StringRedisTemplate(factory);
                template.afterPropertiesSet();
                report.header(s.size() + " SETs in executePipelined through a StringRedisTemplate on Lettuce");
                report.fact("command_timeout_ms", COMMAND_TIMEOUT.toMillis());
                report.fact("command_timeout_default_ms",
                        LettuceClientConfiguration.defaultConfiguration().getCommandTimeout().toMillis());
                report.fact("share_native_connection", factory.getShareNativeConnection());

                Map<String, Mode> modes = new LinkedHashMap<>();
                modes.put("one_by_one", SpringEscape::oneByOne);
                modes.put("escape", SpringEscape::escapingCallback);
                modes.put("connection", SpringEscape::connectionCallback);
                modes.put("session", SpringEscape::sessionCallback);
                modes.put("session_outer", SpringEscape::sessionCallbackOuterTemplate);
                Map<String, Double> medians = new LinkedHashMap<>();
                for (Map.Entry<String, Mode> mode : modes.entrySet()) {
                    medians.put(mode.getKey(), record(report, s, control, stats, template, keys, mode.getKey(),
                            mode.getValue()));
                }
                report.fact("escape_over_connection_time", LabSupport.round2(medians.get("escape") / medians.get("connection")));
                readInside(report, template, demoKey);
            } finally {
                LabSupport.cleanup(s, all, factory, LettuceConnectionFactory::destroy);
            }
        }
        report.finish();
    }

    /**
     * The factory as a container would build it: properties, afterPropertiesSet() (which starts
     * it) and start(). Defaults otherwise: one shared native connection for ordinary commands,
     * PipeliningFlushPolicy.flushEachCommand(), no pool.
     */
    static LettuceConnectionFactory startFactory(LabSupport.Settings s) {
        LettuceConnectionFactory factory = SpringSupport.factory(s.host(), s.port(),
                LettuceClientConfiguration.builder().commandTimeout(COMMAND_TIMEOUT));
        factory.afterPropertiesSet();
        factory.start();
        return factory;
    }

    /** N template calls, each waiting for its reply: what the escape costs, without pretending. */
    static List<Object> oneByOne(StringRedisTemplate template, List<String> keys) {
        ValueOperations<String, String> values = template.opsForValue();
        for (String key : keys) {
            values.set(key, VALUE);
        }
        return null;
    }

    // --8<-- [start:escape]
    /**
     * The trap: the callback ignores `connection` and calls the template it closes over. Each
     * template call gets a connection of its own (nothing is bound to the thread), sends its
     * SET on the shared native connection and waits for the reply. The pipeline stays empty.
     */
    static List<Object> escapingCallback(StringRedisTemplate template, List<String> keys) {
        return template.executePipelined((RedisCallback<Object>) connection -> {
            for (String key : keys) {
                template.opsForValue().set(key, VALUE); // not `connection`: a round trip each
            }
            return null;
        });
    }
    // --8<-- [end:escape]

    // --8<-- [start:escape_fix]
    /**
     * The fix: every command through the connection the callback is handed, in bytes (the
     * template's serializers are not involved here). Each call returns null and queues; the
     * replies come back in the list, SET's "OK" converted to true.
     */
    static List<Object> connectionCallback(StringRedisTemplate template, List<String> keys) {
        return template.executePipelined((RedisCallback<Object>) connection -> {
            RedisStringCommands strings = connection.stringCommands();
            for (String key : keys) {
                strings.set(key.getBytes(StandardCharsets.UTF_8), VALUE_BYTES);
            }
            return null;
        });
    }
    // --8<-- [end:escape_fix]

    // --8<-- [start:session]
    /**
     * A SessionCallback: executePipelined binds the pipelined connection to the thread first,
     * so the operations it hands in (the same template) queue their commands.
     */
    static List<Object> sessionCallback(StringRedisTemplate template, List<String> keys) {
        return template.executePipelined(new SessionCallback<Object>() {
            @Override
            @SuppressWarnings("unchecked")
            public <K, V> Object execute(RedisOperations<K, V> operations) {
                ValueOperations<String, String> values = ((RedisOperations<String, String>) operations).opsForValue();
                for (String key : keys) {
                    values.set(key, VALUE);
                }
                return null;
            }
        });
    }

    /** The SessionCallback calling the outer template: same factory, same thread, same bound connection. */
    static List<Object> sessionCallbackOuterTemplate(StringRedisTemplate template, List<String> keys) {
        return template.executePipelined(new SessionCallback<Object>() {
            @Override
            public <K, V> Object execute(RedisOperations<K, V> operations) {
                for (String key : keys) {
                    template.opsForValue().set(key, VALUE);
                }
                return null;
            }
        });
    }
    // --8<-- [end:session]

    /**
     * Runs one mode through LabSupport.measure: the reset deletes the keys and reads the
     * server's counters, the check reads them again and makes sure all N keys hold VALUE, both
     * outside the timed region. Facts <mode>_results, _sets_per_call, _reads_per_call,
     * _connections_per_call. Returns the median seconds.
     */
    static double record(LabSupport.Report report, LabSupport.Settings s, Jedis control, Jedis stats,
                         StringRedisTemplate template, List<String> keys, String mode, Mode body) throws Exception {
        long[] start = new long[3];
        long[] total = new long[3];
        int[] calls = {0};
        int[] results = {-1};
        LabSupport.Samples samples = LabSupport.measure(s, () -> {
            LabSupport.deleteKeys(control, keys);
            System.arraycopy(counters(stats), 0, start, 0, 3);
        }, () -> {
            List<Object> list = body.run(template, keys);
            results[0] = list == null ? -1 : list.size();
        }, () -> {
            long[] end = counters(stats);
            total[0] += end[0] - start[0];
            total[1] += end[1] - start[1] - 1; // less this reading's own read of INFO
            total[2] += end[2] - start[2];
            calls[0]++;
            long present = countValue(control, keys);
            if (present != keys.size()) {
                throw LabSupport.failure(mode + " left " + present + " of " + keys.size() + " keys holding '" + VALUE + "'");
            }
        });
        report.add(mode, mode.replace('_', ' '), "SETs", samples);
        if (results[0] >= 0) {
            report.fact(mode + "_results", results[0]);
        }
        report.fact(mode + "_sets_per_call", LabSupport.round2((double) total[0] / calls[0]));
        report.fact(mode + "_reads_per_call", LabSupport.round2((double) total[1] / calls[0]));
        report.fact(mode + "_connections_per_call", LabSupport.round2((double) total[2] / calls[0]));
        List<Double> sorted = new ArrayList<>(samples);
        sorted.sort(null);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    /**
     * SET calls (commandstats), read() calls on client sockets (total_reads_processed) and
     * connections accepted (total_connections_received), from one INFO all.
     */
    static long[] counters(Jedis stats) {
        long[] values = new long[3];
        for (String line : stats.info("all").split("\r?\n")) {
            if (line.startsWith("cmdstat_set:")) {
                int at = line.indexOf("calls=") + "calls=".length();
                values[0] = Long.parseLong(line.substring(at, line.indexOf(',', at)));
            } else if (line.startsWith("total_reads_processed:")) {
                values[1] = Long.parseLong(line.substring(line.indexOf(':') + 1).strip());
            } else if (line.startsWith("total_connections_received:")) {
                values[2] = Long.parseLong(line.substring(line.indexOf(':') + 1).strip());
            }
        }
        return values;
    }

    /** How many of the keys hold VALUE, read in one Jedis pipeline of GETs. */
    static long countValue(Jedis control, List<String> keys) {
        List<redis.clients.jedis.Response<String>> replies = new ArrayList<>(keys.size());
        try (redis.clients.jedis.Pipeline pipeline = control.pipelined()) {
            for (String key : keys) {
                replies.add(pipeline.get(key));
            }
            pipeline.sync();
        }
        return replies.stream().filter(r -> VALUE.equals(r.get())).count();
    }

    // --8<-- [start:tell]
    /**
     * How to tell, from inside: in a pipeline a read returns null (its reply comes later, in
     * the list). A template read inside a RedisCallback returns the value at once, because it
     * did not go through the pipeline. Facts get_inside_template, get_inside_connection and
     * get_inside_results (what the pipeline returned: the connection's GET only).
     */
    static void readInside(LabSupport.Report report, StringRedisTemplate template, String key) {
        template.opsForValue().set(key, "written-before");
        String[] seen = new String[2];
        List<Object> results = template.executePipelined((RedisCallback<Object>) connection -> {
            seen[0] = template.opsForValue().get(key);
            byte[] raw = connection.stringCommands().get(key.getBytes(StandardCharsets.UTF_8));
            seen[1] = raw == null ? null : new String(raw, StandardCharsets.UTF_8);
            return null;
        });
        report.fact("get_inside_template", String.valueOf(seen[0]));
        report.fact("get_inside_connection", String.valueOf(seen[1]));
        report.fact("get_inside_results", String.valueOf(results));
    }
    // --8<-- [end:tell]
}
