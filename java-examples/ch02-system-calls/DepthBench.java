///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LabTiming.java

// Chapter 2: how throughput grows with pipeline depth, and where it stops growing. One
// connection sends SET pipelab:ch02:set xxx in batches of `depth` commands through a
// Jedis Pipeline, reading every batch's replies before sending the next; the same
// workload as `redis-benchmark -P <depth> -c 1 -n <size> SET pipelab:ch02:set xxx`.
// Deeper batches share each round trip, and each read()/write() system call, among more
// commands, until the CPU of the client or of the server is the limit. Each depth's line
// shows the client's CPU time beside the wall time, to tell those limits apart.
//
//   jbang ch02-depth [host] [port] [size] [repeat] [warmup] depths
//   e.g. jbang ch02-depth 127.0.0.1 "$PIPELAB_PORT" 200000 5 1 1,4,16,64,256,1000,4096
//
// size is the commands per sample; at small depths a sample is capped at
// MAX_ROUND_TRIPS batches so that depth 1 does not take minutes (see commandsPerSample).
// depths is a comma-separated list: chapter 2's notebook passes the one the chapter declares
// (pipelab/chapters/ch02/parameters.py), so the Java side keeps no list of its own.

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisDataException;

public class DepthBench {

    static final String KEY = LabSupport.key("ch02", "set");
    static final String VALUE = "xxx"; // 3 bytes, redis-benchmark's default SET payload size

    /** The depths to run, in the order given (the sixth argument). */
    static List<Integer> depths = List.of();

    /**
     * Round trips per sample at most: 10,000 at 50-100 µs each keep a sample at the small
     * depths under a second (and the whole run under a minute) while still averaging over
     * many round trips. It only binds below depth size / 10,000 (20 with the default size).
     */
    static final int MAX_ROUND_TRIPS = 10_000;

    /**
     * SETs at depth 1000 sent once, untimed, before the first depth. The per-depth warm-up
     * runs only `size` commands (2,000 in quick mode) and the first depths go through the
     * loop a few commands at a time, so without this pass the JIT would still be compiling
     * Jedis's command encoding and reply parsing while depths are timed, and the comparison
     * with redis-benchmark (compiled C, nothing to warm up) would measure the JIT.
     * Some hundred thousand calls take each hot method past C2's compile thresholds.
     */
    static final int GLOBAL_WARMUP_SETS = 300_000;
    static final int GLOBAL_WARMUP_DEPTH = 1000;

    public static void main(String[] args) {
        String[] extra = LabSupport.extra(args);
        if (extra.length > 0) {
            depths = LabSupport.intList("ch02-depth", "depths", extra[0]);
        }
        LabSupport.run("ch02-depth", LabSupport.usual(args), 200_000, 5, DepthBench::bench);
    }

    static void bench(LabSupport.Settings s) throws Exception {
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"));

        if (depths.isEmpty()) {
            throw new LabSupport.Stop(2, "ch02-depth: give the depths after the five usual arguments, e.g. "
                    + "jbang ch02-depth 127.0.0.1 " + LabSupport.DEFAULT_PORT + " 200000 5 1 1,16,256,1000,4096.");
        }
        try (Jedis jedis = LabSupport.connect(s)) {
            // Before anything is written: the database must hold nothing but lab keys.
            LabSupport.requireLabOnly(jedis, s);
            try {
                report.header("SET " + KEY + " " + VALUE + " in batches of " + depths + " commands, one connection");
                // warmup 0 asks for cold numbers; then there is no global pass either.
                if (s.warmup() > 0) {
                    setInBatches(jedis, GLOBAL_WARMUP_SETS, GLOBAL_WARMUP_DEPTH);
                }
                LabSupport.Step verify = () -> verify(jedis);
                for (int depth : depths) {
                    int count = commandsPerSample(s.size(), depth);
                    report.fields("depth_" + depth, Map.of("depth", depth, "command", "SET", "mode", "pipelined"));
                    report.add("depth_" + depth, "depth " + depth, "SETs", count,
                            LabSupport.measure(s, null, () -> setInBatches(jedis, count, depth), verify));
                }
            } finally {
                // Exactly our one key, on a fresh connection, whatever happened above.
                LabSupport.cleanup(s, List.of(KEY));
            }
        }
        report.finish();
    }

    /** `size`, unless that would take more than MAX_ROUND_TRIPS batches of `depth`. */
    static int commandsPerSample(int size, int depth) {
        return (int) Math.min(size, (long) MAX_ROUND_TRIPS * depth);
    }

    // --8<-- [start:batches]
    /**
     * `count` SETs, `depth` at a time: queue a batch on the pipeline, sync() to flush it and
     * read its replies, check them, repeat; the last batch takes what is left. Depth 1 is one
     * round trip per command but still goes through the Pipeline API, so every depth runs
     * the same client code and only the batch size changes.
     */
    static void setInBatches(Jedis jedis, int count, int depth) {
        List<Response<String>> replies = new ArrayList<>(Math.min(depth, count));
        try (Pipeline pipeline = jedis.pipelined()) {
            int sent = 0;
            while (sent < count) {
                replies.clear();
                int batch = Math.min(depth, count - sent);
                for (int i = 0; i < batch; i++) {
                    replies.add(pipeline.set(KEY, VALUE));
                }
                pipeline.sync();
                // get() decodes each reply: an application reads its replies, so this stays
                // in the timed region.
                for (int i = 0; i < batch; i++) {
                    String reply;
                    try {
                        reply = replies.get(i).get();
                    } catch (JedisDataException e) { // Redis answered with an error
                        reply = e.getMessage();
                    }
                    if (!"OK".equals(reply)) {
                        throw LabSupport.failure("SET #" + (sent + i) + " at depth " + depth + " answered '" + reply + "'");
                    }
                }
                sent += batch;
            }
        }
    }
    // --8<-- [end:batches]

    /** Outside the timed region: the key holds what every SET wrote. */
    static void verify(Jedis jedis) {
        String value = jedis.get(KEY);
        if (!VALUE.equals(value)) {
            throw LabSupport.failure("after the SETs '" + KEY + "' holds '" + value + "' instead of '" + VALUE + "'");
        }
    }
}
