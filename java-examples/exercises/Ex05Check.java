//SOURCES ExerciseCheck.java

// Exercise 5's check, beside the exercise: the shared plumbing (arguments, the lab's Redis,
// the verdict) is ExerciseCheck's, whose static members this class reaches by name.

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.util.JedisClusterCRC16;

final class Ex05Check extends ExerciseCheck {

    private static final int EX05_USERS = 1_000;
    private static final List<String> EX05_FIELDS = List.of("profile", "cart", "sessions");
    private static final int EX05_WRITTEN_USERS = 50;
    /** The slot ranges of a three-master cluster as redis-cli --cluster create splits 16,384 slots. */
    private static final int[][] EX05_RANGES = {{0, 5460}, {5461, 10922}, {10923, 16383}};
    private static final double EX05_MIN_SHARE = 0.20;
    private static final double EX05_MAX_SHARE = 0.47;

    static void ex05(String[] args, UserKey userKey) {
        run(EX05, args, EX05_USERS, s -> inLab(EX05, s, jedis -> checkUserKey(s, jedis, userKey)));
    }

    private static String checkUserKey(LabSupport.Settings s, Jedis jedis, UserKey userKey) {
        System.out.println(String.format(Locale.ROOT, "Exercise 5: userKey for %,d users x %s, slots by Jedis's"
                + " JedisClusterCRC16, then %d users written at %s", EX05_USERS, EX05_FIELDS, EX05_WRITTEN_USERS,
                s.where()));
        Map<String, List<String>> keysOf = new LinkedHashMap<>();
        Set<String> seen = new HashSet<>();
        int[] userSlot = new int[EX05_USERS];
        for (int u = 0; u < EX05_USERS; u++) {
            String user = "user:" + u;
            List<String> keys = new ArrayList<>();
            for (String field : EX05_FIELDS) {
                String key = student(EX05, () -> userKey.userKey(user, field));
                String call = "userKey(\"" + user + "\", \"" + field + "\") gave '" + key + "'";
                if (key == null || !key.startsWith(EX05.prefix())) {
                    throw EX05.notSolved(call + ", which does not start with " + EX05.prefix()
                            + "; every key of this exercise must");
                }
                if (!key.contains(user) || !key.contains(field)) {
                    throw EX05.notSolved(call + ", which does not contain both the user id and the field");
                }
                if (!seen.add(key)) {
                    throw EX05.notSolved(call + ", a key another user or field already got; keys must be distinct");
                }
                keys.add(key);
            }
            Set<Integer> slots = new TreeSet<>();
            keys.forEach(key -> slots.add(JedisClusterCRC16.getSlot(key)));
            if (slots.size() > 1) {
                throw EX05.notSolved(user + "'s keys " + keys + " fall in slots " + slots + "; put the user id in a"
                        + " hash tag, e.g. " + EX05.prefix() + "{" + user + "}:cart, so only it is hashed");
            }
            userSlot[u] = slots.iterator().next();
            keysOf.put(user, keys);
        }

        if (Arrays.stream(userSlot).distinct().count() == 1) {
            throw EX05.notSolved(String.format(Locale.ROOT, "all %,d users land in slot %d, so one cluster node"
                    + " would serve everyone; the hash tag should hold the user id only, not something all users"
                    + " share", EX05_USERS, userSlot[0]));
        }
        int[] perRange = new int[EX05_RANGES.length];
        for (int slot : userSlot) {
            for (int r = 0; r < EX05_RANGES.length; r++) {
                if (slot >= EX05_RANGES[r][0] && slot <= EX05_RANGES[r][1]) {
                    perRange[r]++;
                }
            }
        }
        StringBuilder shares = new StringBuilder();
        boolean even = true;
        for (int r = 0; r < EX05_RANGES.length; r++) {
            double share = (double) perRange[r] / EX05_USERS;
            even &= share >= EX05_MIN_SHARE && share <= EX05_MAX_SHARE;
            shares.append(r == 0 ? "" : ", ").append(String.format(Locale.ROOT, "slots %d-%d %.1f%%",
                    EX05_RANGES[r][0], EX05_RANGES[r][1], 100 * share));
        }
        System.out.println("users per slot range (one per master of a three-master cluster): " + shares);
        if (!even) {
            throw EX05.notSolved(String.format(Locale.ROOT, "the users crowd into part of the slots (%s; each range"
                    + " needs %.0f-%.0f%%); the hash tag should hold the user id only", shares,
                    100 * EX05_MIN_SHARE, 100 * EX05_MAX_SHARE));
        }

        // A cluster accepts a multi-key command only within one slot: one MSET per user is that case.
        List<Map.Entry<String, List<String>>> written = new ArrayList<>(keysOf.entrySet()).subList(0, EX05_WRITTEN_USERS);
        for (Map.Entry<String, List<String>> user : written) {
            List<String> keys = user.getValue();
            List<String> keysAndValues = new ArrayList<>();
            for (int f = 0; f < keys.size(); f++) {
                keysAndValues.add(keys.get(f));
                keysAndValues.add(EX05_FIELDS.get(f) + " of " + user.getKey());
            }
            jedis.mset(keysAndValues.toArray(new String[0]));
            List<String> back = jedis.mget(keys.toArray(new String[0]));
            for (int f = 0; f < keys.size(); f++) {
                if (!keysAndValues.get(2 * f + 1).equals(back.get(f))) {
                    throw LabSupport.failure("key '" + keys.get(f) + "' read back '" + back.get(f)
                            + "' right after its MSET");
                }
            }
        }
        System.out.println(written.size() + " users written with one MSET each and read back");
        return String.format(Locale.ROOT, "each user's %d keys share a slot; %,d users over the three ranges: %s",
                EX05_FIELDS.size(), EX05_USERS, shares);
    }
}
