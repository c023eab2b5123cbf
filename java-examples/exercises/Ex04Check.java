//SOURCES ExerciseCheck.java

// Exercise 4's check, beside the exercise: the shared plumbing (arguments, the lab's Redis,
// the verdict) is ExerciseCheck's, whose static members this class reaches by name.

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import redis.clients.jedis.Jedis;

final class Ex04Check extends ExerciseCheck {

    private static final int EX04_ITEMS = 5_000;
    private static final int EX04_KEEP = 100;

    static void ex04(String[] args, PushKeepLatest pushKeepLatest) {
        run(EX04, args, EX04_ITEMS, s -> inLab(EX04, s, jedis -> checkPushKeepLatest(s, jedis, pushKeepLatest)));
    }

    private static String checkPushKeepLatest(LabSupport.Settings s, Jedis jedis, PushKeepLatest pushKeepLatest) {
        String key = LabSupport.key(EX04.alias(), "latest");
        List<String> items = new ArrayList<>(EX04_ITEMS);
        for (int i = 0; i < EX04_ITEMS; i++) {
            items.add("item:" + i);
        }
        System.out.println(String.format(Locale.ROOT, "Exercise 4: pushKeepLatest of %,d items, keeping %d, at %s",
                EX04_ITEMS, EX04_KEEP, s.where()));
        Map<String, Long> callsBefore = LabSupport.commandCalls(s);
        Map<String, Long> usecBefore = commandUsec(s);
        student(EX04, () -> {
            pushKeepLatest.pushKeepLatest(jedis, key, items, EX04_KEEP);
            return null;
        });
        Map<String, Long> calls = LabSupport.callsBetween(callsBefore, LabSupport.commandCalls(s));
        Map<String, Long> usec = LabSupport.callsBetween(usecBefore, commandUsec(s));
        System.out.println("commands the server ran: " + calls);

        long lrems = calls.getOrDefault("lrem", 0L);
        long ltrims = calls.getOrDefault("ltrim", 0L);
        if (lrems > 0) {
            throw EX04.notSolved(String.format(Locale.ROOT, "pushKeepLatest sent %,d LREM calls, and LREM scans the"
                    + " list for its value, O(N) per call; drop the oldest by position instead, LTRIM key 0 keep-1"
                    + " after the LPUSH", lrems));
        }
        if (ltrims == 0) {
            throw EX04.notSolved("pushKeepLatest sent no LTRIM; LPUSH each item, then LTRIM key 0 keep-1 keeps the"
                    + " newest keep elements");
        }
        List<String> expected = new ArrayList<>(items.subList(EX04_ITEMS - EX04_KEEP, EX04_ITEMS));
        Collections.reverse(expected);
        List<String> list = jedis.lrange(key, 0, -1);
        if (!list.equals(expected)) {
            throw EX04.notSolved(String.format(Locale.ROOT, "the list holds %,d elements from %s to %s, but should"
                    + " hold the newest %d, %s first down to %s; LPUSH puts an item at the head, LTRIM key 0 %d"
                    + " keeps the head", list.size(), list.isEmpty() ? "-" : list.get(0),
                    list.isEmpty() ? "-" : list.get(list.size() - 1), EX04_KEEP, expected.get(0),
                    expected.get(EX04_KEEP - 1), EX04_KEEP - 1));
        }
        // Redis sums whole microseconds per call, so a very cheap command can average below 1.
        double perLtrim = (double) usec.getOrDefault("ltrim", 0L) / ltrims;
        System.out.println(String.format(Locale.ROOT, "the list is the newest %d items; 0 LREM, %,d LTRIM at"
                + " %.2f µs each on the server (INFO commandstats)", EX04_KEEP, ltrims, perLtrim));
        return String.format(Locale.ROOT, "no LREM, %,d LTRIM calls at %.2f µs each on the server", ltrims, perLtrim);
    }

    /**
     * INFO commandstats as microseconds per command name (LabSupport.commandCalls counts
     * calls only), in the same shape so LabSupport.callsBetween takes the difference.
     */
    private static Map<String, Long> commandUsec(LabSupport.Settings s) {
        Map<String, Long> usec = new HashMap<>();
        try (Jedis jedis = LabSupport.jedis(s)) {
            for (String line : jedis.info("commandstats").split("\r?\n")) {
                int colon = line.indexOf(':');
                if (!line.startsWith("cmdstat_") || colon < 0) {
                    continue;
                }
                for (String field : line.substring(colon + 1).split(",")) {
                    if (field.startsWith("usec=")) {
                        usec.put(line.substring("cmdstat_".length(), colon), Long.parseLong(field.substring(5)));
                    }
                }
            }
        }
        return usec;
    }
}
