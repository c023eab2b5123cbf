// vivo's SADD workload, which chapters 1, 3 and 5 run through every client: one SADD of the
// member "m" to each of N distinct, empty lab keys (LabSupport.keys). Each example sends
// the SADDs its own way, and that code stays in the example, where the reader sees it. The
// member, the reset and check around every timed iteration, and chapter 3's timing of a mode
// with its wire counts live here, so that all the clients provably do the same work and
// their numbers compare. Pulled in next to LabSupport with
//   //SOURCES ../common/SaddWorkload.java
// It needs Jedis only, like LabSupport.

import java.util.List;
import java.util.Map;

import redis.clients.jedis.Jedis;

final class SaddWorkload {

    /** The one member every SADD adds. */
    static final String MEMBER = "m";

    /**
     * What a timed task reports as `added` when Redis sent no replies to count (Redisson's
     * skipResult()): the check then rests on the keys alone.
     */
    static final long NO_REPLIES = -1;

    private SaddWorkload() {
    }

    /**
     * Outside the timed region: every key must now exist (EXISTS, a thousand keys per call),
     * and no more SADDs than sent may have reported a new member; fewer is reported as a
     * client re-send (unless there were NO_REPLIES). Sends only EXISTS, so in wire counts
     * every other command is the mode's own.
     */
    static void verifyAdded(Jedis jedis, List<String> keys, long added) {
        int n = keys.size();
        if (added != NO_REPLIES && added > n) {
            throw LabSupport.failure(n + " SADDs reported " + added + " new members");
        }
        long existing = LabSupport.countExisting(jedis, keys);
        if (existing != n) {
            throw LabSupport.failure("after " + n + " SADDs only " + existing + " of the keys exist");
        }
        if (added != NO_REPLIES && added < n) {
            // Every key holds its member, yet some SADDs answered "already there": the client sent
            // them twice (Redisson re-sends after a response timeout or a reconnect; chapter 4).
            System.out.println("warning: " + (n - added) + " of " + n + " SADDs reported an existing member:"
                    + " the client re-sent them after a timeout or reconnect; the sets are right");
        }
    }

    /**
     * verifyAdded(), and the first, middle and last set must hold exactly one member
     * (SCARD; only EXISTS and SCARD are sent).
     */
    static void verify(Jedis jedis, List<String> keys, long added) {
        verifyAdded(jedis, keys, added);
        checkSamples(jedis, keys, false);
    }

    /**
     * verify(), and that one member must be MEMBER itself (SISMEMBER): the same bytes from
     * every client, not, say, an object serialized by Redisson's default codec.
     */
    static void verifyMember(Jedis jedis, List<String> keys, long added) {
        verifyAdded(jedis, keys, added);
        checkSamples(jedis, keys, true);
    }

    private static void checkSamples(Jedis jedis, List<String> keys, boolean member) {
        int n = keys.size();
        for (String key : List.of(keys.get(0), keys.get(n / 2), keys.get(n - 1))) {
            long cardinality = jedis.scard(key);
            if (cardinality != 1 || (member && !jedis.sismember(key, MEMBER))) {
                throw LabSupport.failure("set '" + key + "' should hold just '" + MEMBER + "' but has "
                        + cardinality + " member(s) " + jedis.smembers(key));
            }
        }
    }

    /** A mode's timed work: sends the SADDs and returns how many reported a new member, or NO_REPLIES. */
    interface Task {
        long run() throws Exception;
    }

    /**
     * Times an example's modes on its keys, one LabSupport.measure() each, and records every
     * mode with what reached the server meanwhile. Before each iteration the keys are
     * deleted (UNLINK), after it verify() checks them (EXISTS, SCARD) against the count the
     * task returned; both outside the timed region. The command counts (INFO commandstats
     * before and after the mode) cover those resets and checks too, and all iterations,
     * warm-up included.
     */
    static final class Modes {
        private final LabSupport.Report report;
        private final LabSupport.Settings s;
        private final Jedis jedis;
        private final List<String> keys;
        private long added; // what the last timed task returned; checked right after it

        Modes(LabSupport.Report report, LabSupport.Settings s, Jedis jedis, List<String> keys) {
            this.report = report;
            this.s = s;
            this.jedis = jedis;
            this.keys = keys;
        }

        void time(String mode, String label, Task task) throws Exception {
            time(mode, label, task, null);
        }

        /** time(), with a check of the example's own run after verify() (null: none). */
        void time(String mode, String label, Task task, LabSupport.Step check) throws Exception {
            Map<String, Long> before = LabSupport.commandCalls(s);
            LabSupport.Samples samples = LabSupport.measure(s,
                    () -> LabSupport.deleteKeys(jedis, keys),
                    () -> added = task.run(),
                    () -> {
                        verify(jedis, keys, added);
                        if (check != null) {
                            check.run();
                        }
                    });
            Map<String, Long> after = LabSupport.commandCalls(s);
            report.add(mode, label, "SADDs", samples);
            report.wire(mode, LabSupport.callsBetween(before, after));
        }
    }
}
