///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java

// Chapter 6: a Jedis pipeline cut by the server's limits, in two forms.
//
// With valueBytes alone: cut by client-output-buffer-limit. `size` pairs of INCR counter and GET big
// (a value of valueBytes) go out in one pipeline; the server runs what it reads and queues the
// replies, and once they pass the limit it closes the connection. The counter, read on a second
// connection, says how many pairs ran; the facts say what the application saw.
//
// With stallSeconds too: cut by client-query-buffer-limit. `size` SETs of valueBytes go out in one
// pipeline behind nothing (the control), a BLPOP that blocks for up to stallSeconds, a CLIENT PAUSE
// WRITE of stallSeconds (sent on a second connection, and undone right after), or a MULTI. The
// facts give each one's outcome, the keys stored and the rise of client_query_buffer_limit_disconnections.
//
// The notebook sets the limit on a server the lab started, runs this, and restores it.
//
//   jbang ch06-cut [host] [port] [size] [repeat] [warmup] valueBytes [stallSeconds]
//   (the notebook passes chapter 6's)

import java.util.ArrayList;
import java.util.List;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.Transaction;
import redis.clients.jedis.args.ClientPauseMode;
import redis.clients.jedis.exceptions.JedisException;

public class CutPipeline {

    /** What is ahead of the SETs in the query-buffer form; "control": nothing. */
    static final List<String> STALLS = List.of("control", "blocked", "paused", "multi");

    public static void main(String[] args) {
        String[] extra = LabSupport.extra(args);
        if (extra.length > 1) {
            LabSupport.run("ch06-cut", LabSupport.usual(args), 15_000, 1, s -> stalls(s, extra));
        } else {
            LabSupport.run("ch06-cut", LabSupport.usual(args), 2_000, 1, s -> demo(s, extra));
        }
    }

    static void demo(LabSupport.Settings s, String[] extra) throws Exception {
        int valueBytes = extra.length > 0 ? LabSupport.intList("ch06-cut", "valueBytes", extra[0]).get(0) : 10_000;
        String counter = LabSupport.key("ch06", "java", "cut", "ran");
        String big = LabSupport.key("ch06", "java", "cut", "big");
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"));
        report.header(s.size() + " x (INCR, GET of " + valueBytes + " bytes) in one pipeline");
        try (Jedis checker = LabSupport.connect(s)) {
            LabSupport.requireLabOnly(checker, s);
            checker.del(counter);
            checker.set(big, "x".repeat(valueBytes));
            try {
                Seen seen = cutPipeline(s, counter, big);
                report.fact("commands_sent", 2 * s.size());
                report.fact("incr_ran", Long.parseLong(checker.get(counter) == null ? "0" : checker.get(counter)));
                report.fact("outcome", seen.outcome());
                report.fact("responses_readable", seen.readable());
            } finally {
                LabSupport.cleanup(s, List.of(counter, big));
            }
        }
        report.finish();
    }

    /** What the application saw of the pipeline: how it ended, and how many GET replies it can read. */
    record Seen(String outcome, int readable) {
    }

    // --8<-- [start:cut]
    static Seen cutPipeline(LabSupport.Settings s, String counter, String big) {
        List<Response<String>> gets = new ArrayList<>();
        String outcome = "completed";
        try (Jedis jedis = LabSupport.connect(s)) {
            Pipeline pipeline = jedis.pipelined();
            for (int i = 0; i < s.size(); i++) {
                pipeline.incr(counter);
                gets.add(pipeline.get(big));
            }
            pipeline.sync(); // reads every reply: throws when the server hangs up mid-way
        } catch (JedisException e) {
            outcome = e.getClass().getSimpleName() + ": " + e.getMessage();
        }
        return new Seen(outcome, LabSupport.received(gets)); // the GETs whose reply arrived
    }
    // --8<-- [end:cut]

    static void stalls(LabSupport.Settings s, String[] extra) throws Exception {
        int valueBytes = LabSupport.intList("ch06-cut", "valueBytes", extra[0]).get(0);
        int seconds = LabSupport.intList("ch06-cut", "stallSeconds", extra[1]).get(0);
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"));
        report.header(s.size() + " SETs of " + valueBytes + " bytes in one pipeline, behind each of " + STALLS);
        report.fact("sets_sent", s.size());
        try (Jedis checker = LabSupport.connect(s)) {
            LabSupport.requireLabOnly(checker, s);
            for (String stall : STALLS) {
                List<String> keys = LabSupport.keys(s.size(), "ch06", "java", "stall", stall);
                long before = LabSupport.infoNumbers(checker, "stats").get("client_query_buffer_limit_disconnections");
                try {
                    String outcome;
                    if (stall.equals("paused")) { // from another connection, bounded, and undone at once
                        checker.clientPause(seconds * 1000L, ClientPauseMode.WRITE);
                        try {
                            outcome = stalledPipeline(s, stall, keys, "v".repeat(valueBytes), seconds);
                        } finally {
                            checker.clientUnpause();
                        }
                    } else {
                        outcome = stalledPipeline(s, stall, keys, "v".repeat(valueBytes), seconds);
                    }
                    long after = LabSupport.infoNumbers(checker, "stats").get("client_query_buffer_limit_disconnections");
                    report.fact(stall + "_outcome", outcome);
                    report.fact(stall + "_stored", LabSupport.countExisting(checker, keys));
                    report.fact(stall + "_qbuf_disconnections", after - before);
                } finally {
                    LabSupport.cleanup(s, keys);
                }
            }
        }
        report.finish();
    }

    // --8<-- [start:stalled]
    /** SETs every key in one pipeline behind `stall`: how it ended, as the application saw it. */
    static String stalledPipeline(LabSupport.Settings s, String stall, List<String> keys, String value, int seconds) {
        try (Jedis jedis = LabSupport.connect(s)) {
            if (stall.equals("multi")) { // MULTI now; each SET is written (and queued) as the buffer fills
                Transaction tx = jedis.multi();
                keys.forEach(key -> tx.set(key, value));
                tx.exec();
            } else {
                Pipeline pipeline = jedis.pipelined();
                if (stall.equals("blocked")) {
                    pipeline.blpop(seconds, LabSupport.key("ch06", "java", "stall", "empty"));
                }
                keys.forEach(key -> pipeline.set(key, value));
                pipeline.sync();
            }
            return "completed";
        } catch (JedisException e) { // thrown by the first write or read after the server closed the connection
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }
    // --8<-- [end:stalled]
}
