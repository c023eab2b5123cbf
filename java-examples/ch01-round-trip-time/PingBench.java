///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../common/LabSupport.java
//SOURCES ../common/LabTiming.java

// Chapter 1: the round trip is the cost. The same N PINGs, first one at a time (each
// waits for its reply before the next is sent), then all in one pipeline (sent back to
// back, replies read once at the end). The server does identical work in both modes;
// only the number of network round trips changes: N versus about one.
//
//   jbang ch01-ping [host] [port] [size] [repeat] [warmup]     (defaults: 127.0.0.1, the lab's port, 10000 5 1)

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.Response;
import redis.clients.jedis.util.SafeEncoder;

public class PingBench {

    public static void main(String[] args) {
        LabSupport.run("ch01-ping", args, 10_000, 5, PingBench::bench);
    }

    static void bench(LabSupport.Settings s) throws Exception {
        LabSupport.Report report = new LabSupport.Report(s)
                .client("jedis", LabSupport.versionOf(Jedis.class, "redis.clients", "jedis", "8.0.2"));

        try (Jedis jedis = LabSupport.connect(s)) {
            // PING writes nothing, but every lab example insists on a database of its own.
            LabSupport.requireLabOnly(jedis, s);
            report.header(s.size() + " PINGs");

            Map<String, LabSupport.Step> modes = new LinkedHashMap<>();
            modes.put("jedis_one_by_one", () -> pingOneByOne(jedis, s.size()));
            modes.put("jedis_pipelined", () -> pingPipelined(jedis, s.size()));
            Map<String, LabSupport.Samples> samples = LabSupport.interleaved(s, null, modes, null);
            report.add("jedis_one_by_one", "jedis one by one", "PINGs", samples.get("jedis_one_by_one"));
            report.add("jedis_pipelined", "jedis pipelined", "PINGs", samples.get("jedis_pipelined"));
            report.paired(modes.keySet());
        }
        report.finish();
    }

    // --8<-- [start:ping]
    /** N round trips: ping() blocks until its PONG is back. */
    static void pingOneByOne(Jedis jedis, int size) {
        for (int i = 0; i < size; i++) {
            String reply = jedis.ping();
            if (!"PONG".equals(reply)) {
                throw LabSupport.failure("PING #" + i + " one by one answered '" + reply + "'");
            }
        }
    }

    /** One round trip (give or take socket buffers): queue every PING, then sync() reads all replies. */
    static void pingPipelined(Jedis jedis, int size) {
        List<Response<Object>> replies = new ArrayList<>(size);
        try (Pipeline pipeline = jedis.pipelined()) {
            for (int i = 0; i < size; i++) {
                // Jedis 8's Pipeline has no ping(); sendCommand queues any command by name.
                replies.add(pipeline.sendCommand(Protocol.Command.PING, new String[0]));
            }
            pipeline.sync();
        }
        // Reading every reply is part of a client's work, so it stays timed, as in the loop above.
        for (int i = 0; i < size; i++) {
            String reply = SafeEncoder.encode((byte[]) replies.get(i).get()); // a status reply, as bytes
            if (!"PONG".equals(reply)) {
                throw LabSupport.failure("PING #" + i + " in the pipeline answered '" + reply + "'");
            }
        }
    }
    // --8<-- [end:ping]
}
