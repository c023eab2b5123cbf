///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LabTiming.java

// Chapter 4: a pipeline is only as cheap as the commands in it. The same job, remove the
// last P = 100 elements of a list of L, done two ways, each as one Jedis Pipeline of P
// commands:
//   LREM key 0 item:<L-1-i>   remove by value: count 0 means "every occurrence", so Redis
//                             walks the whole list for each command, O(L), even though the
//                             one match sits at the very end;
//   LTRIM key 0 -2            remove by position: it drops the last element and costs what
//                             it removes, whatever the length.
// Both leave the identical list, item:0 .. item:<L-P-1>, which is checked. Pipelining saves
// the round trips either way; it does nothing about what each command costs the server, and
// a pipeline of 100 O(L) commands keeps a single-threaded Redis busy for all of them.
//
//   jbang ch04-lrem [host] [port] [size] [repeat] [warmup] lengths p
//   e.g. jbang ch04-lrem 127.0.0.1 "$PIPELAB_PORT" 1000000 3 1 1000,10000,100000,1000000 100
//
// lengths are the lists' lengths and p the elements each pipeline removes: chapter 4's notebook
// passes the ones the chapter declares (pipelab/chapters/ch04.py); size is the longest list. Every
// mode is timed on the client (the pipeline, sync included) and on the server: INFO
// commandstats read before and after the mode gives the microseconds Redis spent inside
// LREM or LTRIM per call (facts lrem_usec_per_call_<L>, ltrim_usec_per_call_<L>; warm-up
// included, as in the call counts).
//
// The list is built with RPUSH in batches, outside the timed region. Between iterations the
// reset puts back exactly the P elements the job removed (the untimed check after every
// iteration has seen the length and both ends of item:0 .. item:<L-P-1>, and after each way's
// last iteration every element is read back), so a million-element list is built once, not
// once per iteration.

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;

public class LremVsLtrim {

    /** The lists' lengths, and the elements removed by each pipeline (one per command, both ways). */
    static List<Integer> lengths = List.of();
    static int P;

    /** Values per RPUSH when building a list: one command of about 200 KB. */
    private static final int PUSH_BATCH = 10_000;

    /**
     * Socket read timeout of the example's connection (Jedis's default is 2 s). Redis runs all
     * the commands of a pipeline it has read before it writes their replies, so with long lists
     * the first LREM reply comes only after all 100 scans: seconds for a million elements.
     */
    private static final int READ_TIMEOUT_MS = 120_000;

    /** Elements per LRANGE when the final check reads a whole list back. */
    private static final int READ_BATCH = 10_000;

    public static void main(String[] args) {
        String[] extra = LabSupport.extra(args);
        if (extra.length == 2) {
            lengths = LabSupport.intList("ch04-lrem", "lengths", extra[0]);
            P = LabSupport.intList("ch04-lrem", "p", extra[1]).get(0);
        }
        LabSupport.run("ch04-lrem", LabSupport.usual(args), 1_000_000, 3, LremVsLtrim::bench);
    }

    static void bench(LabSupport.Settings s) throws Exception {
        if (lengths.isEmpty()) {
            throw new LabSupport.Stop(2, "ch04-lrem: give the lengths and p after the five usual arguments, e.g. "
                    + "jbang ch04-lrem 127.0.0.1 " + LabSupport.DEFAULT_PORT + " 100000 3 1 1000,10000,100000 100.");
        }
        if (lengths.stream().anyMatch(length -> length <= P)) {
            throw new LabSupport.Stop(2, "ch04-lrem: every list must be longer than the " + P
                    + " elements each pipeline removes, not " + lengths + ".");
        }
        String key = LabSupport.key("ch04", "java", "lrem", "list");
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"))
                .withoutSpeedUps(); // modes of different lengths are not one job; compared per length below

        try (Jedis jedis = LabSupport.connect(s)) {
            // Before anything is written: the database must hold nothing but lab keys.
            LabSupport.requireLabOnly(jedis, s);
            jedis.getConnection().setSoTimeout(READ_TIMEOUT_MS);
            try {
                report.header("removing the last " + P + " elements of lists of " + lengths
                        + " elements, one pipeline of " + P + " LREMs vs one of " + P + " LTRIMs");
                report.fact("removed_per_pipeline", P);
                for (int length : lengths) {
                    jedis.unlink(key); // each length starts from a list built afresh
                    String last = item(length - P - 1);
                    LabSupport.Step reset = () -> fill(jedis, key, length);
                    LabSupport.Step verify = () -> checkEnds(jedis, key, length - P, last);

                    Way lrem = timeBothSides(s, report, "lrem", length,
                            reset, () -> lremTail(jedis, key, length), verify);
                    checkWhole(jedis, key, length - P); // LREM's result, element by element
                    Way ltrim = timeBothSides(s, report, "ltrim", length,
                            reset, () -> ltrimTail(jedis, key), verify);
                    checkWhole(jedis, key, length - P); // LTRIM's: the same list
                    // Redis counts whole microseconds per call: a fast LTRIM can add up to 0.
                    String server = ltrim.usecPerCall() > 0
                            ? String.format(Locale.ROOT, "%.0fx", lrem.usecPerCall() / ltrim.usecPerCall())
                            : "LTRIM under 0.01 us";
                    System.out.println(String.format(Locale.ROOT,
                            "%,d elements: LTRIM over LREM %s on the server (%.2f vs %.2f us per call),"
                                    + " %.0fx for the pipeline (medians)",
                            length, server, lrem.usecPerCall(), ltrim.usecPerCall(),
                            lrem.medianSeconds() / ltrim.medianSeconds()));
                }
            } finally {
                // Delete exactly our one key, whatever happened.
                LabSupport.cleanup(s, List.of(key));
            }
        }
        report.finish();
    }

    static String item(long i) {
        return "item:" + i;
    }

    /** One way at one length: the server's microseconds per call and the client's median pipeline time. */
    record Way(double usecPerCall, double medianSeconds) {
    }

    /**
     * Measures one way at one length: client wall time per pipeline as mode "<way>_<L>", and
     * Redis's own time inside the command from INFO commandstats (usec over calls, all
     * iterations) as fact "<way>_usec_per_call_<L>".
     */
    static Way timeBothSides(LabSupport.Settings s, LabSupport.Report report, String way, int length,
                             LabSupport.Step reset, LabSupport.Step task, LabSupport.Step verify) throws Exception {
        Map<String, long[]> before = commandStats(s);
        LabSupport.Samples samples = LabSupport.measure(s, reset, task, verify);
        Map<String, long[]> after = commandStats(s);
        String mode = way + "_" + length;
        report.add(mode, String.format(Locale.ROOT, "%s %,d", way.toUpperCase(Locale.ROOT), length),
                way.toUpperCase(Locale.ROOT) + "s", P, samples);

        long[] was = before.getOrDefault(way, new long[2]);
        long[] now = after.getOrDefault(way, new long[2]);
        long calls = now[0] - was[0];
        long usec = now[1] - was[1];
        long expected = (long) P * samples.iterations();
        if (calls != expected) {
            // Someone else is sending this command to the same Redis: the server time is not ours alone.
            throw LabSupport.failure("the server counted " + calls + " " + way.toUpperCase(Locale.ROOT)
                    + " calls during " + mode + ", expected " + expected);
        }
        double perCall = Math.round(100.0 * usec / calls) / 100.0;
        report.fact(way + "_usec_per_call_" + length, perCall);
        List<Double> sorted = new ArrayList<>(samples);
        sorted.sort(null);
        int n = sorted.size();
        double median = n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
        return new Way(perCall, median);
    }

    /**
     * Tops the list up to item:0 .. item:<length-1> with RPUSHes of PUSH_BATCH values in one
     * pipeline. The list is always such a prefix (empty at first, then what the job left),
     * so this builds it the first time and puts back the P removed elements afterwards.
     */
    static void fill(Jedis jedis, String key, int length) {
        long have = jedis.llen(key);
        try (Pipeline pipeline = jedis.pipelined()) {
            for (long from = have; from < length; from += PUSH_BATCH) {
                long to = Math.min(from + PUSH_BATCH, length);
                String[] values = new String[(int) (to - from)];
                for (long i = from; i < to; i++) {
                    values[(int) (i - from)] = item(i);
                }
                pipeline.rpush(key, values);
            }
            pipeline.sync();
        }
        if (jedis.llen(key) != length) {
            throw LabSupport.failure("the list should hold " + length + " elements after the reset, not "
                    + jedis.llen(key));
        }
    }

    // --8<-- [start:ways]
    /**
     * The LREM way: P commands, each naming one of the last P values. The values are unique,
     * so each removes exactly one element (reply 1), found after walking the whole list: with
     * count 0 LREM scans head to tail for every occurrence and cannot stop at the first.
     * (A negative count walks from the tail and stops after that many matches, so
     * LREM key -1 would find these values at once. Count 0, "remove them all", is the
     * form that makes every call a full scan.)
     */
    static void lremTail(Jedis jedis, String key, int length) {
        List<Response<Long>> replies = new ArrayList<>(P);
        try (Pipeline pipeline = jedis.pipelined()) {
            for (int i = 0; i < P; i++) {
                replies.add(pipeline.lrem(key, 0, item(length - 1 - i)));
            }
            pipeline.sync();
        }
        for (Response<Long> reply : replies) {
            if (reply.get() != 1) {
                throw LabSupport.failure("an LREM removed " + reply.get() + " elements, expected 1");
            }
        }
    }

    /** The LTRIM way: P times "keep elements 0 .. -2", i.e. drop the last one. */
    static void ltrimTail(Jedis jedis, String key) {
        List<Response<String>> replies = new ArrayList<>(P);
        try (Pipeline pipeline = jedis.pipelined()) {
            for (int i = 0; i < P; i++) {
                replies.add(pipeline.ltrim(key, 0, -2));
            }
            pipeline.sync();
        }
        for (Response<String> reply : replies) {
            if (!"OK".equals(reply.get())) {
                throw LabSupport.failure("an LTRIM replied " + reply.get() + ", expected OK");
            }
        }
    }
    // --8<-- [end:ways]

    /** After every iteration, outside the timed region: the list's length and both ends. */
    static void checkEnds(Jedis jedis, String key, int length, String last) {
        long have = jedis.llen(key);
        String first = jedis.lindex(key, 0);
        String end = jedis.lindex(key, -1);
        if (have != length || !item(0).equals(first) || !last.equals(end)) {
            throw LabSupport.failure("after the job the list should be " + item(0) + " .. " + last + " (" + length
                    + " elements) but it is " + first + " .. " + end + " (" + have + " elements)");
        }
    }

    /** Once per way and length: every element read back, in order, is item:0 .. item:<length-1>. */
    static void checkWhole(Jedis jedis, String key, int length) {
        if (jedis.llen(key) != length) {
            throw LabSupport.failure("the list should hold " + length + " elements, not " + jedis.llen(key));
        }
        for (int from = 0; from < length; from += READ_BATCH) {
            List<String> chunk = jedis.lrange(key, from, Math.min(from + READ_BATCH, length) - 1);
            for (int i = 0; i < chunk.size(); i++) {
                if (!item(from + i).equals(chunk.get(i))) {
                    throw LabSupport.failure("element " + (from + i) + " is " + chunk.get(i) + ", expected "
                            + item(from + i));
                }
            }
        }
    }

    /**
     * INFO commandstats as {command: [calls, usec]}, on a connection of its own. usec is the
     * time Redis spent executing the command (not reading, parsing or replying), summed over
     * all calls since start-up or CONFIG RESETSTAT.
     */
    static Map<String, long[]> commandStats(LabSupport.Settings s) {
        Map<String, long[]> stats = new LinkedHashMap<>();
        try (Jedis jedis = LabSupport.jedis(s)) {
            for (String line : jedis.info("commandstats").split("\r?\n")) {
                if (line.startsWith("cmdstat_")) {
                    String name = line.substring("cmdstat_".length(), line.indexOf(':'));
                    stats.put(name, new long[] {field(line, "calls="), field(line, "usec=")});
                }
            }
        }
        return stats;
    }

    /** The number after `name` in "cmdstat_lrem:calls=400,usec=1234,usec_per_call=3.09,...". */
    private static long field(String line, String name) {
        int at = line.indexOf("," + name);
        at = at >= 0 ? at + 1 + name.length() : line.indexOf(":" + name) + 1 + name.length();
        int end = line.indexOf(',', at);
        return Long.parseLong(line.substring(at, end < 0 ? line.length() : end));
    }
}
