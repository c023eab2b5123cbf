// LettuceTraps, 4. a poisoned pool: one trap of the example, run by LettuceTraps.run, whose static
// members (the report, the clients, the helpers) it reaches by name.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.support.ConnectionPoolSupport;
import org.apache.commons.pool2.impl.GenericObjectPool;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import redis.clients.jedis.Jedis;

final class LettucePoolTrap extends LettuceTraps {

    /**
     * ConnectionPoolSupport.createGenericObjectPool, one connection. Borrower 1 turns auto-flush
     * off, queues INCRs and gives the connection back; the pool's factory (RedisPooledObjectFactory)
     * has no passivateObject, so the connection comes back as it was left. Borrower 2's sync GET.
     */
    static void poolTrap(LabSupport.Report report, LabSupport.Settings s, ClientResources resources, Jedis control)
            throws Exception {
        int incrs = 10;
        String poisoned = LabSupport.key("ch08", "lettuce", "pool:poisoned");
        String fixed = LabSupport.key("ch08", "lettuce", "pool:fixed");
        RedisClient client = client(resources, s.host(), s.port(), TIMEOUT, ClientOptions.create());
        GenericObjectPoolConfig<StatefulRedisConnection<String, String>> config = new GenericObjectPoolConfig<>();
        config.setMaxTotal(1);
        config.setMaxWait(WAIT); // borrowObject waits at most this long (commons-pool2's default: forever)
        GenericObjectPool<StatefulRedisConnection<String, String>> pool =
                ConnectionPoolSupport.createGenericObjectPool(client::connect, config);
        try {
            report.fact("pool_command_timeout_s", TIMEOUT.toSeconds());
            Map<String, Long> before = LabSupport.commandCalls(s);
            List<RedisFuture<Long>> first = leaveUnflushed(pool, poisoned, incrs);
            long start = System.nanoTime();
            String outcome = nextBorrowerGet(pool, poisoned);
            long waitedMs = (System.nanoTime() - start) / 1_000_000;
            long appliedWhenB2Failed = Toxics.counter(control, poisoned);
            // Borrower 1's INCRs expire TIMEOUT after their write() (CommandExpiryWriter's timer).
            // A flush before that would still send them, late and on another borrower's watch.
            int b1Failed = 0;
            String b1Error = "none";
            for (RedisFuture<Long> future : first) {
                try {
                    future.get(TIMEOUT.plusSeconds(1).toMillis(), TimeUnit.MILLISECONDS);
                } catch (ExecutionException | CancellationException | TimeoutException e) {
                    b1Failed++;
                    b1Error = describe(unwrap(e));
                }
            }
            // A third borrower flushes: expired and cancelled commands are skipped, nothing is sent.
            try (StatefulRedisConnection<String, String> connection = pool.borrowObject()) {
                connection.setAutoFlushCommands(true);
                connection.flushCommands();
                connection.sync().ping();
            }
            Map<String, Long> sent = LabSupport.callsBetween(before, LabSupport.commandCalls(s));
            report.fact("pool_b2_ms", waitedMs);
            report.fact("pool_b2_outcome", outcome);
            report.fact("pool_b1_applied_when_b2_failed", appliedWhenB2Failed);
            report.fact("pool_b1_futures_failed", b1Failed);
            report.fact("pool_b1_error", b1Error);
            report.fact("pool_b1_applied_after_flush", Toxics.counter(control, poisoned));
            report.fact("pool_server_incrs", sent.getOrDefault("incr", 0L));
            report.fact("pool_server_gets", sent.getOrDefault("get", 0L) - 1); // less the control connection's GET

            flushBeforeReturn(pool, fixed, incrs);
            start = System.nanoTime();
            String value;
            try (StatefulRedisConnection<String, String> connection = pool.borrowObject()) {
                value = connection.sync().get(fixed);
            }
            report.fact("pool_fixed_b2_ms", round1((System.nanoTime() - start) / 1e6));
            report.fact("pool_fixed_b2_value", value == null ? "null" : value);
        } finally {
            pool.close();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    // --8<-- [start:pool_poison]
    /** Borrower 1: auto-flush off, INCRs queued, and the connection back in the pool as it is. */
    static List<RedisFuture<Long>> leaveUnflushed(GenericObjectPool<StatefulRedisConnection<String, String>> pool,
                                                  String key, int incrs) throws Exception {
        List<RedisFuture<Long>> replies = new ArrayList<>();
        try (StatefulRedisConnection<String, String> connection = pool.borrowObject()) {
            connection.setAutoFlushCommands(false);
            for (int i = 0; i < incrs; i++) {
                replies.add(connection.async().incr(key));
            }
        } // close() gives it back: auto-flush still off, the INCRs still buffered
        return replies;
    }

    /** Borrower 2: a plain sync GET, written into the same buffer and never sent; waits for the timeout. */
    static String nextBorrowerGet(GenericObjectPool<StatefulRedisConnection<String, String>> pool, String key)
            throws Exception {
        try (StatefulRedisConnection<String, String> connection = pool.borrowObject()) {
            return "ok " + connection.sync().get(key);
        } catch (RuntimeException e) {
            return describe(e);
        }
    }
    // --8<-- [end:pool_poison]

    // --8<-- [start:pool_fixed]
    /** The fix: whatever happens, the connection goes back flushed and with auto-flush on. */
    static void flushBeforeReturn(GenericObjectPool<StatefulRedisConnection<String, String>> pool, String key,
                                  int incrs) throws Exception {
        try (StatefulRedisConnection<String, String> connection = pool.borrowObject()) {
            connection.setAutoFlushCommands(false);
            try {
                List<RedisFuture<Long>> replies = new ArrayList<>();
                for (int i = 0; i < incrs; i++) {
                    replies.add(connection.async().incr(key));
                }
                connection.flushCommands();
                awaitAllOk(replies, "pooled INCR");
            } finally {
                connection.setAutoFlushCommands(true); // the state the next borrower expects
                connection.flushCommands();            // nothing left behind in the buffer
            }
        }
    }
    // --8<-- [end:pool_fixed]
}
