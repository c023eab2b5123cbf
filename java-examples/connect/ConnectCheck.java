///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.redisson:redisson:4.7.0
//DEPS org.springframework.data:spring-data-redis:4.1.1
//DEPS io.valkey:valkey-glide:2.3.1:${os.detected.classifier}
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
// Redisson logs every failed connection attempt with its stack trace; the facts say what failed.
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.log.org.redisson.client.handler.ErrorsLoggingHandler=off
//SOURCES ../common/LabSupport.java
//SOURCES ../common/RedissonSupport.java
//SOURCES ../common/SpringSupport.java
//SOURCES ../common/GlideSupport.java

// Before a course: does every Java client of the lab reach the Redis that REDIS_URL names, with
// its user, password, database and TLS? Each of Jedis, a Jedis pipeline, Lettuce, Redisson, Spring
// Data Redis (on Lettuce) and Valkey GLIDE connects through the lab's own helpers, sends PING, and
// SETs, GETs and DELs one key of its own under the lab's prefix (pipelab:connect:<client>); then
// Jedis reads INFO, which every example needs for its wire counts. Every client is tried even
// when one fails. A fact per client ("ok", or the one sentence saying what failed), whether TLS
// was on and as which user, in the usual result line.
//
//   REDIS_URL='rediss://user:password@host:port/0?ssl_ca_certs=/path/ca.pem' jbang lab-connect [host] [port]
//
// Exit code 0 when every client got through; else the first failure's: 4 unreachable, password
// or TLS refused, 5 an ACL rule forbids a command (NOPERM), 1 anything else; 2 a malformed
// REDIS_URL or bad arguments.

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import glide.api.GlideClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.api.redisnode.RedisNodes;
import org.redisson.config.Config;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.StringRedisTemplate;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;

import pipelab.GlideSupport;
import pipelab.LabConnection;
import pipelab.LettuceSupport;
import pipelab.SpringSupport;

public class ConnectCheck {

    static final String EXAMPLE = "lab-connect";
    /** A client's fact when it got through. */
    static final String OK = "ok";
    /** What each client SETs and reads back. */
    static final String VALUE = "lab-connect";
    /** Long enough for a TLS handshake on a busy machine, short enough that a dead server fails soon. */
    static final Duration TIMEOUT = Duration.ofSeconds(10);

    public static void main(String[] args) {
        LabSupport.run(EXAMPLE, args, 1, 1, ConnectCheck::check);
    }

    /** One client's round: PING, then SET, GET and DEL of `key`; throws what the client threw. */
    interface Probe {
        void run(LabSupport.Settings s, String key) throws Exception;
    }

    static void check(LabSupport.Settings s) throws Exception {
        LabConnection url = LabConnection.get();
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"))
                .client("lettuce", LabSupport.versionOf(RedisClient.class, "io.lettuce", "lettuce-core",
                        "7.7.0.RELEASE").split("/")[0])
                .client("redisson", LabSupport.versionOf(Redisson.class, "org.redisson", "redisson", "4.7.0"))
                .client("spring-data-redis", LabSupport.versionOf(RedisTemplate.class,
                        "org.springframework.data", "spring-data-redis", "4.1.1"))
                .client("valkey-glide", LabSupport.versionOf(GlideClient.class, "io.valkey", "valkey-glide", "2.3.1"));
        // Its own first line: Report#header speaks of repetitions, which this check has none of.
        System.out.println(EXAMPLE + ": PING, SET, GET and DEL through every Java client against " + s.where()
                + ", as user '" + url.userName() + "'" + (url.tls() ? " over TLS" : "")
                + (url.database() != 0 ? " on database " + url.database() : "") + " (Java "
                + System.getProperty("java.version") + ")");

        Map<String, Probe> probes = new LinkedHashMap<>();
        probes.put("jedis", ConnectCheck::jedis);
        probes.put("jedis_pipeline", ConnectCheck::jedisPipeline);
        probes.put("lettuce", ConnectCheck::lettuce);
        probes.put("redisson", ConnectCheck::redisson);
        probes.put("spring", ConnectCheck::spring);
        probes.put("glide", ConnectCheck::glide);
        probes.put("info", ConnectCheck::info);

        List<String> failures = new ArrayList<>();
        int code = 0;
        for (Map.Entry<String, Probe> probe : probes.entrySet()) {
            String key = LabSupport.key("connect", probe.getKey());
            String outcome = OK;
            try {
                probe.getValue().run(s, key);
            } catch (LabSupport.Stop failed) {
                outcome = failed.getMessage();
                code = code == 0 ? failed.exitCode : code;
            } catch (Exception | LinkageError e) { // LinkageError: GLIDE's native library may not load
                RuntimeException why = e instanceof Exception failure ? LabSupport.unreachable(s, failure) : null;
                outcome = why != null ? why.getMessage()
                        : probe.getKey() + " could not start (" + e + "); check the client's jars for this platform.";
                int its = why instanceof LabConnection.Refused refused ? refused.exitCode : why != null ? 4 : 1;
                code = code == 0 ? its : code;
            }
            report.fact(probe.getKey(), outcome);
            if (!OK.equals(outcome)) {
                failures.add(probe.getKey() + ": " + outcome);
            }
        }
        report.fact("server", s.where());
        report.fact("tls", url.tls());
        report.fact("user", url.userName());
        report.fact("database", url.database());
        report.finish();
        if (code != 0) {
            throw new LabSupport.Stop(code, String.join("\n", failures));
        }
    }

    // ---------------------------------------------------------------- the clients

    static void jedis(LabSupport.Settings s, String key) {
        try (Jedis jedis = LabSupport.jedis(s)) {
            expect("PING", "PONG", jedis.ping());
            expect("SET", "OK", jedis.set(key, VALUE));
            expect("GET", VALUE, jedis.get(key));
            expect("DEL", 1L, jedis.del(key));
        }
    }

    static void jedisPipeline(LabSupport.Settings s, String key) {
        try (Jedis jedis = LabSupport.jedis(s)) {
            Response<String> set;
            Response<String> get;
            Response<Long> del;
            try (Pipeline pipeline = jedis.pipelined()) {
                set = pipeline.set(key, VALUE);
                get = pipeline.get(key);
                del = pipeline.del(key);
                pipeline.sync();
            }
            expect("SET", "OK", set.get());
            expect("GET", VALUE, get.get());
            expect("DEL", 1L, del.get());
        }
    }

    static void lettuce(LabSupport.Settings s, String key) {
        RedisClient client = LettuceSupport.client(LettuceSupport.uri(s.host(), s.port()).withTimeout(TIMEOUT).build());
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            RedisCommands<String, String> sync = connection.sync();
            expect("PING", "PONG", sync.ping());
            expect("SET", "OK", sync.set(key, VALUE));
            expect("GET", VALUE, sync.get(key));
            expect("DEL", 1L, sync.del(key));
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    static void redisson(LabSupport.Settings s, String key) {
        Config config = RedissonSupport.config(s);
        // A refusal is reported at once, not after retries; a slow reply gets the others' TIMEOUT.
        config.useSingleServer().setRetryAttempts(0).setTimeout((int) TIMEOUT.toMillis());
        RedissonClient redisson = Redisson.create(config);
        try {
            expect("PING", true, redisson.getRedisNodes(RedisNodes.SINGLE).getInstance().ping());
            redisson.<String>getBucket(key).set(VALUE);
            expect("GET", VALUE, redisson.<String>getBucket(key).get());
            expect("DEL", true, redisson.getBucket(key).delete());
        } finally {
            redisson.shutdown();
        }
    }

    static void spring(LabSupport.Settings s, String key) {
        LettuceConnectionFactory factory = SpringSupport.factory(s.host(), s.port());
        factory.afterPropertiesSet();
        try {
            StringRedisTemplate template = new StringRedisTemplate(factory);
            template.afterPropertiesSet();
            expect("PING", "PONG", template.execute(connection -> connection.ping(), true));
            template.opsForValue().set(key, VALUE);
            expect("GET", VALUE, template.opsForValue().get(key));
            expect("DEL", true, template.delete(key));
        } finally {
            factory.destroy();
        }
    }

    static void glide(LabSupport.Settings s, String key) throws Exception {
        GlideClient client = GlideSupport.client(GlideSupport.config(s.host(), s.port())
                .requestTimeout((int) TIMEOUT.toMillis()).build());
        try {
            expect("PING", "PONG", client.ping().get());
            expect("SET", "OK", client.set(key, VALUE).get());
            expect("GET", VALUE, client.get(key).get());
            expect("DEL", 1L, client.del(new String[] {key}).get());
        } finally {
            client.close();
        }
    }

    /** INFO, through Jedis: every example reads INFO commandstats for what reached the server. */
    static void info(LabSupport.Settings s, String key) {
        try (Jedis jedis = LabSupport.jedis(s)) {
            String server = jedis.info("server");
            if (!server.contains("redis_version:") && !server.contains("valkey_version:")) {
                throw LabSupport.failure("INFO server names no version");
            }
        }
    }

    private static void expect(String command, Object wanted, Object got) {
        if (!wanted.equals(got)) {
            throw LabSupport.failure(command + " answered " + got + " instead of " + wanted);
        }
    }
}
