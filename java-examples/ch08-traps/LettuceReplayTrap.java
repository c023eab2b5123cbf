// LettuceTraps, 2. in-flight replay: one trap of the example, run by LettuceTraps.run, whose static
// members (the report, the clients, the helpers) it reaches by name.

import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.event.connection.ConnectionActivatedEvent;
import io.lettuce.core.event.connection.ConnectionDeactivatedEvent;
import io.lettuce.core.resource.ClientResources;
import redis.clients.jedis.Jedis;

final class LettuceReplayTrap extends LettuceTraps {

    static final List<String> REPLAY_SCENARIOS = List.of("default", "replay_filter", "no_reconnect", "reject");

    // --8<-- [start:replay_options]
    static ClientOptions replayOptions(String scenario) {
        return switch (scenario) {
            // AT_LEAST_ONCE: commands without a reply when the channel closes are written again.
            case "default" -> ClientOptions.create();
            // Tested only for commands written while disconnected, or whose write failed.
            case "replay_filter" -> ClientOptions.builder().replayFilter(command -> true).build();
            // AT_MOST_ONCE, and DisconnectedBehavior.DEFAULT then rejects: in-flight commands fail.
            case "no_reconnect" -> ClientOptions.builder().autoReconnect(false).build();
            // Reconnects, but fails what was in flight and refuses commands until connected.
            case "reject" -> ClientOptions.builder()
                    .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS).build();
            default -> throw new IllegalArgumentException(scenario);
        };
    }
    // --8<-- [end:replay_options]

    static String replayKey(String scenario) {
        return LabSupport.key("ch08", "lettuce", "replay", scenario);
    }

    /**
     * Which connection a scenario watches: the local address of the first activation after
     * the watch is set (its own connect()), so a late event of the previous scenario's
     * connection, closed moments ago, cannot pass for this one's drop.
     */
    static final class Watch {
        final CountDownLatch activated = new CountDownLatch(1);
        final CountDownLatch dropped = new CountDownLatch(1);
        final AtomicReference<SocketAddress> local = new AtomicReference<>();
    }

    static void replayTrap(LabSupport.Report report, LabSupport.Settings s, ClientResources resources, Jedis control,
                           Proxy proxy) throws Exception {
        AtomicReference<Watch> watch = new AtomicReference<>(new Watch());
        resources.eventBus().get().subscribe(event -> {
            Watch w = watch.get();
            if (event instanceof ConnectionActivatedEvent activated
                    && w.local.compareAndSet(null, activated.localAddress())) {
                w.activated.countDown();
            } else if (event instanceof ConnectionDeactivatedEvent deactivated
                    && deactivated.localAddress().equals(w.local.get())) {
                w.dropped.countDown();
            }
        });
        report.fact("replay_incrs", REPLAY_N);
        report.fact("replay_reset_after_ms", RESET_AFTER_MS);
        report.fact("replay_command_timeout_s", REPLAY_TIMEOUT.toSeconds());
        for (String scenario : REPLAY_SCENARIOS) {
            Watch w = new Watch();
            watch.set(w);
            replay(report, s, resources, control, proxy, scenario, w);
        }
    }

    // --8<-- [start:replay_drop]
    /** N INCRs flushed at once; the proxy drops the connection while they are in flight. */
    static List<RedisFuture<Long>> incrsThroughDrop(StatefulRedisConnection<String, String> connection, String key,
                                                   int n) {
        List<RedisFuture<Long>> futures = new ArrayList<>(n);
        connection.setAutoFlushCommands(false);
        for (int i = 0; i < n; i++) {
            futures.add(connection.async().incr(key));
        }
        connection.flushCommands(); // all N on the wire; what has no reply at the drop is in flight
        connection.setAutoFlushCommands(true);
        return futures;
    }
    // --8<-- [end:replay_drop]

    static void awaitDrop(Watch watch, Proxy proxy) throws InterruptedException {
        if (!watch.dropped.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
            throw LabSupport.failure("the connection through proxy '" + proxy.toxics().proxy
                    + "' was not dropped within " + WAIT.toSeconds() + " s");
        }
    }

    /**
     * One scenario: N INCRs flushed at once, the connection dropped while they are in flight
     * (every one has been written: CommandHandler#addToStack put it on the stack), one more INCR
     * issued while the connection is down, then the toxics removed and every future awaited.
     * Facts replay_<scenario>_...: futures_ok, futures_failed, errors (count x message), counter (final),
     * applied_first (what the dropped connection applied), duplicates (applied twice),
     * late (the INCR issued while down: ok / its error) and late_applied, and
     * usable_after (a PING answered within 1 s; ping_error if not).
     */
    static void replay(LabSupport.Report report, LabSupport.Settings s, ClientResources resources, Jedis control,
                       Proxy proxy, String scenario, Watch watch) throws Exception {
        String key = replayKey(scenario);
        String lateKey = key + ":late";
        String p = "replay_" + scenario + "_";
        RedisClient client = client(resources, proxy.host(), proxy.port(), REPLAY_TIMEOUT, replayOptions(scenario));
        try {
            StatefulRedisConnection<String, String> connection = client.connect();
            long id = connection.sync().clientId(); // handshake done before the toxics exist
            if (!watch.activated.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw LabSupport.failure("Lettuce reported no ConnectionActivatedEvent for its connection within "
                        + WAIT.toSeconds() + " s");
            }
            proxy.toxics().addDrop((long) REPLAY_N * Toxics.incrBytes(key), PASS_MS, RESET_AFTER_MS);
            List<RedisFuture<Long>> futures = incrsThroughDrop(connection, key, REPLAY_N);
            awaitDrop(watch, proxy);
            RedisFuture<Long> late = connection.async().incr(lateKey); // written while disconnected
            proxy.toxics().removeDrop();

            long deadline = System.nanoTime() + REPLAY_TIMEOUT.plusSeconds(3).toNanos();
            Toxics.Outcomes outcomes = Toxics.awaitIncrs(futures, deadline, e -> describe(unwrap(e)));
            int ok = outcomes.ok();
            long lowest = outcomes.lowest();
            Map<String, Integer> errors = outcomes.errors(); // what the failed futures said, in order
            String lateOutcome;
            try {
                lateOutcome = "ok " + late.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (ExecutionException | CancellationException | TimeoutException e) {
                lateOutcome = describe(unwrap(e));
            }
            // Reconnected? A PING every 50 ms for up to 1 s (REJECT_COMMANDS refuses it until then).
            String pingError = null;
            long pingDeadline = System.nanoTime() + Duration.ofSeconds(1).toNanos();
            do {
                try {
                    connection.sync().ping();
                    pingError = null;
                    break;
                } catch (RuntimeException e) {
                    pingError = describe(e);
                    Thread.sleep(50);
                }
            } while (System.nanoTime() < pingDeadline);
            Toxics.awaitServerClosed(control, id); // the dropped connection's last INCRs are in the count
            long counter = Toxics.counter(control, key);
            // An INCR's reply is the counter after it, so the lowest reply - 1 is what the dropped
            // connection had applied when the first re-sent command ran; with no reply, all of it.
            long appliedFirst = ok > 0 ? lowest - 1 : counter;
            report.fact(p + "futures_ok", ok);
            report.fact(p + "futures_failed", outcomes.failed());
            StringBuilder said = new StringBuilder();
            errors.forEach((error, count) -> said.append(said.length() == 0 ? "" : "; ")
                    .append(count).append(" x ").append(error));
            report.fact(p + "errors", errors.isEmpty() ? "none" : said.toString());
            report.fact(p + "counter", counter);
            report.fact(p + "applied_first", appliedFirst);
            report.fact(p + "duplicates", Math.max(0, counter - REPLAY_N));
            report.fact(p + "late", lateOutcome);
            report.fact(p + "late_applied", Toxics.counter(control, lateKey) > 0);
            report.fact(p + "usable_after", pingError == null);
            if (pingError != null) {
                report.fact(p + "ping_error", pingError);
            }
            connection.close();
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }
}
