//SOURCES ExerciseCheck.java

// Exercise 2's check, beside the exercise: the shared plumbing (arguments, the lab's Redis,
// the verdict) is ExerciseCheck's, whose static members this class reaches by name.

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import redis.clients.jedis.Jedis;

final class Ex02Check extends ExerciseCheck {

    private static final int EX02_KEYS = 20_000;
    private static final int[] EX02_DEPTHS = {1, 10, 100, 1000};
    private static final int EX02_COMPARED_DEPTH = 100;

    static void ex02(String[] args, SetInChunks setInChunks) {
        run(EX02, args, EX02_KEYS, s -> inLab(EX02, s, jedis -> checkSetInChunks(s, jedis, setInChunks)));
    }

    private static String checkSetInChunks(LabSupport.Settings s, Jedis jedis, SetInChunks setInChunks)
            throws Exception {
        List<String> keys = LabSupport.keys(EX02_KEYS, EX02.alias(), "key");
        System.out.println(String.format(Locale.ROOT, "Exercise 2: setInChunks on %,d keys at %s, depths %s,"
                + " a checked warm-up round over all depths, then %d timed rounds of the depths in turns",
                EX02_KEYS, s.where(), Arrays.toString(EX02_DEPTHS), REPEAT));
        // Every round runs every depth, so a slow spell of this machine falls on all of them alike, and
        // the warm-up round runs first: timed first and cold (JIT, first use of each code path), depth 1
        // would look slower than it is, to the benefit of every other depth.
        LabSupport.Settings rounds = new LabSupport.Settings(s.example(), s.host(), s.port(), s.size(), REPEAT, 1);
        AtomicInteger ran = new AtomicInteger();
        AtomicInteger synced = new AtomicInteger();
        Map<String, LabSupport.Step> tasks = new LinkedHashMap<>();
        for (int depth : EX02_DEPTHS) {
            tasks.put(String.valueOf(depth), () -> {
                ran.set(depth);
                synced.set(student(EX02, () -> setInChunks.setInChunks(jedis, keys, value(depth), depth)));
            });
        }
        Map<String, LabSupport.Samples> timed = LabSupport.interleaved(rounds,
                () -> LabSupport.deleteKeys(jedis, keys), tasks, () -> checkDepth(jedis, keys, ran.get(), synced.get()));
        Map<Integer, Double> opsPerSecond = new LinkedHashMap<>();
        for (int depth : EX02_DEPTHS) {
            List<Double> runs = timed.get(String.valueOf(depth));
            double ops = EX02_KEYS / median(runs);
            opsPerSecond.put(depth, ops);
            System.out.println(String.format(Locale.ROOT, "depth %4d: %,10.0f SETs/s  %,6d pipelines  %s  %.1fx depth 1",
                    depth, ops, chunks(depth), spread(runs), ops / opsPerSecond.get(1)));
        }
        double gain = opsPerSecond.get(EX02_COMPARED_DEPTH) / opsPerSecond.get(1);
        if (gain < REQUIRED_SPEED_UP) {
            throw EX02.notSolved(String.format(Locale.ROOT, "at depth %d setInChunks moves only %.1fx the SETs per"
                    + " second of depth 1 (at least %.0fx needed); the speed should grow with depth: one"
                    + " pipeline per chunk of up to depth SETs, synced once per chunk", EX02_COMPARED_DEPTH, gain,
                    REQUIRED_SPEED_UP));
        }
        return String.format(Locale.ROOT, "depth %d moves %,.0f SETs/s, %.1fx the %,.0f of depth 1 (medians)",
                EX02_COMPARED_DEPTH, opsPerSecond.get(EX02_COMPARED_DEPTH), gain, opsPerSecond.get(1));
    }

    /** A value per depth, so a run cannot pass on an earlier one's keys. */
    private static String value(int depth) {
        return "depth-" + depth;
    }

    /** After a run at one depth: the count of syncs it returned, and every key's value. */
    private static void checkDepth(Jedis jedis, List<String> keys, int depth, int synced) {
        if (synced != chunks(depth)) {
            throw EX02.notSolved(String.format(Locale.ROOT, "at depth %d setInChunks returned %d but"
                    + " %,d keys in pipelines of at most %d make %,d; sync() after every chunk and return"
                    + " how many times you synced", depth, synced, EX02_KEYS, depth, chunks(depth)));
        }
        requireValues(EX02, jedis, keys, value(depth), "after setInChunks at depth " + depth);
    }

    /** ceil(keys / depth): the pipelines a chunked job of EX02_KEYS SETs syncs. */
    private static int chunks(int depth) {
        return (EX02_KEYS + depth - 1) / depth;
    }
}
