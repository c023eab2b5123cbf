///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.springframework.data:spring-data-redis:4.1.1
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LabTiming.java
//SOURCES ../common/SaddWorkload.java
//SOURCES ../common/SpringSupport.java

// Chapter 3: what Spring Data Redis does with a "pipeline". N SADDs to distinct keys through
// a StringRedisTemplate on Lettuce: one by one, through RedisTemplate#executePipelined with a
// RedisCallback and with a SessionCallback, and under each LettuceConnection.PipeliningFlushPolicy.
// Plain objects, no Spring Boot and no application context: we call afterPropertiesSet(),
// start() and destroy() ourselves, which is all a container would do for these two beans.
//
//   jbang ch03-spring [host] [port] [size] [repeat] [warmup]     (defaults: 127.0.0.1, the lab's port, 100000 3 1)
//
// Every mode also records what reached the server: the commands (INFO commandstats, over the
// whole mode, so including the untimed reset's UNLINKs and the check's EXISTS) and, over the
// timed regions only, the server's read() and write() calls and the connections it accepted
// (INFO stats). The flush policies send the same commands; they change how many writes carry
// them, which shows up as the server's read count.
//
// A pipeline never runs on the factory's shared native connection (a flush policy switches
// auto-flush off on the pipeline's connection, which would hold back every other thread's
// commands on a shared one): LettuceConnection#openPipeline takes a dedicated connection
// from the factory's connection provider. Without a pool (LettucePoolingClientConfiguration)
// that is a new TCP connection with its handshake (HELLO, CLIENT SETINFO ...), closed again
// when executePipelined returns. It is part of the timed work, as in an application;
// `_connections` counts it, plus the shared connection a fresh factory opens on first use
// even when only pipelines follow.
//
// Spring Data Redis 4.1 needs Java 17 (Spring Framework 7). Its pom declares Lettuce 7.5.2; the
// book pins 7.7.0 here too, so every Lettuce figure comes from one version.

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.lettuce.core.RedisClient;
import org.springframework.data.redis.connection.RedisSetCommands;
import org.springframework.data.redis.connection.lettuce.LettuceConnection.PipeliningFlushPolicy;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisOperations;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.SessionCallback;
import org.springframework.data.redis.core.SetOperations;
import org.springframework.data.redis.core.StringRedisTemplate;

import redis.clients.jedis.Jedis;

import pipelab.SpringSupport;

public class SpringModes {

    private static final byte[] MEMBER_BYTES = SaddWorkload.MEMBER.getBytes(StandardCharsets.UTF_8);
    private static final int DEMO_SIZE = 100;
    private static final String DEMO_LIST = LabSupport.key("ch03", "spring", "list");

    public static void main(String[] args) {
        LabSupport.run("ch03-spring", args, 100_000, 3, SpringModes::bench);
    }

    static void bench(LabSupport.Settings s) throws Exception {
        List<String> keys = LabSupport.keys(s.size(), "ch03", "spring");
        List<String> demoKeys = LabSupport.keys(DEMO_SIZE, "ch03", "spring", "demo");
        List<String> allKeys = new ArrayList<>(keys);
        allKeys.addAll(demoKeys);
        allKeys.add(DEMO_LIST);

        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"))
                .client("spring-data-redis", LabSupport.versionOf(RedisTemplate.class,
                        "org.springframework.data", "spring-data-redis", "4.1.1"))
                .client("lettuce", LabSupport.versionOf(RedisClient.class, "io.lettuce", "lettuce-core", "7.7.0.RELEASE"));

        // Two Jedis connections of our own: one for the untimed reset and check, one that only
        // reads INFO stats, so that its own reads are exactly one per reading.
        try (Jedis jedis = LabSupport.connect(s); Jedis stats = LabSupport.connect(s)) {
            LabSupport.requireLabOnly(jedis, s);
            LettuceConnectionFactory factory = null;
            try {
                // The factory's defaults: one shared native Lettuce connection for ordinary commands
                // (shareNativeConnection = true), PipeliningFlushPolicy.flushEachCommand().
                factory = startFactory(s, null);
                StringRedisTemplate template = newTemplate(factory);
                report.header(s.size() + " SADDs to distinct keys through a StringRedisTemplate");

                Wire wire = new Wire(s, stats, jedis, keys);
                long[] added = new long[1];

                wire.record(report, "one_by_one", "one by one", () -> added[0] = addOneByOne(template, keys), added);
                wire.record(report, "pipelined_redis_callback", "RedisCallback",
                        () -> added[0] = addWithRedisCallback(template, keys), added);
                wire.record(report, "pipelined_session_callback", "SessionCallback",
                        () -> added[0] = addWithSessionCallback(template, keys), added);

                // Each flush policy on a factory of its own: LettuceConnectionFactory#setPipeliningFlushPolicy
                // is a factory property, handed to every LettuceConnection it creates.
                //   flushEachCommand(): Lettuce writes and flushes every command as it is issued;
                //   flushOnClose():     setAutoFlushCommands(false) at openPipeline(), a single
                //                       flushCommands() in closePipeline();
                //   buffered(n):        flushCommands() after every n commands, and at the close.
                // The same SADDs reach the server either way, in fewer and larger writes.
                Map<String, PipeliningFlushPolicy> policies = new LinkedHashMap<>();
                policies.put("flush_each_command", PipeliningFlushPolicy.flushEachCommand());
                policies.put("flush_on_close", PipeliningFlushPolicy.flushOnClose());
                policies.put("buffered_10", PipeliningFlushPolicy.buffered(10));
                policies.put("buffered_100", PipeliningFlushPolicy.buffered(100));
                policies.put("buffered_1000", PipeliningFlushPolicy.buffered(1000));
                for (Map.Entry<String, PipeliningFlushPolicy> policy : policies.entrySet()) {
                    LettuceConnectionFactory own = startFactory(s, policy.getValue());
                    try {
                        StringRedisTemplate t = newTemplate(own);
                        wire.record(report, policy.getKey(), policy.getKey().replace('_', ' '),
                                () -> added[0] = addWithRedisCallback(t, keys), added);
                    } finally {
                        own.destroy(); // closes its connections and shuts down its Lettuce client
                    }
                }

                demo(s, report, template, demoKeys);
            } finally {
                // Delete exactly our keys, and close the factory's connections and client, whatever happened.
                LabSupport.cleanup(s, allKeys, factory, LettuceConnectionFactory::destroy);
            }
        }
        report.finish();
    }

    /**
     * A LettuceConnectionFactory as a container would set it up: properties first, then
     * afterPropertiesSet() (which starts it, as isEarlyStartup() is true by default) and
     * start() (a no-op once started; kept to show the SmartLifecycle step).
     */
    static LettuceConnectionFactory startFactory(LabSupport.Settings s, PipeliningFlushPolicy policy) {
        // Spring's default client configuration, with REDIS_URL's user, password, database and TLS.
        LettuceConnectionFactory factory = SpringSupport.factory(s.host(), s.port());
        if (policy != null) {
            factory.setPipeliningFlushPolicy(policy);
        }
        factory.afterPropertiesSet();
        factory.start();
        return factory;
    }

    static StringRedisTemplate newTemplate(LettuceConnectionFactory factory) {
        StringRedisTemplate template = new StringRedisTemplate(factory);
        template.afterPropertiesSet();
        return template;
    }

    // --8<-- [start:modes]
    /** N round trips: every add() is a template.execute() that waits for its reply on the shared connection. */
    static long addOneByOne(StringRedisTemplate template, List<String> keys) {
        SetOperations<String, String> sets = template.opsForSet();
        long added = 0;
        for (String key : keys) {
            Long reply = sets.add(key, SaddWorkload.MEMBER);
            added += reply == null ? 0 : reply;
        }
        return added;
    }

    /**
     * executePipelined(RedisCallback): openPipeline() on a LettuceConnection, our callback
     * issues raw byte[] commands (each returns null while pipelined), closePipeline() waits
     * for every reply and the template deserializes them into the list it returns. The
     * callback itself must return null: a value would be overwritten by the pipeline's
     * results, so RedisTemplate rejects it with InvalidDataAccessApiUsageException.
     */
    static long addWithRedisCallback(StringRedisTemplate template, List<String> keys) {
        List<Object> replies = template.executePipelined((RedisCallback<Object>) connection -> {
            RedisSetCommands sets = connection.setCommands();
            for (String key : keys) {
                sets.sAdd(key.getBytes(StandardCharsets.UTF_8), MEMBER_BYTES);
            }
            return null;
        });
        return countOnes(replies);
    }

    /**
     * executePipelined(SessionCallback): the same pipeline, but the callback gets the
     * template's own operations (serializers included) bound to the pipelined connection,
     * so the usual opsForSet().add() calls are queued instead of sent one by one.
     */
    static long addWithSessionCallback(StringRedisTemplate template, List<String> keys) {
        List<Object> replies = template.executePipelined(new SessionCallback<Object>() {
            @Override
            @SuppressWarnings("unchecked")
            public <K, V> Object execute(RedisOperations<K, V> operations) {
                SetOperations<String, String> sets = ((RedisOperations<String, String>) operations).opsForSet();
                for (String key : keys) {
                    sets.add(key, SaddWorkload.MEMBER); // returns null inside a pipeline; the reply is in the list
                }
                return null;
            }
        });
        return countOnes(replies);
    }

    /** SADD replies the number of members added: 1 for each of our fresh keys. */
    private static long countOnes(List<Object> replies) {
        long added = 0;
        for (Object reply : replies) {
            if (Long.valueOf(1).equals(reply)) {
                added++;
            }
        }
        return added;
    }
    // --8<-- [end:modes]

    /**
     * A small example, timed but not a benchmark: 100 SETs in one
     * executePipelined(SessionCallback), then 100 RPOPs from a list in another. The results
     * show what closePipeline() hands back, in command order: SET's "OK" converted to
     * Boolean true, RPOP's values deserialized to Strings by the template's serializer.
     */
    static void demo(LabSupport.Settings s, LabSupport.Report report, StringRedisTemplate template,
                     List<String> demoKeys) {
        List<String> values = new ArrayList<>(DEMO_SIZE);
        for (int i = 0; i < DEMO_SIZE; i++) {
            values.add("v" + i);
        }
        Map<String, Long> before = LabSupport.commandCalls(s);
        template.opsForList().rightPushAll(DEMO_LIST, values); // one RPUSH with 100 values

        long start = System.nanoTime();
        List<Object> setResults = template.executePipelined(new SessionCallback<Object>() {
            @Override
            @SuppressWarnings("unchecked")
            public <K, V> Object execute(RedisOperations<K, V> operations) {
                RedisOperations<String, String> ops = (RedisOperations<String, String>) operations;
                for (int i = 0; i < DEMO_SIZE; i++) {
                    ops.opsForValue().set(demoKeys.get(i), values.get(i));
                }
                return null;
            }
        });
        double setSeconds = (System.nanoTime() - start) / 1e9;

        start = System.nanoTime();
        List<Object> popResults = template.executePipelined(new SessionCallback<Object>() {
            @Override
            @SuppressWarnings("unchecked")
            public <K, V> Object execute(RedisOperations<K, V> operations) {
                RedisOperations<String, String> ops = (RedisOperations<String, String>) operations;
                for (int i = 0; i < DEMO_SIZE; i++) {
                    ops.opsForList().rightPop(DEMO_LIST);
                }
                return null;
            }
        });
        double popSeconds = (System.nanoTime() - start) / 1e9;
        Map<String, Long> after = LabSupport.commandCalls(s);

        System.out.println("demo: " + setResults.size() + " results from " + DEMO_SIZE + " pipelined SETs, first "
                + setResults.subList(0, Math.min(3, setResults.size())));
        System.out.println("demo: " + popResults.size() + " results from " + DEMO_SIZE + " pipelined RPOPs, first "
                + popResults.subList(0, Math.min(3, popResults.size())));
        // RPUSH v0..v99 then RPOP from the same (right) end: v99 comes back first.
        for (int i = 0; i < DEMO_SIZE; i++) {
            if (!Boolean.TRUE.equals(setResults.get(i)) || !values.get(DEMO_SIZE - 1 - i).equals(popResults.get(i))) {
                throw LabSupport.failure("demo result " + i + " is SET " + setResults.get(i) + ", RPOP "
                        + popResults.get(i));
            }
        }
        report.add("demo_set_rpop", "demo SET/RPOP", "cmds", DEMO_SIZE, List.of(setSeconds, popSeconds));
        Map<String, Long> calls = new LinkedHashMap<>(LabSupport.callsBetween(before, after));
        calls.put("_set_results", (long) setResults.size());
        calls.put("_rpop_results", (long) popResults.size());
        report.wire("demo_set_rpop", calls);
    }

    /**
     * Runs a mode through LabSupport.measure and records its wire counts. The INFO stats
     * readings are taken right after the reset and right before the check, both outside the
     * timed region, so `_reads`, `_writes` and `_connections` count only the mode's own
     * traffic (all iterations, warm-up included, like the command counts).
     */
    static final class Wire {
        private final LabSupport.Settings s;
        private final Jedis stats;
        private final Jedis jedis;
        private final List<String> keys;
        private final long[] start = new long[3];
        private final long[] total = new long[3];

        Wire(LabSupport.Settings s, Jedis stats, Jedis jedis, List<String> keys) {
            this.s = s;
            this.stats = stats;
            this.jedis = jedis;
            this.keys = keys;
        }

        void record(LabSupport.Report report, String mode, String label, LabSupport.Step task, long[] added)
                throws Exception {
            Arrays.fill(total, 0);
            LabSupport.Step reset = () -> {
                LabSupport.deleteKeys(jedis, keys);
                System.arraycopy(counters(), 0, start, 0, 3);
            };
            LabSupport.Step verify = () -> {
                long[] end = counters();
                total[0] += end[0] - start[0] - 1; // less the INFO reading's own read
                total[1] += end[1] - start[1] - 1; // and its own reply
                total[2] += end[2] - start[2];
                // Outside the timed region: every SADD reported a new member and every key exists.
                SaddWorkload.verifyAdded(jedis, keys, added[0]);
            };
            Map<String, Long> before = LabSupport.commandCalls(s);
            LabSupport.Samples samples = LabSupport.measure(s, reset, task, verify);
            Map<String, Long> after = LabSupport.commandCalls(s);
            report.add(mode, label, "SADDs", samples);
            Map<String, Long> calls = new LinkedHashMap<>(LabSupport.callsBetween(before, after));
            calls.put("_reads", total[0]);
            calls.put("_writes", total[1]);
            calls.put("_connections", total[2]);
            report.wire(mode, calls);
        }

        /** total_reads_processed, total_writes_processed, total_connections_received (Redis 6.0+). */
        private long[] counters() {
            long[] values = new long[3];
            for (String line : stats.info("stats").split("\r?\n")) {
                int colon = line.indexOf(':');
                if (colon < 0) {
                    continue;
                }
                switch (line.substring(0, colon)) {
                    case "total_reads_processed" -> values[0] = Long.parseLong(line.substring(colon + 1).strip());
                    case "total_writes_processed" -> values[1] = Long.parseLong(line.substring(colon + 1).strip());
                    case "total_connections_received" -> values[2] = Long.parseLong(line.substring(colon + 1).strip());
                    default -> { }
                }
            }
            return values;
        }
    }
}
