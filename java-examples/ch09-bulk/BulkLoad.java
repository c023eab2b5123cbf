///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java

// Chapter 9: load N keys (SETs of valueBytes-byte values) with Jedis 8.0.2, four ways:
//   pipeline_<B>   one Pipeline, sync() after every B commands (B from the chapter's batches);
//   mset_<B>       MSET of B keys at a time, one round trip each;
//   one_pipeline   every SET in one Pipeline, one sync() at the end.
// The modes run interleaved (LabSupport.interleaved) and each iteration starts from none of the
// keys (UNLINKed outside the timed region); afterwards every key is counted.
// Then, unless a single mode was asked for, a load with `bad` commands the server refuses (an
// LPUSH onto a key that holds a string: WRONGTYPE) spread through it, synced every B commands:
// what sync() does, what the bad commands' Response.get() does, what syncAndReturnAll() puts in
// its list, and how many keys were stored against how many were meant to be.
//
//   jbang ch09-load [host] [port] [size] [repeat] [warmup] batches valueBytes bad [mode watchMs]
//   e.g. jbang ch09-load 127.0.0.1 "$PIPELAB_PORT" 200000 3 1 1000,10000 100 3
//
// mode (one of the names above) runs only that mode, without the bad commands, again and again
// over the same keys for at least watchMs milliseconds: the notebook runs each mode so in a JVM of
// its own while it samples the server's buffers, and the run's other commands (counting and
// deleting the keys) name one key each, 1,000 per sync(), so that they fill no server buffer the
// load would not.

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisDataException;

public class BulkLoad {

    static final String EXAMPLE = "ch09-load";
    /** Read timeout: one pipeline of everything waits for the last of N replies. */
    static final int READ_TIMEOUT_MS = 60_000;

    public static void main(String[] args) {
        String[] extra = LabSupport.extra(args);
        LabSupport.run(EXAMPLE, LabSupport.usual(args), 200_000, 3, s -> run(s, extra));
    }

    static void run(LabSupport.Settings s, String[] extra) throws Exception {
        if (extra.length != 3 && extra.length != 5) {
            throw new LabSupport.Stop(2, EXAMPLE + ": give batches, valueBytes and bad after the five usual"
                    + " arguments (and optionally one mode and watchMs), e.g. 1000,10000 100 3.");
        }
        List<Integer> batches = LabSupport.intList(EXAMPLE, "batches", extra[0]);
        int valueBytes = LabSupport.intList(EXAMPLE, "valueBytes", extra[1]).get(0);
        int bad = LabSupport.intList(EXAMPLE, "bad", extra[2]).get(0);
        String only = extra.length == 5 ? extra[3] : null;
        int watchMs = extra.length == 5 ? LabSupport.intList(EXAMPLE, "watchMs", extra[4]).get(0) : 0;

        List<String> keys = LabSupport.keys(s.size(), "ch09", "load");
        String value = "v".repeat(valueBytes);
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"));

        try (Jedis jedis = LabSupport.connect(s)) {
            LabSupport.requireLabOnly(jedis, s);
            jedis.getConnection().setSoTimeout(READ_TIMEOUT_MS);
            Map<String, LabSupport.Step> modes = new LinkedHashMap<>();
            for (int b : batches) {
                modes.put("pipeline_" + b, () -> pipelined(jedis, keys, value, b));
            }
            for (int b : batches) {
                modes.put("mset_" + b, () -> mset(jedis, keys, value, b));
            }
            modes.put("one_pipeline", () -> pipelined(jedis, keys, value, keys.size()));
            if (only != null) {
                if (!modes.containsKey(only)) {
                    throw new LabSupport.Stop(2, EXAMPLE + ": mode must be one of " + modes.keySet() + ", not '"
                            + only + "'.");
                }
                watched(s, report, jedis, keys, value, only, modes.get(only), watchMs);
                report.finish();
                return;
            }
            report.header(keys.size() + " SETs of " + valueBytes + "-byte values by " + modes.keySet());
            try {
                LabSupport.Step reset = () -> LabSupport.deleteKeys(jedis, keys);
                LabSupport.Step verify = () -> checkLoaded(jedis, keys, value);
                Map<String, LabSupport.Samples> samples = LabSupport.interleaved(s, reset, modes, verify);
                report.paired(modes.keySet());
                samples.forEach((mode, timed) -> {
                    int batch = mode.equals("one_pipeline") ? keys.size() : Integer.parseInt(mode.split("_")[1]);
                    report.fields(mode, Map.of("way", mode.split("_")[0].equals("mset") ? "mset" : "pipeline",
                            "batch", batch));
                    report.add(mode, mode.replace('_', ' '), "keys", timed);
                });
                badCommands(report, jedis, keys, value, batches.get(0), bad);
            } finally {
                LabSupport.cleanup(s, keys);
            }
        }
        report.finish();
    }

    // --8<-- [start:load]
    /** SETs in one Pipeline, synced every `batch` commands (batch = N: one sync at the end). */
    static void pipelined(Jedis jedis, List<String> keys, String value, int batch) {
        try (Pipeline pipeline = jedis.pipelined()) {
            for (int i = 0; i < keys.size(); i++) {
                pipeline.set(keys.get(i), value);
                if ((i + 1) % batch == 0) {
                    pipeline.sync(); // read this batch's replies before sending more
                }
            }
            pipeline.sync();
        }
    }

    /** One MSET per `batch` keys: one command, one reply, one round trip each. */
    static void mset(Jedis jedis, List<String> keys, String value, int batch) {
        for (int from = 0; from < keys.size(); from += batch) {
            int to = Math.min(from + batch, keys.size());
            String[] pairs = new String[2 * (to - from)];
            for (int i = from; i < to; i++) {
                pairs[2 * (i - from)] = keys.get(i);
                pairs[2 * (i - from) + 1] = value;
            }
            jedis.mset(pairs);
        }
    }
    // --8<-- [end:load]

    /**
     * One mode, over and over for at least `watchMs` (each time over the keys it wrote before), while
     * the notebook watches the server: nothing else this run sends may fill a buffer, so the keys are
     * counted and deleted with single-key commands, 1,000 per sync.
     */
    static void watched(LabSupport.Settings s, LabSupport.Report report, Jedis jedis, List<String> keys, String value,
                        String mode, LabSupport.Step load, int watchMs) throws Exception {
        report.header(keys.size() + " SETs of " + value.length() + "-byte values by " + mode + " for at least "
                + watchMs + " ms, watched");
        boolean done = false;
        try {
            if (perKey(jedis, keys, true) != 0) {
                throw LabSupport.failure("the keys to load exist already");
            }
            long start = System.nanoTime();
            int rounds = 0;
            do {
                load.run();
                rounds++;
            } while (System.nanoTime() - start < watchMs * 1_000_000L);
            double seconds = (System.nanoTime() - start) / 1e9 / rounds;
            long stored = perKey(jedis, keys, true);
            if (stored != keys.size()) {
                throw LabSupport.failure("the load left " + stored + " of " + keys.size() + " keys");
            }
            report.add(mode, mode.replace('_', ' '), "keys", List.of(seconds));
            report.fact("keys_stored", stored);
            report.fact("loads", rounds);
            perKey(jedis, keys, false);
            done = true;
        } finally {
            if (!done) {
                LabSupport.cleanup(s, keys);
            }
        }
    }

    /** Keys that exist (EXISTS) or were deleted (UNLINK), one key per command, synced every 1,000. */
    static long perKey(Jedis jedis, List<String> keys, boolean exists) {
        List<Response<Long>> replies = new ArrayList<>(keys.size());
        try (Pipeline pipeline = jedis.pipelined()) {
            for (int i = 0; i < keys.size(); i++) {
                String[] one = {keys.get(i)}; // EXISTS of one key by its variadic form: a count, not a boolean
                replies.add(exists ? pipeline.exists(one) : pipeline.unlink(one));
                if ((i + 1) % 1_000 == 0) {
                    pipeline.sync();
                }
            }
            pipeline.sync();
        }
        return replies.stream().mapToLong(Response::get).sum();
    }

    /** Outside the timed region: every key exists, and the last one holds the value. */
    static void checkLoaded(Jedis jedis, List<String> keys, String value) {
        long stored = LabSupport.countExisting(jedis, keys);
        if (stored != keys.size() || !value.equals(jedis.get(keys.get(keys.size() - 1)))) {
            throw LabSupport.failure("a load left " + stored + " of " + keys.size() + " keys");
        }
    }

    // --8<-- [start:bad]
    /**
     * The same load with `bad` LPUSHes onto string keys spread through it, twice: synced with
     * sync() (the bad commands' Responses kept), and with syncAndReturnAll() (every reply in a list).
     */
    static void badCommands(LabSupport.Report report, Jedis jedis, List<String> keys, String value, int batch,
                            int bad) {
        int every = keys.size() / (bad + 1);
        LabSupport.deleteKeys(jedis, keys);
        List<Response<Long>> refused = new ArrayList<>();
        boolean syncThrew = false;
        try (Pipeline pipeline = jedis.pipelined()) {
            for (int i = 0; i < keys.size(); i++) {
                pipeline.set(keys.get(i), value);
                if (i > 0 && i % every == 0 && refused.size() < bad) {
                    refused.add(pipeline.lpush(keys.get(i), "oops")); // WRONGTYPE: the key holds a string
                }
                if ((i + 1) % batch == 0) {
                    pipeline.sync();
                }
            }
            pipeline.sync();
        } catch (RuntimeException e) {
            syncThrew = true;
        }
        int getThrew = 0;
        String message = "none";
        for (Response<Long> response : refused) {
            try {
                response.get();
            } catch (JedisDataException e) {
                getThrew++;
                message = e.getMessage();
            }
        }
        // --8<-- [end:bad]
        report.fact("value_bytes", value.length());
        report.fact("bad_batch", batch);
        report.fact("bad_commands", refused.size());
        report.fact("bad_sync_threw", syncThrew);
        report.fact("bad_get_threw", getThrew);
        report.fact("bad_get_exception", JedisDataException.class.getSimpleName());
        report.fact("bad_get_message", message.split(" ")[0]);
        report.fact("bad_keys_expected", keys.size());
        report.fact("bad_keys_stored", LabSupport.countExisting(jedis, keys));

        LabSupport.deleteKeys(jedis, keys);
        int inList = 0;
        int replies = 0;
        boolean allThrew = false;
        try (Pipeline pipeline = jedis.pipelined()) {
            int sent = 0;
            for (int i = 0; i < keys.size(); i++) {
                pipeline.set(keys.get(i), value);
                if (i > 0 && i % every == 0 && sent < bad) {
                    pipeline.lpush(keys.get(i), "oops");
                    sent++;
                }
                if ((i + 1) % batch == 0 || i == keys.size() - 1) {
                    List<Object> all = pipeline.syncAndReturnAll();
                    replies += all.size();
                    inList += (int) all.stream().filter(r -> r instanceof JedisDataException).count();
                }
            }
        } catch (RuntimeException e) {
            allThrew = true;
        }
        report.fact("bad_return_all_threw", allThrew);
        report.fact("bad_return_all_replies", replies);
        report.fact("bad_return_all_exceptions", inList);
        report.fact("bad_return_all_keys_stored", LabSupport.countExisting(jedis, keys));
    }
}
