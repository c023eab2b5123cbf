// LabSupport's timing: measure() and interleaved() with their warm-up, the harness's repeat rule, and
// the JIT and GC guards around each timed run. Apart from LabSupport so that each file stays under
// 600 lines; the examples call it through LabSupport.measure and LabSupport.interleaved.

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.function.LongSupplier;

final class LabTiming {

    private LabTiming() {
    }


    /**
     * The JVM's CPU time in nanoseconds, all its threads together (ours, JIT compilers, GC),
     * or null where the platform cannot tell. On Linux it ticks in steps of 10 ms, so it is
     * only meaningful over samples of a good fraction of a second.
     */

    private static final LongSupplier PROCESS_CPU_NANOS = processCpuClock();

    private static LongSupplier processCpuClock() {
        try {
            if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
                    && os.getProcessCpuTime() >= 0) { // -1 means "not supported here"
                return os::getProcessCpuTime;
            }
        } catch (LinkageError | RuntimeException e) {
            // a runtime without the jdk.management module: no CPU times, everything else works
        }
        return null;
    }

    // --8<-- [start:measure]
    /**
     * Runs `warmup` unrecorded iterations (JIT, class loading, connection set-up), more while
     * the JIT is still compiling or they still get clearly faster, and then `repeat` recorded ones.
     * `reset` runs before and `verify` after each iteration, both outside the timed region, so
     * every iteration does the same work and only the commands are timed. Returns one sample
     * per recorded iteration, in seconds, with the process CPU time spent in the same region.
     */
    static LabSupport.Samples measure(LabSupport.Settings s, LabSupport.Step reset, LabSupport.Step task,
                                      LabSupport.Step verify) throws Exception {
        Map<String, LabSupport.Step> one = new LinkedHashMap<>();
        one.put("task", task);
        return interleaved(s, reset, one, verify).get("task");
    }

    /**
     * Times several ways of doing the same work in rounds, A B A B ..., so that a slow moment
     * of the machine falls on all of them alike; Report#paired records that their samples pair
     * up by round. Warm-up rounds go on while the JIT compiled for over JIT_SHARE of the last
     * JIT_QUIET_S of them or a round is over 10% faster than the one before, up to
     * RepeatRule#warmupMore rounds beyond `warmup` and RepeatRule#capS seconds; a first recorded
     * round that still fails that test joins them, within the extra rounds' time.
     */
    static Map<String, LabSupport.Samples> interleaved(LabSupport.Settings s, LabSupport.Step reset,
                                                       Map<String, LabSupport.Step> tasks, LabSupport.Step verify)
            throws Exception {
        Map<String, List<double[]>> timed = new LinkedHashMap<>();
        Map<String, List<Double>> warm = new LinkedHashMap<>();
        tasks.keySet().forEach(name -> {
            timed.put(name, new ArrayList<>());
            warm.put(name, new ArrayList<>());
        });
        List<Double> warmRounds = new ArrayList<>();
        int more = RULE == null ? 0 : RULE.warmupMore();
        double warmSpent = 0;
        List<double[]> jitRounds = new ArrayList<>(); // {wall seconds, JIT milliseconds} per warm-up round
        long jit = jitMillis();
        Map<String, Integer> times = new LinkedHashMap<>(); // runs per warm-up round: alike in seconds
        tasks.keySet().forEach(name -> times.put(name, 1));
        while (warmRounds.size() < s.warmup() || (s.warmup() > 0 && warmRounds.size() < s.warmup() + more
                && warmSpent < RULE.capS() && (jitBusy(jit, jitRounds) || falling(warmRounds)))) {
            long start = System.nanoTime();
            double round = 0;
            for (Map.Entry<String, LabSupport.Step> task : tasks.entrySet()) {
                for (int i = 0; i < times.get(task.getKey()); i++) {
                    double[] sample = once(reset, task.getValue(), verify);
                    warm.get(task.getKey()).add(sample[0]);
                    round += sample[0];
                }
            }
            if (warmRounds.isEmpty() && RULE != null) { // quick mode runs exactly what it asked for
                evenOut(times, warm);
            }
            warmRounds.add(round);
            warmSpent += round;
            long now = jitMillis();
            jitRounds.add(new double[] {(System.nanoTime() - start) / 1e9, now - jit});
            jit = now;
        }
        double spent = 0;
        for (int i = 0; i < s.repeat(); i++) {
            spent += timedRound(reset, tasks, verify, timed);
        }
        // More rounds while a median's interval is wider than the harness's target, within the time
        // the first rounds took (bounded both ways) and a multiple of `repeat`: RepeatRule.
        double budget = RULE == null ? 0 : Math.min(Math.max(spent, RULE.floorS()), RULE.capS());
        double perRound = spent / Math.max(1, s.repeat());
        double extra = 0;
        // A recorded round over 10% slower than the next was still warming up (the warm-up's own test,
        // which its time cap cut short): it joins the warm-up, and another round takes its place.
        while (RULE != null && timed.values().iterator().next().size() >= 2 && falling(firstRounds(timed))
                && extra + perRound <= budget) {
            timed.forEach((name, samples) -> warm.get(name).add(samples.remove(0)[0]));
            extra += timedRound(reset, tasks, verify, timed);
        }
        while (RULE != null && timed.values().stream().anyMatch(samples -> !settled(samples, RULE.target()))
                && extra + perRound <= budget
                && timed.values().iterator().next().size() < RULE.maxFactor() * s.repeat()) {
            extra += timedRound(reset, tasks, verify, timed);
        }
        int rounds = timed.values().iterator().next().size();
        String stopped = RULE == null ? "asked"
                : timed.values().stream().allMatch(samples -> settled(samples, RULE.target())) ? ""
                : rounds >= RULE.maxFactor() * s.repeat() ? "rounds" : "time";
        Map<String, LabSupport.Samples> out = new LinkedHashMap<>();
        timed.forEach((name, samples) -> {
            List<Double> wall = new ArrayList<>();
            List<Double> cpu = new ArrayList<>();
            int collected = 0;
            for (double[] sample : samples) {
                wall.add(sample[0]);
                if (PROCESS_CPU_NANOS != null) {
                    cpu.add(sample[1]);
                }
                collected += sample[2] > 0 ? 1 : 0;
            }
            out.put(name, new LabSupport.Samples(wall, cpu, warm.get(name), stopped, collected));
        });
        return out;
    }

    /**
     * When more rounds are taken: the harness's rule (pipelab/measure.py), passed in
     * PIPELAB_REPEAT_RULE as "target,floor seconds,cap seconds,max factor,warm-up rounds
     * beyond the asked-for ones". Run by hand, or in quick mode, without it, an example
     * takes exactly its `warmup` and `repeat` rounds.
     */
    record RepeatRule(double target, double floorS, double capS, int maxFactor, int warmupMore) {
        static RepeatRule fromEnv() {
            String rule = System.getenv("PIPELAB_REPEAT_RULE");
            if (rule == null || rule.isBlank()) {
                return null;
            }
            String[] parts = rule.split(",");
            return new RepeatRule(Double.parseDouble(parts[0]), Double.parseDouble(parts[1]),
                    Double.parseDouble(parts[2]), Integer.parseInt(parts[3]), Integer.parseInt(parts[4]));
        }
    }

    static final RepeatRule RULE = RepeatRule.fromEnv();

    /**
     * The JIT counts as settled once it has compiled next to nothing for this long of warm-up:
     * short samples of a cold JVM (Redisson's RBatch) kept getting faster for many timed rounds
     * after a round-on-round test had stopped the warm-up.
     */
    static final double JIT_QUIET_S = 0.25;

    /** Milliseconds the JIT's compiler threads have spent so far, or -1 where the JVM does not say. */
    private static long jitMillis() {
        var jit = ManagementFactory.getCompilationMXBean();
        return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : -1;
    }

    /** Compiling for at most this share of the warm-up's wall time counts as next to nothing. */
    static final double JIT_SHARE = 0.02;

    /**
     * A short task interleaved with a long one would get a handful of warm-up runs, too few for
     * the JIT: after the first round each task runs often enough to take about the longest's time.
     */
    private static void evenOut(Map<String, Integer> times, Map<String, List<Double>> warm) {
        double longest = warm.values().stream().mapToDouble(w -> w.get(0)).max().orElse(0);
        warm.forEach((name, w) -> times.put(name, (int) Math.max(1, Math.min(50, longest / Math.max(w.get(0), 1e-6)))));
    }

    /**
     * Whether the JIT compiled for over JIT_SHARE of the last JIT_QUIET_S of warm-up (or less
     * warm-up than that has run). Over a window, not per round: the JVM counts compilation in
     * whole milliseconds, one of which is more than 2% of a short round.
     */
    private static boolean jitBusy(long jitNow, List<double[]> rounds) {
        if (jitNow < 0) {
            return false; // the JVM does not say: the round-on-round test alone decides
        }
        double wall = 0;
        double compiling = 0;
        for (int i = rounds.size() - 1; i >= 0 && wall < JIT_QUIET_S; i--) {
            wall += rounds.get(i)[0];
            compiling += rounds.get(i)[1] / 1000;
        }
        return wall < JIT_QUIET_S || compiling > JIT_SHARE * wall;
    }

    /** The first two recorded rounds' wall seconds, every task's together. */
    private static List<Double> firstRounds(Map<String, List<double[]>> timed) {
        double first = 0;
        double second = 0;
        for (List<double[]> samples : timed.values()) {
            first += samples.get(0)[0];
            second += samples.get(1)[0];
        }
        return List.of(first, second);
    }

    /** Whether the last warm-up round was over 10% faster than the one before. */
    private static boolean falling(List<Double> rounds) {
        int n = rounds.size();
        return n < 2 || rounds.get(n - 1) < 0.9 * rounds.get(n - 2);
    }

    private static double timedRound(LabSupport.Step reset, Map<String, LabSupport.Step> tasks,
                                     LabSupport.Step verify, Map<String, List<double[]>> timed) throws Exception {
        double round = 0;
        for (Map.Entry<String, LabSupport.Step> task : tasks.entrySet()) {
            double[] sample = once(reset, task.getValue(), verify);
            timed.get(task.getKey()).add(sample);
            round += sample[0];
        }
        return round;
    }

    /**
     * Whether the median's 95% interval is within ±target: the distribution-free interval between
     * the order statistics n/2 ∓ 0.98·√n (no interval under 6 samples). The harness's bootstrap
     * intervals, computed afterwards from the same samples, are what the book prints.
     */
    static boolean settled(List<double[]> samples, double target) {
        int n = samples.size();
        if (n < 6) {
            return false;
        }
        double[] sorted = samples.stream().mapToDouble(sample -> sample[0]).sorted().toArray();
        int lo = Math.max(0, (int) Math.floor(n / 2.0 - 0.98 * Math.sqrt(n)));
        int hi = Math.min(n - 1, (int) Math.ceil(n / 2.0 + 0.98 * Math.sqrt(n)));
        double median = sorted[n / 2];
        return median > 0 && (sorted[hi] - sorted[lo]) / 2 / median <= target;
    }

    /**
     * One iteration: {wall seconds, CPU seconds, collections} of `task`, with reset before and verify
     * after, untimed.
     */
    private static double[] once(LabSupport.Step reset, LabSupport.Step task, LabSupport.Step verify) throws Exception {
        if (reset != null) {
            reset.run();
        }
        roomFor(task);
        long collections = collections();
        long edenBefore = EDEN == null ? 0 : EDEN.getUsage().getUsed();
        // The CPU readings bracket the wall-clock ones, so their own cost is not timed.
        long cpuStart = PROCESS_CPU_NANOS == null ? 0 : PROCESS_CPU_NANOS.getAsLong();
        long start = System.nanoTime();
        task.run();
        long elapsed = System.nanoTime() - start;
        long cpuSpent = PROCESS_CPU_NANOS == null ? 0 : PROCESS_CPU_NANOS.getAsLong() - cpuStart;
        long collected = collections() - collections;
        if (EDEN != null && collected == 0) {
            ALLOCATES.merge(task, EDEN.getUsage().getUsed() - edenBefore, Math::max);
        }
        if (verify != null) {
            verify.run();
        }
        return new double[] {elapsed / 1e9, cpuSpent / 1e9, collected};
    }

    /**
     * The young generation, where the JVM names it: in Spring's SADD job a young collection fell
     * inside a timed task every few iterations and made that sample an outlier.
     */
    private static final MemoryPoolMXBean EDEN = ManagementFactory.getMemoryPoolMXBeans().stream()
            .filter(pool -> pool.getType() == MemoryType.HEAP && pool.getName().contains("Eden")).findFirst()
            .orElse(null);

    /** The most young-generation bytes one run of each task has taken, seen on runs with no collection. */
    private static final Map<LabSupport.Step, Long> ALLOCATES = new IdentityHashMap<>();

    /**
     * Collects before `task` when what it took on an earlier run, and half again, would not fit in the
     * young generation's free room (and before its first run): the collection it would have started
     * falls outside the timed region, as Python's measure.timed collects first.
     */
    private static void roomFor(LabSupport.Step task) {
        if (EDEN == null) {
            return;
        }
        Long needs = ALLOCATES.get(task);
        MemoryUsage eden = EDEN.getUsage();
        if (needs == null || eden.getCommitted() - eden.getUsed() < needs + needs / 2) {
            System.gc();
        }
    }

    /** Collections of every collector so far. */
    private static long collections() {
        return ManagementFactory.getGarbageCollectorMXBeans().stream()
                .mapToLong(GarbageCollectorMXBean::getCollectionCount).filter(n -> n > 0).sum();
    }
    // --8<-- [end:measure]

    /** `total` calls split over `threads` tasks of `pool` that start together; rethrows a task's failure. */
    static void split(ExecutorService pool, int threads, int total, LabSupport.Step call) throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        List<Future<?>> done = new ArrayList<>(threads);
        for (int t = 0; t < threads; t++) {
            int count = total / threads + (t < total % threads ? 1 : 0);
            done.add(pool.submit(() -> {
                go.await();
                for (int i = 0; i < count; i++) {
                    call.run();
                }
                return null;
            }));
        }
        go.countDown();
        for (Future<?> f : done) {
            LabSupport.await(f);
        }
    }
}
