///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/SaddWorkload.java

// Chapter 3: the four ways Jedis can send the same N writes (one SADD to each of N
// distinct keys): one command per round trip, a Pipeline, a MULTI/EXEC Transaction, and
// a Pipeline on a connection borrowed from a pool. Jedis is a blocking client: a
// Jedis object owns one socket, and the calling thread writes the commands and reads
// the replies itself. What the modes change is when it flushes and when it reads.
// After each mode the example prints what reached the server (INFO commandstats).
//
//   jbang ch03-jedis [host] [port] [size] [repeat] [warmup]     (defaults: 127.0.0.1, the lab's port, 100000 3 1)

import java.util.ArrayList;
import java.util.List;

import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.Transaction;

public class JedisModes {

    public static void main(String[] args) {
        LabSupport.run("ch03-jedis", args, 100_000, 3, JedisModes::bench);
    }

    static void bench(LabSupport.Settings s) throws Exception {
        List<String> keys = LabSupport.keys(s.size(), "ch03", "jedis");
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"));

        try (Jedis jedis = LabSupport.connect(s)) {
            // Before anything is written: the database must hold nothing but lab keys.
            LabSupport.requireLabOnly(jedis, s);
            // RedisClient is Jedis 8's pooled client (it replaces JedisPooled; JedisPool is
            // deprecated): a commons-pool2 pool of Connections, default settings. Its evictor
            // checks idle connections with a PING every 30 s, so a long run may show a ping
            // in some mode's wire counts that no mode sent. Its own client config is RedisClient's
            // default, with REDIS_URL's user, password, database and TLS added.
            try (RedisClient pooled = RedisClient.builder().hostAndPort(s.host(), s.port())
                    .clientConfig(LabSupport.jedisConfig(s, DefaultJedisClientConfig.builder())).build()) {
                report.header(s.size() + " SADDs to distinct keys, one connection per mode");

                // Each mode is timed, and what reached the server counted over all its
                // iterations, warm-up included. The untimed reset and check around each
                // iteration use only UNLINK, EXISTS and SCARD, so that in the wire counts
                // every SADD, MULTI and EXEC is the mode's own.
                SaddWorkload.Modes modes = new SaddWorkload.Modes(report, s, jedis, keys);

                modes.time("one_by_one", "one by one", () -> oneByOne(jedis, keys));
                modes.time("pipeline", "pipeline", () -> pipeline(jedis, keys));
                modes.time("transaction", "transaction", () -> transaction(jedis, keys));
                modes.time("pooled_pipeline", "pooled pipeline", () -> pooledPipeline(pooled, keys), () -> {
                    // try-with-resources gave the connection back: none may be left borrowed.
                    if (pooled.getPool().getNumActive() != 0) {
                        throw LabSupport.failure(pooled.getPool().getNumActive()
                                + " pooled connection(s) still borrowed after the pipeline was closed");
                    }
                });
                System.out.println("pool after the pooled pipelines: " + pooled.getPool().getNumActive()
                        + " borrowed, " + pooled.getPool().getNumIdle() + " idle, "
                        + pooled.getPool().getCreatedCount() + " ever created");
            } finally {
                // Delete exactly our keys, whatever happened (on a fresh connection).
                LabSupport.cleanup(s, keys);
            }
        }
        report.finish();
    }

    // --8<-- [start:modes]
    /** N round trips: sadd() writes the command, flushes the socket and blocks until its reply. */
    static long oneByOne(Jedis jedis, List<String> keys) {
        long added = 0;
        for (String key : keys) {
            added += jedis.sadd(key, SaddWorkload.MEMBER);
        }
        return added;
    }

    /**
     * Pipeline.sadd() only encodes the command into the Connection's RedisOutputStream, an
     * 8 KiB buffer (system property jedis.bufferSize.output) that goes to the socket
     * whenever it fills up, and queues a Response placeholder. sync() flushes the rest and
     * reads exactly as many replies as there are placeholders, in order: Redis answers a
     * connection's commands first-in first-out, so the n-th reply belongs to the n-th
     * command. Nothing is read before sync(): the replies wait in the kernel's socket buffer
     * (and, once that is full, in Redis's output buffer for this client).
     */
    static long pipeline(Jedis jedis, List<String> keys) {
        List<Response<Long>> replies = new ArrayList<>(keys.size());
        try (Pipeline pipeline = jedis.pipelined()) {
            for (String key : keys) {
                replies.add(pipeline.sadd(key, SaddWorkload.MEMBER));
            }
            pipeline.sync();
        }
        return sum(replies); // sync() has filled each Response
    }

    /**
     * jedis.multi() sends MULTI (buffered, like a pipeline), then each sadd() is buffered
     * and Redis will answer +QUEUED instead of executing it. Transaction.exec() in Jedis
     * 8.0.2 first flushes and reads the MULTI's +OK and the n +QUEUED replies (checking
     * for a queuing error), and only then sends EXEC and reads its array of n results:
     * two round trips, not one. Redis runs the queued SADDs inside EXEC, with no other
     * client's command in between. Closing a transaction that was not executed DISCARDs it.
     */
    static long transaction(Jedis jedis, List<String> keys) {
        List<Response<Long>> replies = new ArrayList<>(keys.size());
        List<Object> results;
        try (Transaction transaction = jedis.multi()) {
            for (String key : keys) {
                replies.add(transaction.sadd(key, SaddWorkload.MEMBER));
            }
            results = transaction.exec();
        }
        if (results == null || results.size() != keys.size()) {
            throw LabSupport.failure("EXEC returned " + (results == null ? "null (transaction aborted)"
                    : results.size() + " results") + " for " + keys.size() + " queued SADDs");
        }
        return sum(replies); // exec() has filled each Response from the EXEC array
    }

    /**
     * The same pipeline on a pooled connection. RedisClient.pipelined() borrows a Connection
     * from the pool (commons-pool2's GenericObjectPool) for the pipeline alone, and
     * Pipeline.close() gives it back instead of closing the socket, so every iteration
     * after the first reuses the same, already-connected socket. Other threads using the
     * RedisClient meanwhile get other connections: a pipeline never shares its socket.
     * (With the deprecated JedisPool: try (Jedis j = pool.getResource(); Pipeline p = j.pipelined()).)
     */
    static long pooledPipeline(RedisClient pooled, List<String> keys) {
        List<Response<Long>> replies = new ArrayList<>(keys.size());
        try (AbstractPipeline pipeline = pooled.pipelined()) {
            for (String key : keys) {
                replies.add(pipeline.sadd(key, SaddWorkload.MEMBER));
            }
            pipeline.sync();
        }
        return sum(replies);
    }

    private static long sum(List<Response<Long>> replies) {
        long total = 0;
        for (Response<Long> reply : replies) {
            total += reply.get();
        }
        return total;
    }
    // --8<-- [end:modes]
}
