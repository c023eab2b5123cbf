///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/Toxics.java
//SOURCES ../common/LettuceSupport.java

// Chapter 4: a connection that drops in the middle of a pipeline. The example talks to Redis
// through a toxiproxy proxy and adds two toxics of its own, through toxiproxy's HTTP API,
// just before each pipeline:
//   bandwidth  upstream (client -> Redis), so the pipeline reaches Redis slowly: at full
//              speed it would take PASS_MS to get through;
//   reset_peer downstream (Redis -> client), timeout RESET_AFTER_MS: it swallows Redis's
//              replies and, RESET_AFTER_MS after the first of them, closes the client's
//              connection; the proxy then closes its connection to Redis too.
// So Redis applies the first part of the pipeline and never sees the rest, and the client
// gets none of the replies. Each pipeline is N x INCR of one counter per scenario
// (pipelab:ch04:java:drop:<scenario>), so the counter, read after the toxics are gone and
// Redis has closed the dropped connection, is exactly the number of commands applied.
//
// Why reset_peer goes downstream: toxiproxy's ResetToxic.Pipe takes the first chunk that
// reaches it, drops it, waits out its timeout and closes, forwarding nothing. Upstream it
// would swallow the pipeline's first bytes and let nothing through, so Redis would apply
// nothing at all. Downstream it swallows replies, which is what a dropped connection does
// to replies anyway, and its clock starts when Redis sends the first one.
//
// Scenarios:
//   pipeline     a Jedis Pipeline, N INCRs, sync(): it throws, and the counter shows how
//                many of the N the server applied anyway (0 < k < N);
//   blind_retry  the application re-sends the whole pipeline on a new connection: the
//                counter ends at k + N, k commands applied twice;
//   transaction  the same N INCRs inside MULTI ... EXEC (a Jedis Transaction): Redis queues
//                them and discards the queue when the connection closes before EXEC, so
//                nothing is applied; re-sending the transaction applies exactly N;
//   lettuce      the same pipeline through Lettuce (async API, auto-flush off, one
//                flushCommands()) with its default ClientOptions: it reconnects by itself
//                and re-sends every command that had no reply yet.
//
//   jbang ch04-drop [host] [port] [size] [toxiproxy-api-url] [proxy-name]
//                   (defaults 127.0.0.1 16381 20000 http://127.0.0.1:8474 pipelab-redis)
//
// host and port are the proxy's listen address (the docker compose lab's proxy listens on
// 16381), not Redis's; the example checks that the named proxy listens on that port. The
// toxics affect every connection through that proxy while they exist, so run nothing else
// through it meanwhile. size is at least 5000: toxiproxy moves data in chunks of up to
// 32 KB, and a smaller pipeline would reach Redis whole before the drop.

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.event.connection.ConnectionDeactivatedEvent;
import io.lettuce.core.event.connection.ReconnectAttemptEvent;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.Transaction;

import pipelab.LabConnection;
import pipelab.LettuceSupport;

public class PartialPipeline {

    static final String EXAMPLE = "ch04-drop";
    static final String USAGE = "usage: jbang " + EXAMPLE + " [host] [port] [size] [toxiproxy-api-url] [proxy-name]"
            + " (defaults 127.0.0.1 16381 20000 http://127.0.0.1:8474 pipelab-redis)";
    static final int DEFAULT_PROXY_PORT = 16381; // docker-compose.yml's toxiproxy
    static final int DEFAULT_SIZE = 20_000;
    static final int MIN_SIZE = 5_000;
    static final String DEFAULT_API = Toxics.DEFAULT_API;
    static final String DEFAULT_PROXY = Toxics.DEFAULT_PROXY;

    /** How long the whole pipeline would take to pass the bandwidth toxic; sets its rate. */
    static final long PASS_MS = 1_200;
    /** reset_peer's timeout: the drop comes this long after Redis's first reply, a quarter of PASS_MS. */
    static final long RESET_AFTER_MS = 300;
    /** Upper bound for every wait on a drop, a reconnect or Redis closing a connection. */
    static final Duration WAIT = Duration.ofSeconds(10);

    /** Toxic names carry this prefix; leftovers of an interrupted run are removed at start. */
    static final String TOXIC_PREFIX = "pipelab-ch04-drop-";

    public static void main(String[] args) {
        if (args.length > 0 && (args[0].equals("-h") || args[0].equals("--help"))) {
            System.out.println(USAGE);
            System.exit(0);
        }
        // Checked here so that a mistake is reported with this example's usage line, not
        // LabSupport's (which has repeat and warm-up where this one has toxiproxy's API and proxy).
        String problem = args.length > 5 ? "expected at most 5 arguments but got " + args.length
                : args.length > 1 && !inRange(args[1], 1, 65_535) ? "port must be an integer from 1 to 65535, not '" + args[1] + "'"
                : args.length > 2 && !inRange(args[2], MIN_SIZE, 10_000_000) ? "size must be an integer from " + MIN_SIZE
                        + " to 10000000, not '" + args[2] + "' (toxiproxy moves data in chunks of up to 32 KB, and a"
                        + " smaller pipeline would reach Redis whole before the drop)"
                : null;
        if (problem != null) {
            System.err.println(EXAMPLE + ": " + problem + "; " + USAGE + ".");
            System.exit(2);
        }
        // Without host and port: REDIS_URL's (the harness points it at the proxy, with the server's
        // credentials and TLS), else the lab's host and the proxy's port.
        LabConnection url;
        try {
            url = LabConnection.get();
        } catch (LabConnection.Refused malformed) {
            System.err.println(malformed.getMessage());
            System.exit(malformed.exitCode);
            return;
        }
        // Arguments 4 and 5 are this example's own; LabSupport parses host, port and size and
        // gets repeat 1, warm-up 0: every scenario runs once, and the first run is the point.
        String[] lab = {
                args.length > 0 ? args[0] : url.host(),
                args.length > 1 ? args[1] : String.valueOf(url.isSet() ? url.port() : DEFAULT_PROXY_PORT),
                args.length > 2 ? args[2] : String.valueOf(DEFAULT_SIZE),
                "1", "0"};
        LabSupport.run(EXAMPLE, lab, DEFAULT_SIZE, 1, s -> run(s, args));
    }

    private static boolean inRange(String raw, int min, int max) {
        try {
            int value = Integer.parseInt(raw.trim().replace("_", ""));
            return value >= min && value <= max;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    static void run(LabSupport.Settings s, String[] args) throws Exception {
        Toxics toxiproxy = new Toxics(EXAMPLE, USAGE, args.length > 3 ? args[3].trim() : DEFAULT_API,
                args.length > 4 ? args[4].trim() : DEFAULT_PROXY, TOXIC_PREFIX);
        toxiproxy.check(s.port()); // reachable, the proxy exists and is the one we talk through

        String pipelineKey = LabSupport.key("ch04", "java", "drop", "pipeline");
        String transactionKey = LabSupport.key("ch04", "java", "drop", "transaction");
        String lettuceKey = LabSupport.key("ch04", "java", "drop", "lettuce");
        List<String> keys = List.of(pipelineKey, transactionKey, lettuceKey);
        int n = s.size();

        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"))
                // The manifest says e.g. "7.7.0.RELEASE/1960d49": keep the version, drop the commit.
                .client("lettuce", LabSupport.versionOf(RedisClient.class, "io.lettuce", "lettuce-core",
                        "7.7.0.RELEASE").split("/")[0]);

        // The control connection: safety check, counters, CLIENT LIST. It is idle whenever
        // toxics are in place, so reset_peer (which waits for a reply) never fires on it.
        try (Jedis control = LabSupport.connect(s)) {
            LabSupport.requireLabOnly(control, s);
            LabSupport.deleteKeys(control, keys); // a counter left by an interrupted run would skew the counts
            RedisClient lettuce = null;
            try {
                report.header(n + " INCRs per pipeline through toxiproxy '" + toxiproxy.proxy
                        + "', dropped after ~" + RESET_AFTER_MS + " ms of a " + PASS_MS + " ms transfer");

                // 1. The pipeline that breaks.
                long k = jedisPipeline(report, s, toxiproxy, control, pipelineKey);
                // 2. The application does not know which of the N took effect, and sends them all again.
                blindRetry(report, s, control, pipelineKey, k);
                // 3. The same work as a transaction: all or nothing, so a retry is safe.
                transaction(report, s, toxiproxy, control, transactionKey);
                // 4. Lettuce, which retries by itself.
                lettuce = LettuceSupport.client(LettuceSupport.uri(s.host(), s.port()).build());
                lettucePipeline(report, s, toxiproxy, control, lettuce, lettuceKey);
            } finally {
                // Toxics first: the cleanup goes through the proxy too.
                toxiproxy.removeOurs();
                LabSupport.cleanup(s, keys, lettuce, c -> c.shutdown(Duration.ZERO, Duration.ofSeconds(2)));
            }
        }
        report.finish();
    }

    // ---------------------------------------------------------------- scenarios

    // --8<-- [start:scenarios]
    /** Scenario 1: N INCRs in a Jedis Pipeline while the connection drops. Returns k, the INCRs applied. */
    static long jedisPipeline(LabSupport.Report report, LabSupport.Settings s, Toxics toxiproxy,
                              Jedis control, String key) throws Exception {
        int n = s.size();
        List<Response<Long>> replies = new ArrayList<>(n);
        String failedIn = "nowhere";
        Exception error = null;
        long elapsed;
        // Connected, handshake done (CLIENT SETINFO), before the toxics exist: they act on the pipeline only.
        try (Jedis jedis = LabSupport.jedis(s)) {
            long id = jedis.clientId();
            toxiproxy.addDrop(n * (long) Toxics.incrBytes(key), PASS_MS, RESET_AFTER_MS);
            long start = System.nanoTime();
            try {
                // No try-with-resources: Pipeline#close() would sync() again on the broken connection.
                Pipeline pipeline = jedis.pipelined();
                failedIn = "queueing"; // Jedis writes whenever its 8 KB output buffer is full
                for (int i = 0; i < n; i++) {
                    replies.add(pipeline.incr(key));
                }
                failedIn = "sync";     // flush, then read all N replies (Connection#getMany)
                pipeline.sync();
                failedIn = "nowhere";
            } catch (Exception e) {
                error = e;
            }
            elapsed = (System.nanoTime() - start) / 1_000_000;
            toxiproxy.removeDrop();
            Toxics.awaitServerClosed(control, id);
        }
        if (error == null) {
            throw LabSupport.failure("the pipeline of " + n + " INCRs went through although the proxy was to drop it;"
                    + " are host and port the address of proxy '" + toxiproxy.proxy + "'?");
        }
        long applied = Toxics.counter(control, key);
        report.fact("bandwidth_kb_s", toxiproxy.lastRate);
        report.fact("reset_after_ms", RESET_AFTER_MS);
        report.fact("pipeline_exception", describe(error));
        report.fact("pipeline_failed_in", failedIn);
        report.fact("pipeline_failed_after_ms", elapsed);
        report.fact("pipeline_replies_received", LabSupport.received(replies));
        report.fact("pipeline_applied", applied);
        return applied;
    }

    /**
     * Scenario 2: what a retry loop around scenario 1 does. The exception says nothing about
     * how far the pipeline got, and the Response objects are all empty, so the application
     * sends the N commands again, now without toxics. Non-idempotent commands (INCR, LPUSH,
     * XADD ...) that had already been applied take effect twice.
     */
    static void blindRetry(LabSupport.Report report, LabSupport.Settings s, Jedis control, String key, long k) {
        int n = s.size();
        try (Jedis jedis = LabSupport.jedis(s)) {
            Pipeline pipeline = jedis.pipelined();
            Response<Long> last = null;
            for (int i = 0; i < n; i++) {
                last = pipeline.incr(key);
            }
            pipeline.sync();
            long counter = Toxics.counter(control, key);
            if (last.get() != counter) {
                throw LabSupport.failure("the last INCR of the retry returned " + last.get() + " but the counter is " + counter);
            }
            report.fact("blind_retry_counter", counter);
            report.fact("blind_retry_applied_twice", counter - n);
        }
    }

    /**
     * Scenario 3: MULTI, the N INCRs, EXEC, under the same toxics. Redis only queues commands
     * after MULTI; EXEC never arrives, and when the connection closes, freeing the client
     * discards its queue. Jedis would not even have sent EXEC: Transaction#exec() first reads
     * the +OK and the N QUEUED replies (Connection#getMany) and only then writes EXEC.
     * Then the transaction is sent again, without toxics: exactly N.
     */
    static void transaction(LabSupport.Report report, LabSupport.Settings s, Toxics toxiproxy,
                            Jedis control, String key) throws Exception {
        int n = s.size();
        Exception error = null;
        try (Jedis jedis = LabSupport.jedis(s)) {
            long id = jedis.clientId();
            // + MULTI and EXEC, 15 bytes each
            toxiproxy.addDrop(n * (long) Toxics.incrBytes(key) + 2 * 15, PASS_MS, RESET_AFTER_MS);
            try {
                // As with the pipeline, no try-with-resources: close() would DISCARD on a dead connection.
                Transaction tx = jedis.multi();
                for (int i = 0; i < n; i++) {
                    tx.incr(key);
                }
                tx.exec();
            } catch (Exception e) {
                error = e;
            }
            toxiproxy.removeDrop();
            Toxics.awaitServerClosed(control, id);
        }
        if (error == null) {
            throw LabSupport.failure("the transaction of " + n + " INCRs went through although the proxy was to drop it");
        }
        report.fact("transaction_exception", describe(error));
        report.fact("transaction_applied", Toxics.counter(control, key));

        try (Jedis jedis = LabSupport.jedis(s)) {
            Transaction tx = jedis.multi();
            for (int i = 0; i < n; i++) {
                tx.incr(key);
            }
            List<Object> results = tx.exec();
            if (results == null || results.size() != n) {
                throw LabSupport.failure("the retried transaction returned " + (results == null ? "null" : results.size() + " results"));
            }
        }
        report.fact("transaction_retry_counter", Toxics.counter(control, key));
    }

    /**
     * Scenario 4: the pipeline through Lettuce, default ClientOptions (autoReconnect true).
     * DefaultEndpoint then works AT_LEAST_ONCE: when the channel goes inactive,
     * CommandHandler#channelInactive hands every command still waiting for its reply to
     * DefaultEndpoint#notifyDrainQueuedCommands, which keeps them in its disconnectedBuffer;
     * ConnectionWatchdog reconnects (delays 1, 2, 4 ... ms, Delay.exponential()) and the
     * buffered commands are written again on the new connection. The futures cannot tell a
     * first delivery from a second one.
     *
     * The example removes the toxics as soon as Lettuce reports the drop. A reconnect attempt
     * made while they were still in place loses its handshake reply to reset_peer and is
     * dropped too; the next one gets through.
     */
    static void lettucePipeline(LabSupport.Report report, LabSupport.Settings s, Toxics toxiproxy,
                                Jedis control, RedisClient client, String key) throws Exception {
        int n = s.size();
        CountDownLatch dropped = new CountDownLatch(1);
        AtomicInteger reconnectAttempts = new AtomicInteger();
        client.getResources().eventBus().get().subscribe(event -> {
            if (event instanceof ConnectionDeactivatedEvent) {
                dropped.countDown();
            } else if (event instanceof ReconnectAttemptEvent) {
                reconnectAttempts.incrementAndGet();
            }
        });
        StatefulRedisConnection<String, String> connection = client.connect();
        long id = connection.sync().clientId();
        List<RedisFuture<Long>> futures = new ArrayList<>(n);
        toxiproxy.addDrop(n * (long) Toxics.incrBytes(key), PASS_MS, RESET_AFTER_MS);
        RedisAsyncCommands<String, String> async = connection.async();
        connection.setAutoFlushCommands(false);
        try {
            for (int i = 0; i < n; i++) {
                futures.add(async.incr(key));
            }
            connection.flushCommands();
        } finally {
            connection.setAutoFlushCommands(true);
        }
        if (!dropped.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
            throw LabSupport.failure("Lettuce's connection was not dropped within " + WAIT.toSeconds() + " s;"
                    + " are host and port the address of proxy '" + toxiproxy.proxy + "'?");
        }
        toxiproxy.removeDrop();
        // Every future completes, with a reply after the re-send or with an error; the command
        // timeout (60 s, TimeoutOptions) bounds the wait. Not LettuceFutures.awaitAll: it
        // throws at the first failed future, and we want to count them all.
        Toxics.Outcomes outcomes = Toxics.awaitIncrs(futures, System.nanoTime() + Duration.ofSeconds(70).toNanos(),
                e -> describe(e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e));
        int ok = outcomes.ok();
        long lowest = outcomes.lowest();
        String firstError = outcomes.firstError();
        Toxics.awaitServerClosed(control, id); // the old connection: its last applied INCRs are in the count
        long counter = Toxics.counter(control, key);
        connection.close();
        report.fact("lettuce_futures_ok", ok);
        report.fact("lettuce_futures_failed", outcomes.failed());
        if (firstError != null) {
            report.fact("lettuce_first_error", firstError);
        }
        report.fact("lettuce_reconnect_attempts", reconnectAttempts.get());
        // An INCR reply is the counter after that INCR, so the lowest reply - 1 is the counter
        // when the first re-sent command ran: what the dropped connection had applied, which
        // no future reported.
        report.fact("lettuce_counter_before_resend", ok > 0 ? lowest - 1 : -1);
        report.fact("lettuce_counter", counter);
        report.fact("lettuce_duplicates", counter - n);
    }
    // --8<-- [end:scenarios]

    // ---------------------------------------------------------------- helpers




    /** "JedisConnectionException: java.net.SocketException: Connection reset", one line. */
    static String describe(Throwable e) {
        String message = e.getMessage();
        if ((message == null || message.isBlank()) && e.getCause() != null) {
            message = e.getCause().toString();
        }
        return e.getClass().getSimpleName() + (message == null ? "" : ": " + message.strip().replaceAll("\\s+", " "));
    }
}
