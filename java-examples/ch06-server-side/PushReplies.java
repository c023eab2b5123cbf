///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LettuceSupport.java

// Chapter 6: RESP3 pushes among a pipeline's replies. Each client with its default protocol (Jedis's legacy
// Jedis class, Jedis 8's RedisClient, Lettuce; and the Jedis class once more with RESP3 asked for) turns CLIENT
// TRACKING on, reads a key (now tracked), then sends one pipeline:
//   GET k; SET k v2; GET k; INCR k:n; GET k
// The SET invalidates a key this very connection read, so the server pushes ">invalidate [k]" to
// it between the pipeline's replies. The facts say which protocol the connection speaks (CLIENT
// INFO's resp=), what the pipeline returned, whether each result is the reply to its own command
// (v1, OK, v2, 1, v2), and how many pushes the client surfaced to the application.
//
//   jbang ch06-push [host] [port]

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.TrackingArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.Response;
import redis.clients.jedis.util.SafeEncoder;

import pipelab.LettuceSupport;

public class PushReplies {

    static final List<String> EXPECTED = List.of("v1", "OK", "v2", "1", "v2");

    public static void main(String[] args) {
        LabSupport.run("ch06-push", args, 1, 1, PushReplies::demo);
    }

    static String resp(String clientInfo) {
        for (String field : clientInfo.trim().split(" ")) {
            if (field.startsWith("resp=")) {
                return field.substring(5);
            }
        }
        return "?";
    }

    static void demo(LabSupport.Settings s) throws Exception {
        String jk = LabSupport.key("ch06", "java", "push", "jedis");
        String lk = LabSupport.key("ch06", "java", "push", "lettuce");
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"))
                .client("lettuce", LabSupport.versionOf(RedisClient.class, "io.lettuce", "lettuce-core",
                        "7.7.0.RELEASE").split("/")[0]);
        report.header("GET k; SET k v2; GET k; INCR k:n; GET k with CLIENT TRACKING on");
        try (Jedis checker = LabSupport.connect(s)) {
            LabSupport.requireLabOnly(checker, s);
            try {
                jedis(s, jk, "jedis", DefaultJedisClientConfig.builder(), report); // Jedis's defaults
                jedis(s, jk + ":resp3", "jedis_resp3",
                      DefaultJedisClientConfig.builder().protocol(RedisProtocol.RESP3), report);
                jedisClient(s, jk + ":client", report);
                lettuce(s, lk, report);
            } finally {
                LabSupport.cleanup(s, List.of(jk, jk + ":n", jk + ":resp3", jk + ":resp3:n", jk + ":client",
                        jk + ":client:n", lk, lk + ":n"));
            }
        }
        report.finish();
    }

    // --8<-- [start:jedis]
    static void jedis(LabSupport.Settings s, String k, String client, DefaultJedisClientConfig.Builder config,
                      LabSupport.Report report) {
        List<String> results = new ArrayList<>();
        String resp;
        try (Jedis jedis = new Jedis(new HostAndPort(s.host(), s.port()), LabSupport.jedisConfig(s, config))) {
            resp = resp(jedis.clientInfo());
            jedis.sendCommand(Protocol.Command.CLIENT, "TRACKING", "ON");
            jedis.set(k, "v1");
            jedis.get(k); // now tracked
            Pipeline p = jedis.pipelined();
            List<Response<?>> replies = List.of(p.get(k), p.set(k, "v2"), p.get(k), p.incr(k + ":n"), p.get(k));
            try {
                p.sync();
                for (Response<?> r : replies) {
                    results.add(String.valueOf(r.get()));
                }
            } catch (RuntimeException e) {
                results.add(e.getClass().getSimpleName() + ": " + e.getMessage());
            }
        }
        facts(report, client, resp, results, -1);
    }
    // --8<-- [end:jedis]

    // --8<-- [start:jedis-client]
    static void jedisClient(LabSupport.Settings s, String k, LabSupport.Report report) {
        // RedisClient's own defaults (protocol left to negotiate); a pool of one connection, so that
        // CLIENT TRACKING, the read and the pipeline all use the connection the push goes to.
        ConnectionPoolConfig one = new ConnectionPoolConfig();
        one.setMaxTotal(1);
        List<String> results = new ArrayList<>();
        String resp;
        try (redis.clients.jedis.RedisClient client = redis.clients.jedis.RedisClient.builder()
                .hostAndPort(s.host(), s.port()).poolConfig(one)
                .clientConfig(LabSupport.jedisConfig(s, DefaultJedisClientConfig.builder())).build()) {
            resp = resp(SafeEncoder.encode((byte[]) client.sendCommand(Protocol.Command.CLIENT, "INFO")));
            client.sendCommand(Protocol.Command.CLIENT, "TRACKING", "ON");
            client.set(k, "v1");
            client.get(k); // now tracked
            try (AbstractPipeline p = client.pipelined()) {
                List<Response<?>> replies = List.of(p.get(k), p.set(k, "v2"), p.get(k), p.incr(k + ":n"), p.get(k));
                p.sync();
                for (Response<?> r : replies) {
                    results.add(String.valueOf(r.get()));
                }
            } catch (RuntimeException e) {
                results.add(e.getClass().getSimpleName() + ": " + e.getMessage());
            }
        }
        facts(report, "jedis_client", resp, results, -1); // no public hook: pushes other than pub/sub are dropped
    }
    // --8<-- [end:jedis-client]

    // --8<-- [start:lettuce]
    static void lettuce(LabSupport.Settings s, String k, LabSupport.Report report) throws Exception {
        RedisClient client = LettuceSupport.client(LettuceSupport.uri(s.host(), s.port()).build());
        List<String> results = new ArrayList<>();
        AtomicInteger pushes = new AtomicInteger();
        String resp;
        try (StatefulRedisConnection<String, String> connection = client.connect()) { // Lettuce's defaults
            connection.addListener(message -> pushes.incrementAndGet()); // every push the connection reads
            RedisAsyncCommands<String, String> async = connection.async();
            resp = resp(connection.sync().clientInfo());
            connection.sync().clientTracking(TrackingArgs.Builder.enabled());
            connection.sync().set(k, "v1");
            connection.sync().get(k); // now tracked
            connection.setAutoFlushCommands(false); // one pipeline, written by one flushCommands()
            List<RedisFuture<?>> replies = List.of(async.get(k), async.set(k, "v2"), async.get(k),
                    async.incr(k + ":n"), async.get(k));
            connection.flushCommands();
            for (RedisFuture<?> f : replies) {
                results.add(String.valueOf(f.get(10, TimeUnit.SECONDS)));
            }
            connection.setAutoFlushCommands(true);
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
        facts(report, "lettuce", resp, results, pushes.get());
    }
    // --8<-- [end:lettuce]

    static void facts(LabSupport.Report report, String client, String resp, List<String> results, int pushes) {
        report.fact(client + "_resp", resp);
        report.fact(client + "_replies", String.join(", ", results));
        report.fact(client + "_aligned", results.equals(EXPECTED));
        report.fact(client + "_pushes", pushes); // -1: the client offers no way to see them
    }
}
