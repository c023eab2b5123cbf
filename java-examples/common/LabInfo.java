// What the server reports, for LabSupport: INFO commandstats and sections, CLIENT LIST. Apart from
// LabSupport so that each file stays under 600 lines; the examples call it through LabSupport.

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

import redis.clients.jedis.Jedis;

final class LabInfo {

    private LabInfo() {
    }

    /**
     * What reached the server, as INFO commandstats counts it: calls per command name
     * ("sadd", "multi", "exec", "client|reply" ...). Read on a connection of its own, so a
     * mode's delta is taken around it; the INFO itself adds one "info" call per reading.
     */
    static Map<String, Long> commandCalls(LabSupport.Settings s) {
        Map<String, Long> calls = new LinkedHashMap<>();
        try (Jedis jedis = LabSupport.jedis(s)) {
            for (String line : jedis.info("commandstats").split("\r?\n")) {
                if (line.startsWith("cmdstat_")) {
                    String name = line.substring("cmdstat_".length(), line.indexOf(':'));
                    int at = line.indexOf("calls=") + "calls=".length();
                    int end = line.indexOf(',', at);
                    calls.put(name, Long.parseLong(line.substring(at, end < 0 ? line.length() : end)));
                }
            }
        }
        return calls;
    }

    /**
     * after - before, per command, leaving out unchanged commands, the readings' own INFO, and the
     * AUTH and SELECT that only REDIS_URL's password and database add to every connection's
     * handshake (the readings' own among them), so that the counts compare with a plain run's.
     */
    static Map<String, Long> callsBetween(Map<String, Long> before, Map<String, Long> after) {
        Map<String, Long> delta = new LinkedHashMap<>();
        after.forEach((name, count) -> {
            long d = count - before.getOrDefault(name, 0L);
            if (d > 0 && !name.equals("info") && !name.equals("auth") && !name.equals("select")) {
                delta.put(name, d);
            }
        });
        return delta;
    }

    /**
     * How many times Redis ran `command` (INFO commandstats, e.g. "incr") since `before`, read
     * every 200 ms until two readings agree: a client's timeout cancels nothing, so after one
     * Redis may still be working through what it was sent. Gives up after `limit`.
     */
    static long settledCalls(LabSupport.Settings s, Map<String, Long> before, String command, Duration limit)
            throws InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        long last = -1;
        while (true) {
            long now = callsBetween(before, commandCalls(s)).getOrDefault(command, 0L);
            if (now == last) {
                return now;
            }
            if (System.nanoTime() > deadline) {
                throw LabSupport.failure("Redis was still executing " + command.toUpperCase(Locale.ROOT) + " "
                        + limit.toSeconds() + " s after the run");
            }
            last = now;
            Thread.sleep(200);
        }
    }

    /** The numeric fields of one INFO section ("total_reads_processed" -> 1234); text fields are left out. */
    static Map<String, Long> infoNumbers(Jedis jedis, String section) {
        Map<String, Long> fields = new LinkedHashMap<>();
        for (String line : jedis.info(section).split("\r?\n")) {
            int colon = line.indexOf(':');
            if (colon > 0 && !line.startsWith("#") && line.substring(colon + 1).strip().matches("-?\\d+")) {
                fields.put(line.substring(0, colon), Long.parseLong(line.substring(colon + 1).strip()));
            }
        }
        return fields;
    }

    /** How many of the server's connections carry `name` (CLIENT SETNAME; "" counts the unnamed ones). */
    static int connectionsNamed(Jedis jedis, String name) {
        int count = 0;
        for (String line : jedis.clientList().split("\r?\n")) {
            if (line.contains(" name=" + name + " ")) {
                count++;
            }
        }
        return count;
    }
}
