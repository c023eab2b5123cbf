///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LabTiming.java
//SOURCES DepthBench.java

// Chapter 2, section 6: what TLS costs a pipeline. ch02-depth's SETs, in batches of each depth,
// over two connections to one server: its TLS port (host and port, with REDIS_URL's rediss:// and
// CA) and its plain port (the seventh argument), timed in turns: plain, TLS, plain, TLS ... Beside
// each mode, the JVM's CPU and the server's (INFO cpu read on a third connection around each run:
// one round trip next to a run of thousands of SETs).
//
//   jbang ch02-tls [host] [port] [size] [repeat] [warmup] depths plain-host:port roundTrips
//
// size is the SETs per run, capped at roundTrips batches so that depth 1 stays short; chapter 2's
// notebook passes depths, size and roundTrips from pipelab/chapters/ch02/parameters.py.

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import pipelab.JedisSupport;

public class TlsDepth {

    static final String EXAMPLE = "ch02-tls";

    public static void main(String[] args) {
        String[] extra = LabSupport.extra(args);
        if (extra.length != 3) {
            LabSupport.run(EXAMPLE, LabSupport.usual(args), 10_000, 5, s -> {
                throw new LabSupport.Stop(2, EXAMPLE + ": give depths, the plain port as host:port and the round"
                        + " trips per run after the five usual arguments, e.g. jbang ch02-tls 127.0.0.1 6380"
                        + " 10000 5 1 1,10,100,1000 127.0.0.1:6379 1000 (REDIS_URL=rediss://...).");
            });
        }
        List<Integer> depths = LabSupport.intList(EXAMPLE, "depths", extra[0]);
        int roundTrips = LabSupport.intList(EXAMPLE, "roundTrips", extra[2]).get(0);
        LabSupport.run(EXAMPLE, LabSupport.usual(args), 10_000, 5, s -> bench(s, depths,
                LabSupport.serverAt(s, extra[1], "the plain port must be host:port of the same server"), roundTrips));
    }

    /** What one mode spent across all its runs: the server's CPU and the commands sent. */
    static final class Spent {
        double serverCpuS;
        long commands;
    }

    static void bench(LabSupport.Settings s, List<Integer> depths, LabSupport.Settings plainAt, int roundTrips)
            throws Exception {
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"));
        Map<String, Double> serverCpu = new LinkedHashMap<>();
        Map<String, Long> commands = new LinkedHashMap<>();
        // The section's server has no password: only its TLS port takes REDIS_URL's settings.
        try (Jedis tls = LabSupport.connect(s);
             Jedis plain = new Jedis(new HostAndPort(plainAt.host(), plainAt.port()), JedisSupport.plain().build());
             Jedis info = new Jedis(new HostAndPort(plainAt.host(), plainAt.port()), JedisSupport.plain().build())) {
            LabSupport.requireLabOnly(tls, s);
            try {
                report.header("SET " + DepthBench.KEY + " " + DepthBench.VALUE + " in batches of " + depths
                        + ", over TLS (" + s.where() + ") and plain (" + plainAt.where() + "), in turns");
                if (s.warmup() > 0) { // the JIT compiles Jedis's encoding and parsing before anything is timed
                    DepthBench.setInBatches(plain, DepthBench.GLOBAL_WARMUP_SETS, DepthBench.GLOBAL_WARMUP_DEPTH);
                    DepthBench.setInBatches(tls, DepthBench.GLOBAL_WARMUP_SETS, DepthBench.GLOBAL_WARMUP_DEPTH);
                }
                LabSupport.Step verify = () -> DepthBench.verify(plain);
                for (int depth : depths) {
                    int count = (int) Math.max(depth, Math.min(s.size(), (long) roundTrips * depth));
                    Map<String, Spent> spent = new LinkedHashMap<>();
                    Map<String, LabSupport.Step> tasks = inTurns(plain, tls, info, depth, count, spent);
                    tasks.keySet().forEach(mode -> report.fields(mode, Map.of("depth", depth,
                            "transport", mode.startsWith("tls") ? "TLS" : "plain", "command", "SET")));
                    Map<String, LabSupport.Samples> got = LabSupport.interleaved(s, null, tasks, verify);
                    List<String> modes = new ArrayList<>(tasks.keySet());
                    for (String mode : modes) {
                        String transport = mode.startsWith("tls") ? "TLS" : "plain";
                        report.add(mode, transport + " depth " + depth, "SETs", count, got.get(mode));
                        serverCpu.put(mode, spent.get(mode).serverCpuS);
                        commands.put(mode, spent.get(mode).commands);
                    }
                    report.paired(modes);
                }
            } finally {
                LabSupport.cleanup(s, List.of(DepthBench.KEY));
            }
        }
        serverCpu.forEach((mode, seconds) -> report.fact("server_cpu_s_" + mode, seconds));
        commands.forEach((mode, count) -> report.fact("commands_" + mode, count));
        report.finish();
    }

    // --8<-- [start:modes]
    /**
     * The same `count` SETs at `depth` over the plain connection and the TLS one, as two tasks that
     * LabSupport.interleaved times in turns; each adds the server's CPU it cost to `spent`.
     */
    static Map<String, LabSupport.Step> inTurns(Jedis plain, Jedis tls, Jedis info, int depth, int count,
                                                 Map<String, Spent> spent) {
        Map<String, LabSupport.Step> tasks = new LinkedHashMap<>();
        for (String transport : List.of("plain", "TLS")) {
            String mode = transport.toLowerCase() + "_depth_" + depth;
            Jedis jedis = transport.equals("TLS") ? tls : plain;
            Spent one = spent.computeIfAbsent(mode, m -> new Spent());
            tasks.put(mode, () -> {
                double before = serverCpuS(info);
                DepthBench.setInBatches(jedis, count, depth);
                one.serverCpuS += serverCpuS(info) - before;
                one.commands += count;
            });
        }
        return tasks;
    }
    // --8<-- [end:modes]

    /** The server's user and system CPU seconds so far (INFO cpu, in microseconds' precision). */
    static double serverCpuS(Jedis info) {
        Map<String, String> fields = new LinkedHashMap<>();
        for (String line : info.info("cpu").split("\r?\n")) {
            int colon = line.indexOf(':');
            if (colon > 0) {
                fields.put(line.substring(0, colon), line.substring(colon + 1).strip());
            }
        }
        return Double.parseDouble(fields.get("used_cpu_sys")) + Double.parseDouble(fields.get("used_cpu_user"));
    }
}
