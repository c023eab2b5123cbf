//SOURCES ExerciseCheck.java

// Exercise 9's check, beside the exercise: the shared plumbing (arguments, the lab's Redis,
// the verdict) is ExerciseCheck's, whose static members this class reaches by name. The rules
// are those of pipelab/course/exercises/ex09.py; this one runs on the lab's Redis and changes no
// setting on it, so it reads the slow log at the server's own threshold (10 ms by default).

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.util.SafeEncoder;

final class Ex09Check extends ExerciseCheck {

    static final Exercise EX09 = new Exercise(9, "Ex09DeletePattern", "deletePattern",
            "chapter 9, 'Deleting or expiring by pattern'");

    /** Keys under the pattern: enough that one command over all of them takes tens of milliseconds. */
    private static final int EX09_DOOMED = 100_000;
    /** Keys beside it, under pipelab:ex09: too, half of them session-archive:*. */
    private static final int EX09_KEPT = 100_000;
    /** No command of the student's may run longer (Redis's own default for "slow"). */
    private static final long EX09_BOUND_US = 10_000;
    /** Deleted keys per round trip, at least: SCAN COUNT 100 gives about 25, one DEL per key 1. */
    private static final int EX09_KEYS_PER_TRIP = 10;
    /** The name of the student's connection, as the slow log records it. */
    private static final String EX09_CLIENT = "pipelab-ex09-yours";
    private static final Set<String> SCRIPTS = Set.of("EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL",
            "FCALL_RO");
    private static final Pattern MORE_ARGS = Pattern.compile("\\.\\.\\. \\((\\d+) more arguments\\)");

    /**
     * One slow log entry, read from the raw reply: Jedis's own Slowlog fails on an entry without a
     * client address (a script's, for one), which a chapter's run may have left in the lab's slow log.
     */
    record Slowlog(long id, long micros, List<String> args, String client) {
        String name() {
            return args.get(0).toUpperCase(Locale.ROOT);
        }

        static List<Slowlog> read(Jedis jedis, long count) {
            List<Slowlog> entries = new ArrayList<>();
            for (Object raw : jedis.slowlogGetBinary(count)) {
                List<?> item = (List<?>) raw;
                List<String> args = new ArrayList<>();
                for (Object arg : (List<?>) item.get(3)) {
                    args.add(SafeEncoder.encode((byte[]) arg));
                }
                String client = item.size() > 5 ? SafeEncoder.encode((byte[]) item.get(5)) : "";
                entries.add(new Slowlog((Long) item.get(0), (Long) item.get(2), args, client));
            }
            return entries;
        }
    }

    interface DeletePattern {
        long deletePattern(Jedis jedis, String pattern);
    }

    static void ex09(String[] args, DeletePattern task) {
        run(EX09, args, EX09_DOOMED, s -> inLab(EX09, s, jedis -> checkDelete(s, jedis, task)));
    }

    private static void seed(Jedis jedis, List<String> keys) {
        try (Pipeline pipeline = jedis.pipelined()) {
            for (int from = 0; from < keys.size(); from += KEY_BATCH) {
                List<String> batch = keys.subList(from, Math.min(from + KEY_BATCH, keys.size()));
                String[] pairs = new String[2 * batch.size()];
                for (int i = 0; i < batch.size(); i++) {
                    pairs[2 * i] = batch.get(i);
                    pairs[2 * i + 1] = batch.get(i); // each key holds its own name
                }
                pipeline.mset(pairs);
            }
            pipeline.sync();
        }
    }

    /** How many arguments a slow log entry's command had, the cut ones included. */
    private static long arguments(Slowlog entry) {
        List<String> args = entry.args();
        Matcher more = MORE_ARGS.matcher(args.get(args.size() - 1));
        return more.matches() ? args.size() - 2 + Long.parseLong(more.group(1)) : args.size() - 1;
    }

    /** One sentence on the student's command that ran past the bound, by what it was. */
    private static String tooLong(Slowlog entry) {
        String name = entry.name();
        String ran = String.format(Locale.ROOT, "ran for %.1f ms, over the %d ms bound", entry.micros()
                / 1000.0, EX09_BOUND_US / 1000);
        if (name.equals("SCAN")) {
            int at = entry.args().stream().map(a -> a.toUpperCase(Locale.ROOT)).toList().indexOf("COUNT");
            String count = at > 0 && at + 1 < entry.args().size() ? " with COUNT " + entry.args().get(at + 1) : "";
            return "one SCAN" + count + " " + ran + ": a COUNT that large walks much of the keyspace in one command;"
                    + " COUNT 1000 keeps each call near a millisecond";
        }
        if (name.equals("UNLINK") || name.equals("DEL")) {
            return String.format(Locale.ROOT, "one %s of %,d keys %s; delete the keys as SCAN returns them, a page"
                    + " (or about a thousand keys) per call, not all at once", name, arguments(entry), ran);
        }
        if (SCRIPTS.contains(name)) {
            return "one " + name + " " + ran + ": a script is one command, and the server serves no other client"
                    + " until it returns; send SCAN and UNLINK from your client, a page at a time";
        }
        return "one " + name + " " + ran + "; keep every command shorter";
    }

    /** Why deletePattern takes too many round trips, from what it sent most. */
    private static String tooManyTrips(long trips, long scans, long deletes) {
        if (scans >= deletes) {
            return String.format(Locale.ROOT, "deletePattern made %,d round trips (the server's reads), with %,d"
                    + " SCANs, for %,d keys; without a COUNT each SCAN walks about 10 buckets of the key table, so"
                    + " pass new ScanParams().match(pattern).count(1000) to walk a thousand per call", trips, scans,
                    EX09_DOOMED);
        }
        return String.format(Locale.ROOT, "deletePattern made %,d round trips (the server's reads), with %,d DEL or"
                + " UNLINK calls, for %,d keys; send each SCAN page's keys in one UNLINK, or queue one UNLINK per"
                + " key on jedis.pipelined() and sync() every thousand keys", trips, deletes, EX09_DOOMED);
    }

    private static String checkDelete(LabSupport.Settings s, Jedis jedis, DeletePattern task) {
        String pattern = EX09.prefix() + "session:*";
        List<String> doomed = new ArrayList<>(EX09_DOOMED);
        List<String> kept = new ArrayList<>(EX09_KEPT);
        for (int i = 0; i < EX09_DOOMED; i++) {
            doomed.add(EX09.prefix() + "session:" + i);
        }
        for (int i = 0; i < EX09_KEPT; i++) { // half would match the pattern without its last ':'
            kept.add(EX09.prefix() + (i % 2 == 1 ? "user:" : "session-archive:") + i);
        }
        long threshold = Long.parseLong(jedis.configGet("slowlog-log-slower-than")
                .getOrDefault("slowlog-log-slower-than", "-1"));
        if (threshold < 0 || threshold > EX09_BOUND_US) {
            throw new LabSupport.Stop(2, String.format(Locale.ROOT, "Exercise 9's check reads the slow log, and %s"
                    + " logs only commands over %,d microseconds (slowlog-log-slower-than), not every command over"
                    + " %d ms; run it on the lab's own Redis (make lab), whose slow log has Redis's default of 10 ms",
                    s.where(), threshold, EX09_BOUND_US / 1000));
        }
        seed(jedis, doomed);
        seed(jedis, kept);
        System.out.println(String.format(Locale.ROOT, "Exercise 9: %,d keys match '%s'; %,d more lie beside it under"
                + " %s (half of them %ssession-archive:*), at %s; its slow log records commands over %.1f ms",
                EX09_DOOMED, pattern, EX09_KEPT, EX09.prefix(), EX09.prefix(), s.where(), threshold / 1000.0));
        Run run = run(s, jedis, task, pattern);
        String touched = touchedBeside(jedis, kept);
        if (touched != null) {
            throw EX09.notSolved(touched + "; MATCH exactly the pattern you were given ('" + pattern + "', the ':'"
                    + " included) and delete only the keys SCAN returns");
        }
        long left = LabSupport.countExisting(jedis, doomed);
        if (left > 0) {
            throw EX09.notSolved(String.format(Locale.ROOT, "%,d of the %,d keys matching '%s' are still there;"
                    + " SCAN until the cursor comes back as \"0\", and delete every key each page returns", left,
                    EX09_DOOMED, pattern));
        }
        Map<String, Long> calls = run.calls();
        long keysCalls = calls.getOrDefault("keys", 0L);
        if (keysCalls > 0) {
            throw EX09.notSolved(String.format(Locale.ROOT, "KEYS ran %d time%s%s: it walks all %,d keys in one"
                    + " command while every other client waits; walk them with SCAN and a COUNT (1000) instead, a"
                    + " page per call", keysCalls, keysCalls > 1 ? "s" : "", run.longestKeys() > 0 ? String.format(
                    Locale.ROOT, ", the longest for %.1f ms", run.longestKeys() / 1000.0) : "", EX09_DOOMED
                    + EX09_KEPT));
        }
        String noise = "";
        if (run.tooLong() != null) {
            // A command that is long by design is long every time; one that a busy machine paused is not.
            seed(jedis, doomed);
            Run again = run(s, jedis, task, pattern);
            if (again.tooLong() != null) {
                Slowlog worse = again.tooLong().micros() > run.tooLong().micros()
                        ? again.tooLong() : run.tooLong();
                throw EX09.notSolved(tooLong(worse));
            }
            noise = String.format(Locale.ROOT, " (in a first run a %s of %.1f ms ran past the bound; a second run had"
                    + " no such command: the machine was busy, not your code)", run.tooLong().name(),
                    run.tooLong().micros() / 1000.0);
            run = again;
            calls = run.calls();
        }
        String paused = run.paused();
        noise += paused;
        Slowlog longest = run.longest();
        long trips = run.trips();
        long returned = run.returned();
        long scans = calls.getOrDefault("scan", 0L);
        long deletes = calls.getOrDefault("unlink", 0L) + calls.getOrDefault("del", 0L);
        if (trips > EX09_DOOMED / EX09_KEYS_PER_TRIP) {
            throw EX09.notSolved(tooManyTrips(trips, scans, deletes));
        }
        if (returned != EX09_DOOMED) {
            throw EX09.notSolved(String.format(Locale.ROOT, "deletePattern returned %,d but deleted %,d keys; return"
                    + " the sum of what UNLINK replied (each reply is how many keys it removed)", returned,
                    EX09_DOOMED));
        }
        String worst = longest == null ? String.format(Locale.ROOT, "no command over %.0f ms", threshold / 1000.0)
                : !paused.isEmpty() ? "no command long by design (bound " + EX09_BOUND_US / 1000 + " ms)"
                : String.format(Locale.ROOT, "the longest command %.1f ms (bound %d ms)",
                longest.micros() / 1000.0, EX09_BOUND_US / 1000);
        System.out.println(String.format(Locale.ROOT, "  deleted %,d keys in %.2f s: %,d round trips (%,d keys"
                + " each), %,d SCANs, %,d UNLINKs, %,d DELs, no KEYS; the slow log: %s; the %,d keys"
                + " beside the pattern untouched%s", EX09_DOOMED, run.nanos() / 1e9, trips,
                EX09_DOOMED / Math.max(trips, 1), scans, calls.getOrDefault("unlink", 0L),
                calls.getOrDefault("del", 0L), worst, EX09_KEPT, noise));
        return String.format(Locale.ROOT, "%,d keys deleted in %,d round trips, %s, %,d others untouched",
                EX09_DOOMED, trips, worst, EX09_KEPT);
    }

    /** One call of the student's method on a freshly seeded keyspace, and what the server saw of it. */
    record Run(long returned, long nanos, long trips, Map<String, Long> calls, List<Slowlog> slow) {
        Slowlog longest() {
            return slow.stream().max(Comparator.comparingLong(Slowlog::micros)).orElse(null);
        }

        List<Slowlog> over() {
            return slow.stream().filter(e -> e.micros() > EX09_BOUND_US).toList();
        }

        Map<String, Long> overByName() {
            return over().stream().collect(Collectors.groupingBy(Slowlog::name, TreeMap::new, Collectors.counting()));
        }

        /**
         * The longest command past the bound whose name ran past it on most of its calls: a command long
         * by design is long on every call, and a busy machine pauses one call in many, not most.
         */
        Slowlog tooLong() {
            Map<String, Long> over = overByName();
            return over().stream().filter(e -> 2 * over.get(e.name()) > calls.getOrDefault(
                    e.name().toLowerCase(Locale.ROOT), 0L)).max(Comparator.comparingLong(Slowlog::micros))
                    .orElse(null);
        }

        /** The commands past the bound that were few among their name's calls, in words; "" when none. */
        String paused() {
            Map<String, Long> over = overByName();
            if (over.isEmpty() || tooLong() != null) {
                return "";
            }
            String ran = over.entrySet().stream().map(e -> String.format(Locale.ROOT, "%,d of %,d %ss", e.getValue(),
                    calls.getOrDefault(e.getKey().toLowerCase(Locale.ROOT), 0L), e.getKey()))
                    .collect(Collectors.joining(", "));
            return " (" + ran + " ran past the bound, and most calls did not: a busy machine paused them, not your"
                    + " code)";
        }

        long longestKeys() {
            return slow.stream().filter(e -> e.args().get(0).equalsIgnoreCase("KEYS"))
                    .mapToLong(Slowlog::micros).max().orElse(0);
        }
    }

    private static Run run(LabSupport.Settings s, Jedis jedis, DeletePattern task, String pattern) {
        List<Slowlog> newest = Slowlog.read(jedis, 1);
        long lastId = newest.isEmpty() ? -1 : newest.get(0).id();
        Map<String, Long> before = LabSupport.commandCalls(s);
        long returned;
        long nanos;
        long trips;
        try (Jedis yours = LabSupport.jedis(s)) {
            yours.clientSetname(EX09_CLIENT);
            long reads = LabSupport.infoNumbers(jedis, "stats").get("total_reads_processed");
            long start = System.nanoTime();
            returned = student(EX09, () -> task.deletePattern(yours, pattern));
            nanos = System.nanoTime() - start;
            // Less the INFO that reads the counter, whose own read it includes.
            trips = LabSupport.infoNumbers(jedis, "stats").get("total_reads_processed") - reads - 1;
        }
        Map<String, Long> calls = LabSupport.callsBetween(before, LabSupport.commandCalls(s));
        List<Slowlog> slow = new ArrayList<>();
        for (Slowlog entry : Slowlog.read(jedis, 1024)) {
            if (entry.id() > lastId && EX09_CLIENT.equals(entry.client())) {
                slow.add(entry);
            }
        }
        return new Run(returned, nanos, trips, calls, slow);
    }

    /** How many keys beside the pattern lost their value or gained an expiry, and the first; null when none. */
    private static String touchedBeside(Jedis jedis, List<String> kept) {
        List<Response<List<String>>> values = new ArrayList<>();
        List<Response<Long>> ttls = new ArrayList<>();
        try (Pipeline pipeline = jedis.pipelined()) {
            for (int from = 0; from < kept.size(); from += KEY_BATCH) {
                values.add(pipeline.mget(kept.subList(from, Math.min(from + KEY_BATCH, kept.size()))
                        .toArray(new String[0])));
            }
            for (String key : kept) {
                ttls.add(pipeline.ttl(key));
            }
            pipeline.sync();
        }
        int touched = 0;
        String first = null;
        int i = 0;
        for (Response<List<String>> batch : values) {
            for (String value : batch.get()) {
                String key = kept.get(i);
                long ttl = ttls.get(i).get();
                if (!key.equals(value) || ttl != -1) {
                    touched++;
                    if (first == null) {
                        first = "'" + key + "' (" + (value == null ? "deleted" : ttl != -1 ? "expiring" : "rewritten")
                                + ")";
                    }
                }
                i++;
            }
        }
        return touched == 0 ? null : String.format(Locale.ROOT, "%,d of the %,d keys beside the pattern were"
                + " touched, %s first", touched, kept.size(), first);
    }
}
