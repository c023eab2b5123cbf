///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.redisson:redisson:4.7.0
//DEPS org.springframework.data:spring-data-redis:4.1.1
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LabTiming.java
//SOURCES ../common/RedissonSupport.java
//SOURCES ../common/LettuceSupport.java
//SOURCES ../common/SpringSupport.java

// Chapter 4: one bad command in a pipeline. The same four commands through each Java client,
//   SET k v;  LPUSH k x;  INCR counter;  GET k
// where the LPUSH fails with WRONGTYPE (k holds a string, not a list). A pipeline is not a
// transaction: Redis runs every command it reads, replies with an error for that one and
// carries on. What differs is what each client does with the error reply:
//   Jedis Pipeline:            sync() reads every reply and throws nothing; the error sits
//                              in the LPUSH's Response, whose get() throws it, and
//                              syncAndReturnAll() puts the exception object in its list;
//   Lettuce async (auto-flush off, one flushCommands()): the LPUSH's future completes
//                              exceptionally, the others normally; LettuceFutures.awaitAll
//                              throws at the first failed future it meets;
//   Redisson RBatch:           execute() throws the first error and returns no BatchResult;
//                              each command's own RFuture still holds its outcome;
//   Spring Data Redis executePipelined (on Lettuce): closePipeline() waits with
//                              LettuceFutures.awaitAll, which throws, so the template throws
//                              RedisPipelineException with an empty result list.
// For each client the example prints, as facts, how the error surfaced, what the application
// still got for the good commands, and (read afterwards on a separate plain Jedis connection)
// whether the commands after the bad one ran on the server.
//
//   jbang ch04-errors [host] [port] [size] [repeat] [warmup]     (defaults: 127.0.0.1, the lab's port, 1 3 1)
//
// size is not used: the pipeline is always these four commands. Each client's pipeline runs
// warmup + repeat times, from an empty k and counter each time, and is timed as one mode per
// client (4 commands a sample); the facts are from its last run, and every run is checked.
// What reached the server is read from INFO commandstats around the last run: the four
// commands (plus the handshake of a connection the client opens for the pipeline, as Spring
// does) and how many of the four the server counted as failed calls: exactly 1, the LPUSH.
//
// Spring Data Redis 4.1.1 declares Lettuce 7.5.2; every example that uses Spring pins 7.7.0
// instead, as the Lettuce examples do, so the book measures one Lettuce.

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.StringJoiner;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import org.redisson.Redisson;
import org.redisson.api.RBatch;
import org.redisson.api.RFuture;
import org.redisson.api.RedissonClient;
import org.springframework.data.redis.connection.RedisPipelineException;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisOperations;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.SessionCallback;
import org.springframework.data.redis.core.StringRedisTemplate;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;

import pipelab.LettuceSupport;
import pipelab.SpringSupport;

public class BadCommand {

    /** Commands per pipeline: SET, LPUSH (the bad one), INCR, GET. */
    static final int COMMANDS = 4;

    /** The pipeline's commands as INFO commandstats names them. */
    private static final Set<String> PIPELINE_COMMANDS = Set.of("set", "lpush", "incr", "get");

    /** Characters of an exception message kept in a fact: enough for "WRONGTYPE Operation against a key ...". */
    private static final int MESSAGE_CHARS = 80;

    /** Upper bound for any wait on a reply; nothing here should take more than milliseconds. */
    private static final Duration AWAIT = Duration.ofSeconds(10);

    public static void main(String[] args) {
        LabSupport.run("ch04-errors", args, 1, 3, BadCommand::demo);
    }

    /** What one client's application saw: filled in by the timed pipeline, turned into facts afterwards. */
    static final class Seen {
        Throwable error;         // the exception the application met first
        String surfaced;         // where, in a few words
        String results;          // what it holds for each of the four commands, " | "-separated
        boolean goodResults;     // SET, INCR and GET results all available with the right values
        boolean laterRan = true; // server side, every run: INCR counted 1 and k still holds "v"
        Map<String, Long> wire;  // the last run's commands as the server counted them
        long failedCalls;        // the last run's failed calls among SET, LPUSH, INCR and GET
    }

    /** A client's pipeline: runs SET k v, LPUSH k x, INCR counter, GET k and records what it saw. */
    interface Client {
        void pipeline(String k, String counter, Seen seen) throws Exception;
    }

    /** Each client's own two keys: pipelab:ch04:java:errors:<client>:k and ...:counter. */
    static String key(String client, String name) {
        return LabSupport.key("ch04", "java", "errors", client, name);
    }

    static void demo(LabSupport.Settings s) throws Exception {
        List<String> keys = new ArrayList<>();
        for (String name : List.of("jedis", "lettuce", "redisson", "spring")) {
            keys.add(key(name, "k"));
            keys.add(key(name, "counter"));
        }
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"))
                .client("lettuce", LabSupport.versionOf(RedisClient.class, "io.lettuce", "lettuce-core",
                        "7.7.0.RELEASE").split("/")[0])
                .client("redisson", LabSupport.versionOf(Redisson.class, "org.redisson", "redisson", "4.7.0"))
                .client("spring-data-redis", LabSupport.versionOf(RedisTemplate.class,
                        "org.springframework.data", "spring-data-redis", "4.1.1"))
                .withoutSpeedUps(); // four clients doing a demonstration, not a race

        // Three plain Jedis connections of our own: the Jedis client under test, the untimed reset
        // and check, and one that only reads INFO (so no other traffic lands in its readings).
        try (Jedis jedis = LabSupport.connect(s); Jedis checker = LabSupport.connect(s);
             Jedis stats = LabSupport.connect(s)) {
            LabSupport.requireLabOnly(checker, s);
            RedisClient lettuce = null;
            RedissonClient redisson = null;
            LettuceConnectionFactory factory = null;
            try {
                // Client start-up happens here, never in a timed region.
                lettuce = LettuceSupport.client(LettuceSupport.uri(s.host(), s.port()).build());
                StatefulRedisConnection<String, String> connection = lettuce.connect();
                // This connection is ours alone, so holding its commands until flushCommands() delays no one.
                connection.setAutoFlushCommands(false);
                redisson = Redisson.create(RedissonSupport.config(s));
                RedissonClient rc = redisson;
                // The factory's defaults, as in chapter 3: executePipelined opens a dedicated connection.
                factory = SpringSupport.factory(s.host(), s.port());
                factory.afterPropertiesSet();
                factory.start();
                StringRedisTemplate template = new StringRedisTemplate(factory);
                template.afterPropertiesSet();

                report.header("SET k v; LPUSH k x (WRONGTYPE); INCR counter; GET k, one pipeline per client");
                Map<String, Client> clients = new LinkedHashMap<>();
                clients.put("jedis", (k, counter, seen) -> jedisPipeline(jedis, k, counter, seen));
                clients.put("lettuce", (k, counter, seen) -> lettucePipeline(connection, k, counter, seen));
                clients.put("redisson", (k, counter, seen) -> redissonBatch(rc, k, counter, seen));
                clients.put("spring", (k, counter, seen) -> springPipeline(template, k, counter, seen));

                for (Map.Entry<String, Client> client : clients.entrySet()) {
                    run(s, report, checker, stats, client.getKey(), client.getValue());
                }
            } finally {
                // Delete exactly our keys, then stop each client's threads, whatever happened.
                try {
                    LabSupport.cleanup(s, keys);
                } finally {
                    shutdown(factory, redisson, lettuce);
                }
            }
        }
        report.finish();
    }

    /** Each client that started, shut down even if another one's shutdown fails. */
    static void shutdown(LettuceConnectionFactory factory, RedissonClient redisson, RedisClient lettuce) {
        try {
            if (factory != null) {
                factory.destroy(); // closes its connections and its own Lettuce client
            }
        } finally {
            try {
                if (redisson != null) {
                    redisson.shutdown();
                }
            } finally {
                if (lettuce != null) {
                    lettuce.shutdown(Duration.ZERO, Duration.ofSeconds(2));
                }
            }
        }
    }

    /** Times one client's pipeline (warm-up + repeat runs), checks the server after each, and reports the facts. */
    static void run(LabSupport.Settings s, LabSupport.Report report, Jedis checker, Jedis stats, String name,
                    Client client) throws Exception {
        String k = key(name, "k");
        String counter = key(name, "counter");
        Seen seen = new Seen();
        Map<String, long[]> before = new LinkedHashMap<>();

        LabSupport.Step reset = () -> {
            LabSupport.deleteKeys(checker, List.of(k, counter));
            before.clear();
            before.putAll(commandStats(stats)); // after the reset's own UNLINK
        };
        LabSupport.Step task = () -> client.pipeline(k, counter, seen);
        LabSupport.Step verify = () -> {
            Map<String, long[]> after = commandStats(stats); // before the check's own commands
            seen.wire = new LinkedHashMap<>();
            seen.failedCalls = 0;
            after.forEach((command, now) -> {
                long[] was = before.getOrDefault(command, new long[3]);
                if (now[0] > was[0] && !command.equals("info")) {
                    seen.wire.put(command, now[0] - was[0]);
                }
                if (PIPELINE_COMMANDS.contains(command)) { // not a handshake's (CLIENT SETINFO fails before Redis 7.2)
                    seen.failedCalls += now[2] - was[2];
                }
            });
            // The server's view: the INCR after the bad LPUSH ran, and the LPUSH changed nothing.
            seen.laterRan &= "1".equals(checker.get(counter)) && "v".equals(checker.get(k));
        };
        report.add(name, name, "commands", COMMANDS, LabSupport.measure(s, reset, task, verify));

        report.wire(name, seen.wire);
        report.fact(name + "_error", describe(seen.error));
        report.fact(name + "_error_root", describe(root(seen.error)));
        report.fact(name + "_wrongtype_seen", mentionsWrongType(seen.error));
        report.fact(name + "_error_surfaced", seen.surfaced);
        report.fact(name + "_results", seen.results);
        report.fact(name + "_good_results_available", seen.goodResults);
        report.fact(name + "_later_commands_ran", seen.laterRan);
        report.fact(name + "_server_failed_calls", seen.failedCalls);
    }

    // ---------------------------------------------------------------- the four clients

    // --8<-- [start:pipelines]
    /**
     * Jedis: sync() (here syncAndReturnAll(), which also syncs) reads all four replies; an
     * error reply becomes a JedisDataException stored, not thrown. Each Response is still
     * filled in, so Response.get() works for the good ones and throws for the LPUSH alone.
     */
    static void jedisPipeline(Jedis jedis, String k, String counter, Seen seen) {
        Response<String> set;
        Response<Long> lpush;
        Response<Long> incr;
        Response<String> get;
        List<Object> all;
        try (Pipeline pipeline = jedis.pipelined()) {
            set = pipeline.set(k, "v");
            lpush = pipeline.lpush(k, "x");
            incr = pipeline.incr(counter);
            get = pipeline.get(k);
            all = pipeline.syncAndReturnAll(); // no exception here
        }
        seen.error = null;
        try {
            lpush.get();
        } catch (RuntimeException e) {
            seen.error = e;
        }
        seen.surfaced = "no exception from syncAndReturnAll(): the exception object is element 1 of its list,"
                + " and the LPUSH's Response.get() throws it";
        seen.results = render(all);
        seen.goodResults = all.get(1) instanceof Exception && seen.error != null
                && good(set.get(), incr.get(), get.get()) && good(all.get(0), all.get(2), all.get(3));
    }

    /**
     * Lettuce: auto-flush is off on this connection, so the four commands wait in the
     * client until flushCommands() writes them together. Every command has its own future:
     * the LPUSH's completes exceptionally with the error reply, the others with their values.
     * awaitAll, the usual way to wait for a batch of futures, rethrows the first failure it
     * meets, so an application that only calls it sees the exception and no results; the
     * good values are still in their futures.
     */
    static void lettucePipeline(StatefulRedisConnection<String, String> connection, String k, String counter,
                                Seen seen) throws Exception {
        RedisAsyncCommands<String, String> async = connection.async();
        List<RedisFuture<?>> futures = new ArrayList<>(COMMANDS);
        futures.add(async.set(k, "v"));
        futures.add(async.lpush(k, "x"));
        futures.add(async.incr(counter));
        futures.add(async.get(k));
        connection.flushCommands();
        seen.error = null;
        try {
            if (!LettuceFutures.awaitAll(AWAIT, futures.toArray(new RedisFuture<?>[0]))) {
                throw LabSupport.failure("Lettuce: no replies within " + AWAIT.toSeconds() + " s");
            }
        } catch (RuntimeException e) {
            seen.error = e;
        }
        List<Object> results = new ArrayList<>(COMMANDS);
        for (RedisFuture<?> future : futures) {
            // awaitAll stopped at the LPUSH: outcome() waits for the later replies too.
            results.add(outcome("Lettuce", future.toCompletableFuture()));
        }
        seen.surfaced = "the LPUSH's RedisFuture completed exceptionally (get() throws ExecutionException);"
                + " LettuceFutures.awaitAll() threw";
        seen.results = render(results);
        seen.goodResults = results.get(1) instanceof Throwable && good(results.get(0), results.get(2), results.get(3));
    }

    /**
     * Redisson: a fresh RBatch with the default options (IN_MEMORY: commands collected in the
     * client, sent together on execute()). The batch fails as a whole with the first error:
     * execute() throws and no BatchResult comes back. The RFuture each *Async call returned
     * is completed from its own reply, so the good commands' values are still there for an
     * application that kept those futures. setAsync and addFirstAsync are RFuture<Void>.
     */
    static void redissonBatch(RedissonClient redisson, String k, String counter, Seen seen) throws Exception {
        RBatch batch = redisson.createBatch();
        List<RFuture<?>> futures = new ArrayList<>(COMMANDS);
        futures.add(batch.<String>getBucket(k).setAsync("v"));          // SET
        futures.add(batch.<String>getDeque(k).addFirstAsync("x"));      // LPUSH
        futures.add(batch.getAtomicLong(counter).incrementAndGetAsync()); // INCR
        futures.add(batch.<String>getBucket(k).getAsync());             // GET
        seen.error = null;
        boolean returned = false;
        try {
            batch.execute();
            returned = true;
        } catch (RuntimeException e) {
            seen.error = e;
        }
        List<Object> results = new ArrayList<>(COMMANDS);
        for (RFuture<?> future : futures) {
            results.add(outcome("Redisson", future.toCompletableFuture()));
        }
        seen.surfaced = returned
                ? "RBatch.execute() returned a BatchResult; the LPUSH's RFuture failed"
                : "RBatch.execute() threw (no BatchResult); the LPUSH's RFuture failed, the others completed";
        seen.results = render(results);
        // SET's RFuture<Void> completes with null: success, but no value to show.
        seen.goodResults = results.get(0) == null && results.get(1) instanceof Throwable
                && Long.valueOf(1).equals(results.get(2)) && "v".equals(results.get(3));
    }

    /**
     * Spring Data Redis: executePipelined with a SessionCallback, the template's own operations
     * queued on a pipelined LettuceConnection. closePipeline() waits with LettuceFutures.awaitAll,
     * which throws at the LPUSH; LettuceConnection wraps that in a RedisPipelineException built
     * without the results, so getPipelineResult() is empty and the good values are gone.
     */
    static void springPipeline(StringRedisTemplate template, String k, String counter, Seen seen) {
        seen.error = null;
        List<Object> results = null;
        try {
            results = template.executePipelined(new SessionCallback<Object>() {
                @Override
                @SuppressWarnings("unchecked")
                public <K, V> Object execute(RedisOperations<K, V> operations) {
                    RedisOperations<String, String> ops = (RedisOperations<String, String>) operations;
                    ops.opsForValue().set(k, "v");       // each returns null: the reply comes with the pipeline's
                    ops.opsForList().leftPush(k, "x");
                    ops.opsForValue().increment(counter);
                    ops.opsForValue().get(k);
                    return null;
                }
            });
        } catch (RedisPipelineException e) {
            seen.error = e;
            results = e.getPipelineResult(); // what Spring could hand over with the exception
        } catch (RuntimeException e) {
            seen.error = e;
        }
        if (seen.error == null) {
            seen.surfaced = "executePipelined() returned; the error is an element of its list";
        } else if (seen.error instanceof RedisPipelineException) {
            seen.surfaced = "executePipelined() threw RedisPipelineException; getPipelineResult() holds "
                    + results.size() + " of " + COMMANDS + " results";
        } else {
            seen.surfaced = "executePipelined() threw " + seen.error.getClass().getSimpleName();
        }
        seen.results = results == null || results.isEmpty() ? "(none)" : render(results);
        // Spring converts SET's "OK" to Boolean true in pipeline results.
        seen.goodResults = results != null && results.size() == COMMANDS
                && Boolean.TRUE.equals(results.get(0)) && results.get(1) instanceof Throwable
                && Long.valueOf(1).equals(results.get(2)) && "v".equals(results.get(3));
    }
    // --8<-- [end:pipelines]

    // ---------------------------------------------------------------- helpers

    /** SET's OK, INCR's 1 and GET's "v", as a client returns them. */
    private static boolean good(Object set, Object incr, Object get) {
        return "OK".equals(set) && Long.valueOf(1).equals(incr) && "v".equals(get);
    }

    /** A future's value, or the exception it completed with; waits up to AWAIT for it. */
    private static Object outcome(String client, CompletableFuture<?> future) throws InterruptedException {
        try {
            return future.get(AWAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (TimeoutException e) {
            throw LabSupport.failure(client + ": a command's future did not complete within " + AWAIT.toSeconds() + " s");
        }
    }

    /** "OK | JedisDataException | 1 | v": values as they are, exceptions by class. */
    private static String render(List<?> results) {
        StringJoiner joined = new StringJoiner(" | ");
        for (Object result : results) {
            joined.add(result instanceof Throwable t ? t.getClass().getSimpleName() : String.valueOf(result));
        }
        return joined.toString();
    }

    /** "SimpleName: first 80 characters of the message", or "none". */
    private static String describe(Throwable e) {
        if (e == null) {
            return "none";
        }
        String message = e.getMessage() == null ? "" : e.getMessage().strip();
        if (message.length() > MESSAGE_CHARS) {
            message = message.substring(0, MESSAGE_CHARS) + "...";
        }
        return e.getClass().getSimpleName() + ": " + message;
    }

    private static Throwable root(Throwable e) {
        Throwable t = e;
        for (int depth = 0; t != null && t.getCause() != null && t.getCause() != t && depth < 20; depth++) {
            t = t.getCause();
        }
        return t;
    }

    /** Whether the server's WRONGTYPE error reached the application, in the exception or one of its causes. */
    private static boolean mentionsWrongType(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t.getMessage() != null && t.getMessage().contains("WRONGTYPE")) {
                return true;
            }
        }
        return false;
    }

    /**
     * INFO commandstats as {command: [calls, usec, failed_calls]}; failed_calls (Redis 6.2+)
     * counts commands that ran and replied with an error, such as WRONGTYPE. Read on the
     * example's own stats connection, so the readings add nothing but "info" calls.
     */
    static Map<String, long[]> commandStats(Jedis stats) {
        Map<String, long[]> result = new LinkedHashMap<>();
        for (String line : stats.info("commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_")) {
                String name = line.substring("cmdstat_".length(), line.indexOf(':'));
                result.put(name, new long[] {field(line, "calls="), field(line, "usec="), field(line, "failed_calls=")});
            }
        }
        return result;
    }

    /** The number after `name` in "cmdstat_lpush:calls=1,usec=2,...,failed_calls=1", or 0 if the field is absent. */
    private static long field(String line, String name) {
        int at = line.indexOf("," + name);
        if (at >= 0) {
            at += 1 + name.length();
        } else if (line.contains(":" + name)) {
            at = line.indexOf(":" + name) + 1 + name.length();
        } else {
            return 0;
        }
        int end = line.indexOf(',', at);
        return Long.parseLong(line.substring(at, end < 0 ? line.length() : end));
    }
}
