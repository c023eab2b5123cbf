///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LabTiming.java

// Chapter 7: optimistic transactions. W writers, each on a Jedis connection of its own, add 1 to
// ONE shared counter `size` times each by read-modify-write: WATCH, GET, then MULTI/SET/EXEC.
// When another writer changed the counter after the WATCH, EXEC runs nothing and Jedis's
// Transaction.exec() returns null; the writer starts over. Every increment lands, at the price of
// the attempts that were thrown away. Then the same writers do a blind GET and SET with no
// WATCH: nothing is retried, and the increments that overwrote each other are lost.
//
//   jbang ch07-watch [host] [port] [size] [repeat] [warmup] writers
//   e.g.  jbang ch07-watch 127.0.0.1 "$PIPELAB_PORT" 1000 3 1 1,2,4,8   (the notebook passes chapter 7's)
//
// size is the number of increments per writer; each sample is W x size increments.

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.LongAdder;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Transaction;

public class WatchRetry {

    static final String EXAMPLE = "ch07-watch";
    /** More writers than this measure the scheduler, not Redis. */
    static final int MAX_WRITERS = 256;

    public static void main(String[] args) {
        String[] extra = LabSupport.extra(args);
        LabSupport.run(EXAMPLE, LabSupport.usual(args), 1_000, 3, s -> bench(s, extra));
    }

    static List<Integer> writers(String[] extra) {
        if (extra.length > 1) {
            throw new LabSupport.Stop(2, EXAMPLE + ": expected at most 1 argument after the usual five"
                    + " (writers) but got " + extra.length + ".");
        }
        List<Integer> writers = extra.length > 0 ? LabSupport.intList(EXAMPLE, "writers", extra[0]) : List.of(1, 2, 4, 8);
        if (writers.stream().anyMatch(w -> w > MAX_WRITERS)) {
            throw new LabSupport.Stop(2, EXAMPLE + ": writers must be at most " + MAX_WRITERS + ", not " + writers + ".");
        }
        return writers;
    }

    static void bench(LabSupport.Settings s, String[] extra) throws Exception {
        List<Integer> writerCounts = writers(extra);
        String counter = LabSupport.key("ch07", "watch", "counter");
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"))
                .withoutSpeedUps(); // modes of different W do different amounts of work
        try (Jedis control = LabSupport.connect(s)) {
            LabSupport.requireLabOnly(control, s);
            try {
                report.header(s.size() + " increments per writer of one shared counter, writers " + writerCounts);
                abortOnce(report, s, control, counter);
                for (int w : writerCounts) {
                    writersOf(report, s, control, counter, w);
                }
            } finally {
                LabSupport.cleanup(s, List.of(counter));
            }
        }
        report.finish();
    }

    /** Attempts and aborted EXECs, counted by all writers together. */
    static final class Tally {
        final LongAdder attempts = new LongAdder();
        final LongAdder aborts = new LongAdder();
    }

    /**
     * W writers, their connections opened before the timing: the WATCH loop as mode watch_w<W>
     * and the blind loop as mode blind_w<W>, each W x size increments per sample. Facts, from
     * the last recorded run: jedis_w<W>_attempts, _aborts, _final; blind_w<W>_final, _lost.
     * jedis_w<W>_aborts_per_increment is over all recorded runs.
     */
    static void writersOf(LabSupport.Report report, LabSupport.Settings s, Jedis control, String counter, int w)
            throws Exception {
        List<Jedis> connections = new ArrayList<>(w);
        ExecutorService pool = Executors.newFixedThreadPool(w);
        try {
            for (int i = 0; i < w; i++) {
                connections.add(LabSupport.connect(s));
            }
            long total = (long) w * s.size();
            int[] iteration = {0};
            Tally tally = new Tally();
            long[] last = new long[3]; // attempts, aborts, final of the latest iteration
            List<Long> aborts = new ArrayList<>(); // per iteration, warm-up included
            long[] allAttempts = {0}; // warm-up included, as the server's read counter is

            Map<String, Long> before = LabSupport.commandCalls(s);
            long readsBefore = serverReads(control);
            LabSupport.Samples watched = LabSupport.measure(s, () -> {
                control.set(counter, "0");
                tally.attempts.reset();
                tally.aborts.reset();
            }, () -> together(pool, connections, jedis -> {
                for (int i = 0; i < s.size(); i++) {
                    watchedIncrement(jedis, counter, tally);
                }
            }), () -> {
                last[0] = tally.attempts.sum();
                last[1] = tally.aborts.sum();
                last[2] = Long.parseLong(control.get(counter));
                if (last[2] != total || last[0] != total + last[1]) {
                    throw LabSupport.failure(w + " writers with WATCH left the counter at " + last[2] + " after "
                            + last[0] + " attempts and " + last[1] + " aborts; expected " + total);
                }
                allAttempts[0] += last[0];
                iteration[0]++;
                aborts.add(last[1]);
            });
            // Each iteration's reset SET and check GET are one read each; the rest are the writers'.
            long reads = serverReads(control) - readsBefore - 2L * iteration[0];
            report.add("watch_w" + w, "watch w" + w, "incrs", (int) total, watched);
            report.wire("watch_w" + w, LabSupport.callsBetween(before, LabSupport.commandCalls(s)));
            report.fact("jedis_w" + w + "_attempts", last[0]);
            report.fact("jedis_w" + w + "_aborts", last[1]);
            report.fact("jedis_w" + w + "_final", last[2]);
            // The recorded iterations are the last ones; how many warm-ups came first varies.
            long recordedAborts = aborts.subList(aborts.size() - watched.size(), aborts.size()).stream()
                    .mapToLong(Long::longValue).sum();
            report.fact("jedis_w" + w + "_aborts_per_increment",
                    Math.round(1000.0 * recordedAborts / ((double) total * watched.size())) / 1000.0);
            report.fact("jedis_w" + w + "_reads_per_attempt", Math.round(100.0 * reads / allAttempts[0]) / 100.0);

            long[] blindFinal = {0};
            LabSupport.Samples blind = LabSupport.measure(s, () -> control.set(counter, "0"),
                    () -> together(pool, connections, jedis -> {
                        for (int i = 0; i < s.size(); i++) {
                            blindIncrement(jedis, counter);
                        }
                    }), () -> blindFinal[0] = Long.parseLong(control.get(counter)));
            report.add("blind_w" + w, "blind w" + w, "incrs", (int) total, blind);
            report.fact("blind_w" + w + "_final", blindFinal[0]);
            report.fact("blind_w" + w + "_lost", total - blindFinal[0]);
        } finally {
            pool.shutdownNow();
            connections.forEach(Jedis::close);
        }
    }

    // --8<-- [start:watch]
    /**
     * One increment, however many attempts it takes. WATCH makes the EXEC conditional: if any
     * client changes the key between WATCH and EXEC, Redis discards the queued SET and EXEC
     * replies with a null array, which Jedis 8's Transaction.exec() returns as null (not an
     * exception). Then the value read is stale, and the writer reads again.
     */
    static void watchedIncrement(Jedis jedis, String key, Tally tally) {
        while (true) {
            jedis.watch(key);
            long next = Long.parseLong(jedis.get(key)) + 1;
            Transaction tx = jedis.multi();
            tx.set(key, Long.toString(next));
            List<Object> replies = tx.exec();
            tally.attempts.increment();
            if (replies != null) {
                return;
            }
            tally.aborts.increment();
        }
    }

    /** The same read-modify-write with nothing to stop two writers from reading the same value. */
    static void blindIncrement(Jedis jedis, String key) {
        long next = Long.parseLong(jedis.get(key)) + 1;
        jedis.set(key, Long.toString(next));
    }
    // --8<-- [end:watch]

    /**
     * One abort on purpose, to show what the application gets: a WATCH on one connection, a SET
     * on another in between, then MULTI/SET/EXEC. Facts jedis_exec_on_abort (what exec()
     * returned) and jedis_abort_applied (whether the queued SET ran: it must not).
     */
    static void abortOnce(LabSupport.Report report, LabSupport.Settings s, Jedis control, String counter) {
        control.set(counter, "0");
        try (Jedis jedis = LabSupport.connect(s)) {
            jedis.watch(counter);
            control.set(counter, "1"); // another client changes the watched key
            Transaction tx = jedis.multi();
            tx.set(counter, "100");
            List<Object> replies = tx.exec();
            report.fact("jedis_exec_on_abort", String.valueOf(replies));
            report.fact("jedis_abort_applied", "100".equals(control.get(counter)));
        }
    }

    /** The server's total_reads_processed (INFO stats): read() calls that got bytes from a client. */
    static long serverReads(Jedis control) {
        Long reads = LabSupport.infoNumbers(control, "stats").get("total_reads_processed");
        if (reads == null) {
            throw LabSupport.failure("INFO stats has no total_reads_processed (Redis 6.0 or newer has)");
        }
        return reads;
    }

    interface Writer {
        void run(Jedis jedis) throws Exception;
    }

    /** Runs `writer` once per connection, each on a thread of its own, all released together. */
    static void together(ExecutorService pool, List<Jedis> connections, Writer writer) throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        List<Future<?>> done = new ArrayList<>(connections.size());
        for (Jedis jedis : connections) {
            done.add(pool.submit(() -> {
                go.await();
                writer.run(jedis);
                return null;
            }));
        }
        go.countDown();
        for (Future<?> f : done) {
            LabSupport.await(f);
        }
    }
}
