//SOURCES ExerciseCheck.java

// Exercise 6's check, beside the exercise: the shared plumbing (arguments, the lab's Redis,
// the verdict) is ExerciseCheck's, whose static members this class reaches by name.

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;

final class Ex06Check extends ExerciseCheck {

    private static final int EX06_KEYS = 300;
    private static final int[] EX06_SIZES = {1_000, 4_000, 16_000, 64_000, 100_000};
    private static final int EX06_BUDGET = 256 * 1024;

    static void ex06(String[] args, GetAll getAll) {
        run(EX06, args, EX06_KEYS, s -> inLab(EX06, s, jedis -> checkGetAll(s, jedis, getAll)));
    }

    /** A Jedis whose pipelines record the keys of the GETs each sync() sends. */
    static final class RecordingJedis extends Jedis {
        final List<List<String>> synced = new ArrayList<>();

        RecordingJedis(LabSupport.Settings s) {
            super(new HostAndPort(s.host(), s.port()), LabSupport.jedisConfig(s));
        }

        @Override
        public Pipeline pipelined() {
            return new RecordingPipeline(this, synced);
        }
    }

    static final class RecordingPipeline extends Pipeline {
        private final List<String> queued = new ArrayList<>();
        private final List<List<String>> synced;

        RecordingPipeline(Jedis jedis, List<List<String>> synced) {
            super(jedis);
            this.synced = synced;
        }

        @Override
        public Response<String> get(String key) {
            queued.add(key);
            return super.get(key);
        }

        @Override
        public Response<byte[]> get(byte[] key) {
            queued.add(new String(key, java.nio.charset.StandardCharsets.UTF_8));
            return super.get(key);
        }

        @Override
        public void sync() {
            record();
            super.sync();
        }

        @Override
        public List<Object> syncAndReturnAll() {
            record();
            return super.syncAndReturnAll();
        }

        private void record() {
            if (!queued.isEmpty()) {
                synced.add(new ArrayList<>(queued));
                queued.clear();
            }
        }
    }

    private static String checkGetAll(LabSupport.Settings s, Jedis jedis, GetAll getAll) {
        List<String> keys = LabSupport.keys(EX06_KEYS, EX06.alias(), "value");
        Map<String, Integer> sizeOf = new HashMap<>();
        List<String> values = new ArrayList<>(EX06_KEYS);
        long total = 0;
        try (Pipeline pipeline = jedis.pipelined()) {
            for (int i = 0; i < EX06_KEYS; i++) {
                int size = EX06_SIZES[i % EX06_SIZES.length];
                String value = (i + ":").repeat(size).substring(0, size);
                sizeOf.put(keys.get(i), size);
                values.add(value);
                pipeline.set(keys.get(i), value);
                total += size;
            }
            pipeline.sync();
        }
        System.out.println(String.format(Locale.ROOT, "Exercise 6: getAll of %,d keys, %.1f MiB of values (%s bytes,"
                + " cycled), budget %d KiB of values per sync(), at %s", EX06_KEYS, total / 1048576.0,
                Arrays.toString(EX06_SIZES), EX06_BUDGET / 1024, s.where()));
        Map<String, Long> before = LabSupport.commandCalls(s);
        List<String> got;
        List<List<String>> synced;
        try (RecordingJedis recording = new RecordingJedis(s)) {
            got = student(EX06, () -> getAll.getAll(recording, keys, EX06_BUDGET));
            synced = recording.synced;
        }
        Map<String, Long> calls = LabSupport.callsBetween(before, LabSupport.commandCalls(s));
        if (got == null || !got.equals(values)) {
            int wrong = 0;
            while (got != null && wrong < Math.min(got.size(), EX06_KEYS) && got.get(wrong).equals(values.get(wrong))) {
                wrong++;
            }
            throw EX06.notSolved(String.format(Locale.ROOT, "getAll returned %s for %,d keys, the first wrong at"
                    + " position %d; return every key's value in the order of the keys", got == null ? "null"
                    : String.format(Locale.ROOT, "%,d values", got.size()), EX06_KEYS, wrong));
        }
        long piped = synced.stream().mapToLong(List::size).sum();
        long gets = calls.getOrDefault("get", 0L);
        if (piped < EX06_KEYS || gets > EX06_KEYS) {
            throw EX06.notSolved(String.format(Locale.ROOT, "the server ran %,d GETs of which %,d came in pipelines,"
                    + " for %,d keys; send each key's GET once, on jedis.pipelined() (an MGET holds all its replies"
                    + " at once, so it does not help here)", gets, piped, EX06_KEYS));
        }
        long biggest = 0;
        for (List<String> batch : synced) {
            biggest = Math.max(biggest, batch.stream().mapToLong(sizeOf::get).sum());
        }
        if (biggest > EX06_BUDGET) {
            throw EX06.notSolved(String.format(Locale.ROOT, "one sync() asked for %,d bytes of values, over the"
                    + " budget of %,d; learn the sizes first (STRLEN, pipelined) and sync before a GET would pass"
                    + " the budget", biggest, EX06_BUDGET));
        }
        int fewest = 0;
        long used = EX06_BUDGET;
        for (String key : keys) { // filling each pipeline up to the budget, in key order
            if (used + sizeOf.get(key) > EX06_BUDGET) {
                fewest++;
                used = 0;
            }
            used += sizeOf.get(key);
        }
        if (synced.size() > 2 * fewest) {
            throw EX06.notSolved(String.format(Locale.ROOT, "getAll synced %,d pipelines of GETs where %,d suffice;"
                    + " fill each pipeline up to the budget before syncing it", synced.size(), fewest));
        }
        System.out.println(String.format(Locale.ROOT, "%d pipelines of GETs (the fewest in key order: %d), the"
                + " largest asking for %d KiB; STRLEN calls: %,d", synced.size(), fewest, biggest / 1024,
                calls.getOrDefault("strlen", 0L)));
        return String.format(Locale.ROOT, "%.1f MiB in %d pipelines, none over %d KiB of replies",
                total / 1048576.0, synced.size(), EX06_BUDGET / 1024);
    }
}
