// JedisTraps, part 1: a pool of one: one trap of the example, run by JedisTraps.run, whose static
// members (the report, the clients, the helpers) it reaches by name.

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Supplier;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisPool;
import redis.clients.jedis.JedisPoolConfig;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisClient;

final class JedisPoolTrap extends JedisTraps {

    /** Thrown where the application would return early or fail, between the commands and sync(). */
    static final class GaveUp extends RuntimeException {
        private static final long serialVersionUID = 1L;

        GaveUp() {
            super("borrower 1 gave up before sync()", null, false, false);
        }
    }

    /** What borrower 2's SET and GET returned (a value, or "Exception: message"), and whether both are right. */
    record Seen(String set, String get) {
        boolean correct() {
            return "OK".equals(set) && B2_VALUE.equals(get);
        }

        void report(LabSupport.Report report, String prefix) {
            report.fact(prefix + "_b2_set", set);
            report.fact(prefix + "_b2_get", get);
            report.fact(prefix + "_b2_correct", correct());
        }
    }

    static Seen seen(Supplier<String> set, Supplier<String> get) {
        return new Seen(outcome(set), outcome(get));
    }

    /** The value a call returned, or the exception it threw as "Class: message", one line. */
    static String outcome(Supplier<?> call) {
        try {
            return String.valueOf(call.get());
        } catch (RuntimeException e) {
            return describe(e);
        }
    }

    // --8<-- [start:jedispool]
    /**
     * Borrower 1 on the legacy JedisPool. Jedis.close() returns the Jedis through
     * JedisPool.returnResource(), which calls Jedis.resetState(): that closes the pipeline,
     * and Pipeline.close() is sync(). Borrower 2 is safe, and the "abandoned" SETs all run.
     */
    static void legacyBorrower(JedisPool pool, List<String> keys) {
        try (Jedis jedis = pool.getResource()) {
            Pipeline pipeline = jedis.pipelined();
            for (String key : keys) {
                pipeline.set(key, B1_VALUE);
            }
            throw new GaveUp(); // leaves before sync()
        }
    }
    // --8<-- [end:jedispool]

    /** Part 1, legacy JedisPool(maxTotal 1). Facts jedispool_*. */
    static void legacyPool(LabSupport.Report report, LabSupport.Settings s, Jedis control, List<String> all) {
        List<String> keys = LabSupport.keys(s.size(), "ch08", "jedis", "jedispool");
        String b2Key = LabSupport.key("ch08", "jedis", "jedispool", "b2");
        all.addAll(keys);
        all.add(b2Key);
        JedisPoolConfig config = new JedisPoolConfig();
        config.setMaxTotal(1);
        config.setMaxWait(POOL_WAIT);
        // As new JedisPool(config, host, port, timeout) sets its connections up (RESP2, no HELLO),
        // with REDIS_URL's user, password, database and TLS.
        JedisClientConfig legacy = LabSupport.jedisConfig(s, DefaultJedisClientConfig.builder()
                .autoNegotiateProtocol(false).timeoutMillis(SOCKET_TIMEOUT_MS));
        try (JedisPool pool = new JedisPool(config, new HostAndPort(s.host(), s.port()), legacy)) {
            try {
                legacyBorrower(pool, keys);
            } catch (GaveUp expected) {
                // the application's early exit; the pool has the Jedis back by now
            }
            Seen seen;
            try (Jedis jedis = pool.getResource()) {
                seen = seen(() -> jedis.set(b2Key, B2_VALUE), () -> jedis.get(b2Key));
            }
            seen.report(report, "jedispool");
            report.fact("jedispool_b1_applied", LabSupport.countExisting(control, keys));
            report.fact("jedispool_connections_created", pool.getCreatedCount());
        }
    }

    /** A RedisClient whose pool holds at most one connection and waits POOL_WAIT for it. */
    static RedisClient poolOfOne(LabSupport.Settings s) {
        ConnectionPoolConfig pool = new ConnectionPoolConfig();
        pool.setMaxTotal(1);
        pool.setMaxWait(POOL_WAIT);
        JedisClientConfig config = LabSupport.jedisConfig(s, DefaultJedisClientConfig.builder()
                .socketTimeoutMillis(SOCKET_TIMEOUT_MS));
        return RedisClient.builder().hostAndPort(s.host(), s.port()).poolConfig(pool).clientConfig(config).build();
    }

    // --8<-- [start:poison]
    /**
     * Borrower 1 with the connection, not the pipeline, as the resource. Connection.close()
     * returns it to the pool as it is: every reply unread, and the last 8 KB or less of the
     * SETs still in the output buffer (each time the buffer filled, it went to the server).
     * The next borrower's command flushes them and reads the first stale reply.
     */
    static void poisoningBorrower(RedisClient client, List<String> keys) {
        try (Connection connection = client.getPool().getResource()) {
            Pipeline pipeline = new Pipeline(connection);
            for (String key : keys) {
                pipeline.set(key, B1_VALUE);
            }
            throw new GaveUp(); // leaves before sync()
        }
    }
    // --8<-- [end:poison]

    /**
     * Part 1, RedisClient with a pool of one, connection returned unsynced. Facts poison_*:
     * what borrower 2 saw, how many replies behind the pooled connection stays afterwards,
     * what the server holds for borrower 2's key, and borrower 1's SETs the server ran.
     */
    static void poisonedConnection(LabSupport.Report report, LabSupport.Settings s, Jedis control, List<String> all)
            throws InterruptedException {
        List<String> keys = LabSupport.keys(s.size(), "ch08", "jedis", "poison");
        String b2Key = LabSupport.key("ch08", "jedis", "poison", "b2");
        all.addAll(keys);
        all.add(b2Key);
        try (RedisClient client = poolOfOne(s)) {
            try {
                poisoningBorrower(client, keys);
            } catch (GaveUp expected) {
                // back in the pool, unsynced
            }
            reportLeftBehind(report, "poison", control, keys);
            Seen seen = seen(() -> client.set(b2Key, B2_VALUE), () -> client.get(b2Key));
            seen.report(report, "poison");
            report.fact("poison_replies_behind", repliesBehind(client, s.size() + 10));
            // Read after the ECHOs' round trips, so borrower 2's SET has surely run by now (its
            // set() returned at once, on a stale reply, possibly before the server ran it).
            report.fact("poison_b2_key_value", String.valueOf(control.get(b2Key)));
            report.fact("poison_b1_applied", LabSupport.countExisting(control, keys));
            report.fact("poison_connections_created", client.getPool().getCreatedCount());
        }
    }

    /**
     * How far behind the pooled connection is: ECHOs numbered 0, 1, 2 ... through the client;
     * the first one that comes back with an ECHO's text (its own or an earlier one's) tells:
     * ECHO i reading "pipelab-probe-j" is i - j replies behind. Each command reads the oldest
     * unread reply and leaves its own, so the lag never shrinks while the connection lives.
     * -1 if no ECHO text came back within `limit` ECHOs.
     */
    static int repliesBehind(RedisClient client, int limit) {
        for (int i = 0; i <= limit; i++) {
            Object reply = client.sendCommand(Protocol.Command.ECHO, PROBE + i);
            String text = reply instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : "";
            if (text.startsWith(PROBE)) {
                return i - Integer.parseInt(text.substring(PROBE.length()));
            }
        }
        return -1;
    }

    /**
     * Facts PREFIX_b1_applied_before_b2, borrower 1's SETs the server ran before anyone used the
     * connection again, and PREFIX_set_bytes, the RESP size of its last SET (those not yet run are
     * the last ones, all of that size).
     */
    static void reportLeftBehind(LabSupport.Report report, String prefix, Jedis control, List<String> keys)
            throws InterruptedException {
        Thread.sleep(FLUSHED_SETTLE_MS);
        report.fact(prefix + "_b1_applied_before_b2", LabSupport.countExisting(control, keys));
        report.fact(prefix + "_set_bytes", respBytes("SET", keys.get(keys.size() - 1), B1_VALUE));
    }

    // --8<-- [start:leak]
    /**
     * Borrower 1 with RedisClient.pipelined() and no try-with-resources: the Pipeline holds a
     * pooled connection until its close(), which never comes. (Returned here only so the
     * example can close it afterwards; the application has lost it.)
     */
    static Pipeline leakingBorrower(RedisClient client, List<String> keys) {
        Pipeline pipeline = client.pipelined();
        for (String key : keys) {
            pipeline.set(key, B1_VALUE);
        }
        return pipeline; // no sync(), no close()
    }
    // --8<-- [end:leak]

    /** Part 1, the leaked pipeline. Facts leak_*. */
    static void leakedPipeline(LabSupport.Report report, LabSupport.Settings s, Jedis control, List<String> all) {
        List<String> keys = LabSupport.keys(s.size(), "ch08", "jedis", "leak");
        String b2Key = LabSupport.key("ch08", "jedis", "leak", "b2");
        all.addAll(keys);
        all.add(b2Key);
        try (RedisClient client = poolOfOne(s)) {
            Pipeline lost = leakingBorrower(client, keys);
            long start = System.nanoTime();
            String set = outcome(() -> client.set(b2Key, B2_VALUE));
            report.fact("leak_b2_waited_ms", (System.nanoTime() - start) / 1_000_000);
            report.fact("leak_b2_set", set);
            // What the server ran while the pipeline was lost: all but what was left in the output buffer.
            report.fact("leak_b1_applied_while_lost", LabSupport.countExisting(control, keys));
            report.fact("leak_set_bytes", respBytes("SET", keys.get(keys.size() - 1), B1_VALUE));
            lost.close(); // sync() and give the connection back
            report.fact("leak_b1_applied_after_close", LabSupport.countExisting(control, keys));
            Seen after = seen(() -> client.set(b2Key, B2_VALUE), () -> client.get(b2Key));
            report.fact("leak_b2_correct_after_close", after.correct());
        }
    }

    // --8<-- [start:pool_fix]
    /**
     * The fix: the Pipeline is the resource. Pipeline.close() is sync() (every reply read),
     * and then, for a pipeline from RedisClient.pipelined(), the connection goes back to the
     * pool in step. Borrower 1's SETs still run: a pipeline cannot be taken back.
     */
    static void carefulBorrower(RedisClient client, List<String> keys) {
        try (Pipeline pipeline = client.pipelined()) {
            for (String key : keys) {
                pipeline.set(key, B1_VALUE);
            }
            throw new GaveUp(); // leaves before sync(); close() syncs
        }
    }
    // --8<-- [end:pool_fix]

    /** Part 1, the fix, measured as the poison case was. Facts pool_fix_*. */
    static void fixedPipeline(LabSupport.Report report, LabSupport.Settings s, Jedis control, List<String> all) {
        List<String> keys = LabSupport.keys(s.size(), "ch08", "jedis", "fix");
        String b2Key = LabSupport.key("ch08", "jedis", "fix", "b2");
        all.addAll(keys);
        all.add(b2Key);
        try (RedisClient client = poolOfOne(s)) {
            try {
                carefulBorrower(client, keys);
            } catch (GaveUp expected) {
                // the pipeline was synced and the connection returned on the way out
            }
            Seen seen = seen(() -> client.set(b2Key, B2_VALUE), () -> client.get(b2Key));
            seen.report(report, "pool_fix");
            report.fact("pool_fix_b1_applied", LabSupport.countExisting(control, keys));
            report.fact("pool_fix_replies_behind", repliesBehind(client, s.size() + 10));
        }
    }
}
