// LabSupport's result lines: LabSupport.Report, the class every example makes, extends this one.
// Apart from LabSupport so that each file stays under 600 lines.

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * Collects the samples of each mode, prints a readable line per mode as it goes, and
 * at the end exactly one machine-readable line for the Python harness:
 * PIPELAB-RESULT {"example":...,"java_version":...,"jvm":{"gc":...,"cpus":...},"clients":{...},"size":...,
 * "repeat":...,"warmup":...,"modes":{"mode":[seconds,...],...} [,"fields":{"mode":{"depth":256,...}}]
 * [,"ops":{"mode":commands per sample,...}] [,"cpu_s":{"mode":[client CPU seconds,...],...}]
 * [,"warmup_s":{"mode":[seconds of each warm-up iteration,...],...}]
 * [,"stopped":{"mode":"time", "rounds", "asked" or "" (settled),...}] (pipelab.measure.STOP_CAUSES)
 * [,"collected":{"mode":recorded samples a garbage collection fell inside,...}]
 * [,"wire":{"mode":{"command":calls over all the mode's iterations,...},...}]
 * [,"facts":{"name":"text" or number or boolean,...}]}
 * "ops" appears only when some mode's samples did not run `size` commands (then it lists
 * every mode); "cpu_s" for the modes measured by measure() on a JVM that reports its CPU
 * time, sample for sample as in "modes".
 */
class LabReport {
    /** Below this much measured wall time per mode the 10 ms CPU clock tick makes a CPU percentage noise. */
    private static final double CPU_NOTE_MIN_WALL_S = 0.5;

    private final LabSupport.Settings s;
    private final Map<String, String> clients = new LinkedHashMap<>();
    private final Map<String, List<Double>> modes = new LinkedHashMap<>();
    private final Map<String, String> labels = new LinkedHashMap<>();
    private final Map<String, Integer> ops = new LinkedHashMap<>();
    private final Map<String, List<Double>> cpu = new LinkedHashMap<>();
    private final Map<String, List<Double>> warmups = new LinkedHashMap<>();
    private final Map<String, String> pairs = new LinkedHashMap<>();
    private final Map<String, String> stops = new LinkedHashMap<>();
    private final Map<String, Integer> collected = new LinkedHashMap<>();
    private final Map<String, Map<String, Long>> wire = new LinkedHashMap<>();
    private final Map<String, Object> facts = new LinkedHashMap<>();
    private final Map<String, Map<String, Object>> fields = new LinkedHashMap<>();
    private boolean speedUps = true;

    LabReport(LabSupport.Settings s) {
        this.s = s;
    }

    LabReport client(String name, String version) {
        clients.put(name, version);
        return this;
    }

    /**
     * Leaves out finish()'s "speed-up of X over Y" lines, for an example whose modes do the
     * same number of commands without being the same work against the first mode (chapter
     * 4's lists of different lengths); it prints its own comparisons. The JSON is unchanged.
     */
    LabReport withoutSpeedUps() {
        speedUps = false;
        return this;
    }

    /** First human line: what is about to be measured, where, with what. */
    void header(String work) {
        StringBuilder sb = new StringBuilder();
        clients.forEach((name, version) -> sb.append(", ").append(name).append(' ').append(version));
        System.out.println(s.example() + ": " + work + " against " + s.where() + ", " + s.repeat()
                + " repetition(s) after " + s.warmup() + " warm-up (Java "
                + System.getProperty("java.version") + sb + ")");
    }

    /** Records what a mode sent over the wire in total (all its iterations), e.g. from callsBetween(). */
    void wire(String mode, Map<String, Long> calls) {
        wire.put(mode, Map.copyOf(calls));
        System.out.println(String.format(Locale.ROOT, "%-20s on the wire: %s", labels.getOrDefault(mode, mode), calls));
    }

    /**
     * Records an observation that is not a timing (what an exception said, how many commands
     * the server applied): a String, a Number or a Boolean, printed and passed on as is.
     */
    void fact(String name, Object value) {
        if (!(value instanceof String || value instanceof Number || value instanceof Boolean)) {
            throw new IllegalArgumentException("a fact is a String, Number or Boolean: " + name);
        }
        facts.put(name, value);
        System.out.println(String.format(Locale.ROOT, "%-20s %s", name + ":", value));
    }

    /**
     * What a mode is, as fields the harness reads (e.g. depth 256, command SET, mode pipelined),
     * so that no reader parses a mode's name.
     */
    LabReport fields(String mode, Map<String, Object> described) {
        fields.put(mode, Map.copyOf(described));
        return this;
    }

    /** Says that these modes were measured in the same rounds (LabSupport.interleaved). */
    LabReport paired(Collection<String> modes) {
        String group = String.join(" / ", modes);
        modes.forEach(mode -> pairs.put(mode, group));
        return this;
    }

    /** Records a mode whose every sample ran `size` commands. */
    void add(String mode, String label, String unit, List<Double> samples) {
        add(mode, label, unit, s.size(), samples);
    }

    /**
     * Records a mode whose samples each ran `count` commands, and prints its human line
     * (the only place a median is computed). Samples from measure() bring their CPU times.
     */
    void add(String mode, String label, String unit, int count, List<Double> samples) {
        modes.put(mode, List.copyOf(samples));
        labels.put(mode, label);
        ops.put(mode, count);
        double median = median(samples);
        String cpuNote = "";
        if (samples instanceof LabSupport.Samples measured && !measured.warmup.isEmpty()) {
            warmups.put(mode, measured.warmup);
        }
        if (samples instanceof LabSupport.Samples measured) {
            stops.put(mode, measured.stopped);
            collected.put(mode, measured.collected);
        }
        if (samples instanceof LabSupport.Samples measured && !measured.cpu.isEmpty()) {
            cpu.put(mode, measured.cpu);
            double wall = sum(measured.wall);
            if (wall >= CPU_NOTE_MIN_WALL_S) {
                cpuNote = String.format(Locale.ROOT, ", client CPU %.0f%% of a core", 100 * sum(measured.cpu) / wall);
            }
        }
        System.out.println(String.format(Locale.ROOT, "%-20s %9d %-6s median %s s  (min %s, max %s)  %,.0f %s/s%s",
                label, count, unit, seconds(median), seconds(Collections.min(samples)),
                seconds(Collections.max(samples)), count / median, unit, cpuNote));
    }

    /** Human comparison of throughputs against the first mode, then the single machine line. */
    void finish() {
        String baseline = modes.isEmpty() ? null : modes.keySet().iterator().next();
        double base = baseline == null ? 0 : throughput(baseline);
        modes.keySet().forEach(mode -> {
            // Only modes that did the baseline's work compare; demonstrations do other work.
            if (speedUps && !mode.equals(baseline) && ops.get(mode).equals(ops.get(baseline))) {
                System.out.println(String.format(Locale.ROOT, "speed-up of %s over %s: %.1fx (medians)",
                        labels.get(mode), labels.get(baseline), throughput(mode) / base));
            }
        });
        System.out.println("PIPELAB-RESULT " + json());
    }

    /** Commands per second at the median; with equal counts the ratio of two is the ratio of medians. */
    private double throughput(String mode) {
        return ops.get(mode) / median(modes.get(mode));
    }

    String json() {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("example", s.example());
        doc.put("java_version", System.getProperty("java.version"));
        doc.put("jvm", jvm());
        doc.put("clients", clients);
        doc.put("size", s.size());
        doc.put("repeat", s.repeat());
        doc.put("warmup", s.warmup());
        doc.put("modes", modes);
        if (!fields.isEmpty()) {
            doc.put("fields", fields);
        }
        if (ops.values().stream().anyMatch(count -> count != s.size())) {
            doc.put("ops", ops);
        }
        if (!cpu.isEmpty()) {
            doc.put("cpu_s", cpu);
        }
        if (!warmups.isEmpty()) {
            doc.put("warmup_s", warmups);
        }
        if (!pairs.isEmpty()) {
            doc.put("paired", pairs);
        }
        if (!stops.isEmpty()) {
            doc.put("stopped", stops);
            doc.put("collected", collected);
        }
        if (!wire.isEmpty()) {
            Map<String, Map<String, Long>> sorted = new LinkedHashMap<>();
            wire.forEach((mode, calls) -> sorted.put(mode, new TreeMap<>(calls))); // commands in name order
            doc.put("wire", sorted);
        }
        if (!facts.isEmpty()) {
            doc.put("facts", facts);
        }
        return LabSupport.toJson(doc);
    }

    /** The collector and CPU count this JVM chose: pinned to one CPU, HotSpot picks Serial and
     *  sizes its pools for one, so two runs are only alike when these are. */
    private static Map<String, Object> jvm() {
        String gc = "unknown";
        for (var bean : ManagementFactory.getGarbageCollectorMXBeans()) {
            String name = bean.getName();
            gc = name.startsWith("G1") ? "G1" : name.startsWith("PS ") ? "Parallel"
                    : name.equals("Copy") || name.equals("MarkSweepCompact") ? "Serial"
                    : name.startsWith("ZGC") ? "Z" : name.startsWith("Shenandoah") ? "Shenandoah" : name;
            break;
        }
        Map<String, Object> jvm = new LinkedHashMap<>();
        jvm.put("gc", gc);
        jvm.put("cpus", Runtime.getRuntime().availableProcessors());
        return jvm;
    }

    private static double sum(List<Double> values) {
        double total = 0;
        for (double v : values) {
            total += v;
        }
        return total;
    }

    private static double median(List<Double> samples) {
        List<Double> sorted = new ArrayList<>(samples);
        Collections.sort(sorted);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    /** Three decimals read well for seconds; tiny runs (pipelines of a few PINGs) need more. */
    private static String seconds(double v) {
        return String.format(Locale.ROOT, v >= 0.01 ? "%.3f" : "%.5f", v);
    }

    /**
     * A client library's version as it is on the classpath right now: the jar manifest's
     * Implementation-Version, else Maven's pom.properties inside the jar, else the version
     * pinned in //DEPS.
     */
    static String versionOf(Class<?> anchor, String groupId, String artifactId, String pinned) {
        Package pkg = anchor.getPackage();
        String version = pkg == null ? null : pkg.getImplementationVersion();
        if (version != null && !version.isBlank()) {
            return version.strip();
        }
        String resource = "/META-INF/maven/" + groupId + "/" + artifactId + "/pom.properties";
        try (InputStream in = anchor.getResourceAsStream(resource)) {
            if (in != null) {
                Properties props = new Properties();
                props.load(in);
                version = props.getProperty("version");
                if (version != null && !version.isBlank()) {
                    return version.strip();
                }
            }
        } catch (IOException ignored) {
            // fall through to the pinned version
        }
        return pinned;
    }
}
