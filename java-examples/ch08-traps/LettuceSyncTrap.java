// LettuceTraps, 5. sync() with auto-flush off: one trap of the example, run by LettuceTraps.run, whose static
// members (the report, the clients, the helpers) it reaches by name.

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.resource.ClientResources;
import redis.clients.jedis.Jedis;

final class LettuceSyncTrap extends LettuceTraps {

    static void syncTrap(LabSupport.Report report, LabSupport.Settings s, ClientResources resources, Jedis control)
            throws Exception {
        String key = LabSupport.key("ch08", "lettuce", "sync");
        control.set(key, "x");
        RedisClient client = client(resources, s.host(), s.port(), TIMEOUT, ClientOptions.create());
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            Map<String, Long> before = LabSupport.commandCalls(s);
            connection.setAutoFlushCommands(false);
            long start = System.nanoTime();
            String outcome = syncWithAutoFlushOff(connection, key);
            long waitedMs = (System.nanoTime() - start) / 1_000_000;
            connection.flushCommands(); // the cancelled GET is skipped
            long sentGets = LabSupport.callsBetween(before, LabSupport.commandCalls(s)).getOrDefault("get", 0L);
            report.fact("sync_off_ms", waitedMs);
            report.fact("sync_off_outcome", outcome);
            report.fact("sync_off_gets_sent_after_flush", sentGets);

            start = System.nanoTime();
            String value = asyncThenFlush(connection, key);
            report.fact("sync_fixed_ms", round1((System.nanoTime() - start) / 1e6));
            report.fact("sync_fixed_value", value == null ? "null" : value);
            connection.setAutoFlushCommands(true);
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    // --8<-- [start:sync_off]
    /** A sync GET on a connection with auto-flush off: FutureSyncInvocationHandler waits on a command in the buffer. */
    static String syncWithAutoFlushOff(StatefulRedisConnection<String, String> connection, String key) {
        try {
            return "ok " + connection.sync().get(key);
        } catch (RuntimeException e) {
            return describe(e); // after the command timeout; awaitOrCancel cancels the GET
        }
    }
    // --8<-- [end:sync_off]

    // --8<-- [start:sync_fixed]
    /** The fix: the async API, and the caller flushes. */
    static String asyncThenFlush(StatefulRedisConnection<String, String> connection, String key) throws Exception {
        RedisFuture<String> reply = connection.async().get(key);
        connection.flushCommands(); // with auto-flush off, the caller sends
        return reply.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    }
    // --8<-- [end:sync_fixed]
}
