///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.redisson:redisson:4.7.0
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LabTiming.java
//SOURCES ../common/SaddWorkload.java
//SOURCES ../common/RedissonSupport.java

// Chapter 1: the same N writes (one SADD to each of N distinct keys) three ways:
// Jedis one command per round trip, a Jedis Pipeline synced once at the end, and a
// Redisson RBatch executed once. Pipelines and batches all with the libraries' default
// options. The keys are deleted before every repetition, outside the timed region, so
// each repetition adds one member to N empty keys.
//
//   jbang ch01-sadd [host] [port] [size] [repeat] [warmup]     (defaults: 127.0.0.1, the lab's port, 100000 3 1)

import java.util.ArrayList;
import java.util.List;

import org.redisson.Redisson;
import org.redisson.api.RBatch;
import org.redisson.api.RedissonClient;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;

public class SaddBench {

    public static void main(String[] args) {
        LabSupport.run("ch01-sadd", args, 100_000, 3, SaddBench::bench);
    }

    static void bench(LabSupport.Settings s) throws Exception {
        List<String> keys = LabSupport.keys(s.size(), "ch01", "sadd");
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"))
                .client("redisson", LabSupport.versionOf(Redisson.class, "org.redisson", "redisson", "4.7.0"));

        try (Jedis jedis = LabSupport.connect(s)) {
            // Before anything is written: the database must hold nothing but lab keys.
            LabSupport.requireLabOnly(jedis, s);
            RedissonClient redisson = null;
            try {
                // Client start-up (connection pool, threads) happens here, never in a timed region.
                redisson = Redisson.create(RedissonSupport.config(s));
                RedissonClient rc = redisson;
                report.header(s.size() + " SADDs to distinct keys");

                long[] added = new long[1]; // members the timed task saw added; checked afterwards
                LabSupport.Step reset = () -> LabSupport.deleteKeys(jedis, keys);
                // Outside the timed region: every SADD added a member, every key exists, and
                // sampled sets hold just "m", the same bytes from Jedis and from Redisson.
                LabSupport.Step verify = () -> SaddWorkload.verifyMember(jedis, keys, added[0]);

                report.add("jedis_one_by_one", "jedis one by one", "SADDs",
                        LabSupport.measure(s, reset, () -> added[0] = saddOneByOne(jedis, keys), verify));
                report.add("jedis_pipeline", "jedis pipeline", "SADDs",
                        LabSupport.measure(s, reset, () -> added[0] = saddPipeline(jedis, keys), verify));
                report.add("redisson_rbatch", "redisson rbatch", "SADDs",
                        LabSupport.measure(s, reset, () -> added[0] = saddBatch(rc, keys), verify));
            } finally {
                // Delete exactly our keys, and stop Redisson's non-daemon threads, whatever happened.
                LabSupport.cleanup(s, keys, redisson, RedissonClient::shutdown);
            }
        }
        report.finish();
    }

    // --8<-- [start:sadd]
    /** N round trips: each sadd() waits for its reply (1 = member added) before the next. */
    static long saddOneByOne(Jedis jedis, List<String> keys) {
        long added = 0;
        for (String key : keys) {
            added += jedis.sadd(key, SaddWorkload.MEMBER);
        }
        return added;
    }

    /** All SADDs queued on one connection, replies read by a single sync() at the end. */
    static long saddPipeline(Jedis jedis, List<String> keys) {
        List<Response<Long>> replies = new ArrayList<>(keys.size());
        try (Pipeline pipeline = jedis.pipelined()) {
            for (String key : keys) {
                replies.add(pipeline.sadd(key, SaddWorkload.MEMBER));
            }
            pipeline.sync(); // sends what is still buffered, then reads every reply
        }
        long added = 0;
        for (Response<Long> reply : replies) {
            added += reply.get();
        }
        return added;
    }

    /** Redisson collects the commands in an RBatch and sends them together on execute(). */
    static long saddBatch(RedissonClient redisson, List<String> keys) {
        RBatch batch = redisson.createBatch();
        for (String key : keys) {
            batch.<String>getSet(key).addAsync(SaddWorkload.MEMBER);
        }
        long added = 0;
        for (Object reply : batch.execute().getResponses()) {
            if (Boolean.TRUE.equals(reply)) { // RSet#addAsync turns SADD's 1 or 0 into a Boolean
                added++;
            }
        }
        return added;
    }
    // --8<-- [end:sadd]
}
