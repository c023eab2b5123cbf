//SOURCES ExerciseCheck.java

// Exercise 1's check, beside the exercise: the shared plumbing (arguments, the lab's Redis,
// the verdict) is ExerciseCheck's, whose static members this class reaches by name.

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import redis.clients.jedis.Jedis;

final class Ex01Check extends ExerciseCheck {

    private static final int EX01_KEYS = 10_000;

    static void ex01(String[] args, IncrAll incrAll) {
        run(EX01, args, EX01_KEYS, s -> inLab(EX01, s, jedis -> checkIncrAll(s, jedis, incrAll)));
    }

    private static String checkIncrAll(LabSupport.Settings s, Jedis jedis, IncrAll incrAll) throws Exception {
        List<String> theirs = LabSupport.keys(EX01_KEYS, EX01.alias(), "yours");
        List<String> ours = LabSupport.keys(EX01_KEYS, EX01.alias(), "loop");
        System.out.println("Exercise 1: incrAll on " + String.format(Locale.ROOT, "%,d", EX01_KEYS)
                + " new keys at " + s.where() + ", then 1 warm-up and " + REPEAT + " timed rounds of the two"
                + " in turns");

        // The student's first, once and untimed: a TODO, a wrong reply or a transaction is reported
        // before the slow loop runs.
        LabSupport.deleteKeys(jedis, theirs);
        Map<String, Long> before = LabSupport.commandCalls(s);
        List<Long> first = student(EX01, () -> incrAll.incrAll(jedis, theirs));
        Map<String, Long> sent = LabSupport.callsBetween(before, LabSupport.commandCalls(s));
        checkIncrReplies(jedis, theirs, first);
        if (sent.containsKey("multi") || sent.containsKey("exec")) {
            throw EX01.notSolved("incrAll sent MULTI/EXEC, a transaction; use a plain jedis.pipelined(),"
                    + " not jedis.multi()");
        }
        // Timed in rounds, yours then the loop, so a slow spell of this machine falls on both alike:
        // timed one after the other, a solved exercise once measured 2.7x.
        AtomicReference<List<Long>> replies = new AtomicReference<>();
        Map<String, LabSupport.Step> tasks = new LinkedHashMap<>();
        tasks.put("yours", () -> replies.set(student(EX01, () -> incrAll.incrAll(jedis, theirs))));
        tasks.put("loop", () -> {
            for (String key : ours) {
                jedis.incr(key);
            }
        });
        Map<String, LabSupport.Samples> timed = LabSupport.interleaved(s, () -> {
            LabSupport.deleteKeys(jedis, theirs);
            LabSupport.deleteKeys(jedis, ours);
            replies.set(null);
        }, tasks, () -> {
            if (replies.get() != null) { // the student's run, not the loop's
                checkIncrReplies(jedis, theirs, replies.get());
            }
        });
        List<Double> yours = timed.get("yours");
        List<Double> loop = timed.get("loop");
        double speedUp = median(loop) / median(yours);
        System.out.println("one INCR at a time (checker): " + spread(loop));
        System.out.println("incrAll (yours):              " + spread(yours));
        System.out.println(String.format(Locale.ROOT, "speed-up: %.1fx (at least %.0fx needed)", speedUp,
                REQUIRED_SPEED_UP));
        if (speedUp < REQUIRED_SPEED_UP) {
            throw EX01.notSolved(String.format(Locale.ROOT, "incrAll ran only %.1fx as fast as one INCR at a time"
                    + " (at least %.0fx needed); queue every INCR on one jedis.pipelined() and sync() once, so"
                    + " they share one round trip", speedUp, REQUIRED_SPEED_UP));
        }
        return String.format(Locale.ROOT, "%,d INCRs pipelined in %s s against %s s one by one, %.1fx faster"
                + " (medians)", EX01_KEYS, seconds(median(yours)), seconds(median(loop)), speedUp);
    }

    private static void checkIncrReplies(Jedis jedis, List<String> keys, List<Long> replies) {
        if (replies == null || replies.size() != keys.size()) {
            throw EX01.notSolved(String.format(Locale.ROOT, "incrAll returned %s for %,d keys; return one reply"
                    + " per key, in order", replies == null ? "null"
                    : String.format(Locale.ROOT, "%,d replies", replies.size()), keys.size()));
        }
        for (int i = 0; i < replies.size(); i++) {
            if (!Long.valueOf(1).equals(replies.get(i))) {
                throw EX01.notSolved("reply " + i + " is " + replies.get(i) + ", but INCR of a new key replies 1;"
                        + " return each INCR's reply, in the order of the keys");
            }
        }
        requireValues(EX01, jedis, keys, "1", "after incrAll");
    }
}
