// Chapter 5's cluster plumbing, shared by its two examples next to LabSupport:
//   //SOURCES ClusterSupport.java
// Plain Jedis connections, one per master, that the clients under test never see: they find
// the masters, refuse a cluster holding foreign keys, delete and count the examples' keys
// slot by slot, read every master's INFO around a run, and move a slot between masters the
// way redis-cli --cluster reshard does (the moves themselves are in ClusterSlots.java).
// Compiles against the Jedis of the example's //DEPS.
// Every connection, the masters' MIGRATE to each other included, carries the seed Settings' user
// and password (and TLS): the cluster's own, LabConnection.cluster() (REDIS_CLUSTER_URL, else
// REDIS_URL), which seedAt and chapter 5's LabSupport.run(..., LabConnection::cluster, ...) give.

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.params.MigrateParams;
import redis.clients.jedis.util.JedisClusterCRC16;

import pipelab.LabConnection;

final class ClusterSupport {

    static final int SLOTS = 16384;

    /** Keys per UNLINK/EXISTS: they share one slot, so one command may name them all. */
    private static final int KEY_BATCH = 1000;

    private ClusterSupport() {
    }

    /** A master as clients reach it (host, port) and as the cluster names it (id). */
    record Node(String host, int port, String id) {
        String where() {
            return host + ":" + port;
        }
    }

    /**
     * The cluster behind one seed node: its masters, a plain connection to each, and who
     * serves which slot. Close it to close those connections.
     */
    static final class Cluster implements AutoCloseable {
        final LabSupport.Settings s;
        final List<Node> masters;
        final Map<Node, Jedis> connections = new LinkedHashMap<>();
        /** owner[slot] = index into masters, as CLUSTER SLOTS said when last read. */
        final int[] owner = new int[SLOTS];

        private Cluster(LabSupport.Settings s, List<Node> masters) {
            this.s = s;
            this.masters = masters;
        }

        /**
         * Connects to the seed, checks it is a healthy cluster node, and opens one plain
         * connection per master. Stops with exit code 2 when the seed is not in cluster mode.
         */
        static Cluster open(LabSupport.Settings s) {
            List<Node> masters;
            try (Jedis seed = LabSupport.connect(s)) {
                String info;
                try {
                    info = seed.clusterInfo();
                } catch (JedisDataException e) {
                    throw new LabSupport.Stop(2, "The Redis at " + s.where() + " is not a cluster node (" + e.getMessage()
                            + "); pass host and port of one master of a Redis Cluster, e.g. the lab's on 17000.");
                }
                if (!info.contains("cluster_state:ok")) {
                    throw new LabSupport.Stop(4, "The cluster at " + s.where() + " is not serving (CLUSTER INFO says "
                            + field(info, "cluster_state") + "); wait for it to form or fix it first.");
                }
                masters = mastersFromSlots(clusterSlots(seed), s.host());
            }
            Cluster cluster = new Cluster(s, masters);
            try {
                for (Node node : masters) {
                    cluster.connections.put(node, LabSupport.connect(settingsFor(s, node)));
                }
                cluster.refreshOwners();
            } catch (RuntimeException e) {
                cluster.close();
                throw e;
            }
            return cluster;
        }

        /** Re-reads CLUSTER SLOTS (on the first master) into owner[]. */
        void refreshOwners() {
            java.util.Arrays.fill(owner, -1);
            for (Object entry : clusterSlots(connections.get(masters.get(0)))) {
                List<?> range = (List<?>) entry;
                String id = text(((List<?>) range.get(2)).get(2));
                int index = indexOf(id);
                for (int slot = ((Long) range.get(0)).intValue(); slot <= ((Long) range.get(1)).intValue(); slot++) {
                    owner[slot] = index;
                }
            }
        }

        int indexOf(String id) {
            for (int i = 0; i < masters.size(); i++) {
                if (masters.get(i).id().equals(id)) {
                    return i;
                }
            }
            throw LabSupport.failure("CLUSTER SLOTS names a master " + id + " that was not there at start-up");
        }

        Node ownerOf(int slot) {
            return masters.get(owner[slot]);
        }

        Jedis on(Node node) {
            return connections.get(node);
        }

        /**
         * MIGRATE's parameters: a master that opens a connection to another one for MIGRATE must log
         * in as the cluster's user (AUTH2) or with its password (AUTH), when the cluster's URL has one.
         */
        MigrateParams migrateParams() {
            LabConnection c = s.url();
            MigrateParams params = new MigrateParams();
            if (c.authenticates()) {
                params = c.user() == null ? params.auth(c.password()) : params.auth2(c.user(), c.password());
            }
            return params;
        }

        /** The safety check of LabSupport, on every master: only 'pipelab:' keys anywhere. */
        void requireLabOnly() {
            for (Node node : masters) {
                LabSupport.requireLabOnly(on(node), settingsFor(s, node));
            }
        }

        /**
         * Deletes exactly the given lab keys on whichever master holds them, one UNLINK per
         * slot (a multi-key command across slots is refused with CROSSSLOT); returns how many
         * went. Each UNLINK goes after an ASKING, so keys sitting in a slot that is being
         * imported go too.
         */
        long deleteKeys(List<String> keys) {
            return perSlot(keys, true);
        }

        /** How many of the given keys exist, asked of every master (EXISTS per slot, after ASKING). */
        long countExisting(List<String> keys) {
            return perSlot(keys, false);
        }

        /**
         * UNLINK or EXISTS of the keys, a slot's keys (up to KEY_BATCH) per command, sent to
         * every master in one pipeline each, and the integer replies summed. Every master is
         * asked, not only the owner in owner[]: in the middle of a migration a slot's keys sit
         * on two masters. A master that does not serve a slot answers MOVED, which is skipped.
         * Mid-migration, a multi-key command naming keys the master lacks is answered with ASK
         * (by the source) or TRYAGAIN (by the target); then that master gets the keys one per
         * command, and an ASK for a single key means "not here".
         */
        private long perSlot(List<String> keys, boolean unlink) {
            Map<Integer, List<String>> bySlot = new TreeMap<>();
            for (String key : keys) {
                if (!key.startsWith(LabSupport.KEY_PREFIX)) {
                    throw new IllegalArgumentException("refusing to touch non-lab key '" + key + "'");
                }
                bySlot.computeIfAbsent(JedisClusterCRC16.getSlot(key), k -> new ArrayList<>()).add(key);
            }
            List<List<String>> batches = new ArrayList<>();
            for (List<String> slotKeys : bySlot.values()) {
                for (int from = 0; from < slotKeys.size(); from += KEY_BATCH) {
                    batches.add(slotKeys.subList(from, Math.min(from + KEY_BATCH, slotKeys.size())));
                }
            }
            long total = 0;
            for (Node node : masters) {
                List<List<String>> retry = new ArrayList<>();
                total += send(on(node), batches, unlink, retry);
                if (!retry.isEmpty()) {
                    List<List<String>> single = new ArrayList<>();
                    retry.forEach(batch -> batch.forEach(key -> single.add(List.of(key))));
                    total += send(on(node), single, unlink, null);
                }
            }
            return total;
        }

        private static long send(Jedis jedis, List<List<String>> batches, boolean unlink, List<List<String>> retry) {
            List<Response<Long>> replies = new ArrayList<>(batches.size());
            try (Pipeline pipeline = jedis.pipelined()) {
                for (List<String> batch : batches) {
                    pipeline.sendCommand(Protocol.Command.ASKING, new String[0]);
                    String[] names = batch.toArray(new String[0]);
                    replies.add(unlink ? pipeline.unlink(names) : pipeline.exists(names));
                }
                pipeline.syncAndReturnAll(); // error replies stay in their Responses
            }
            long total = 0;
            for (int i = 0; i < replies.size(); i++) {
                try {
                    total += replies.get(i).get();
                } catch (JedisDataException e) {
                    String error = String.valueOf(e.getMessage());
                    if (retry != null && batches.get(i).size() > 1
                            && (error.startsWith("TRYAGAIN") || error.startsWith("ASK"))) {
                        retry.add(batches.get(i));
                    } // MOVED, or ASK for a single key: not this master's key(s)
                }
            }
            return total;
        }

        /** INFO of every master, in master order; see Stats. */
        List<Stats> stats() {
            List<Stats> all = new ArrayList<>(masters.size());
            for (Node node : masters) {
                all.add(Stats.read(on(node)));
            }
            return all;
        }

        @Override
        public void close() {
            connections.values().forEach(Jedis::close);
        }
    }

    /**
     * A cluster node named on the command line (host:port, or "-" for none: null), reached with the
     * cluster's settings, LabConnection.cluster(): next to a standalone server set up otherwise.
     */
    static LabSupport.Settings seedAt(LabSupport.Settings s, String text) {
        LabSupport.Settings seed = LabSupport.serverAt(s, text, "cluster must be host:port of one cluster node");
        return seed == null ? null : seed.with(LabConnection.cluster());
    }

    /**
     * RedisClusterClient.create(seed), Jedis's defaults (2 s timeouts, 5 attempts), with the seed's
     * user, password and TLS, which the client uses for every node the slot map names too.
     */
    static RedisClusterClient jedisCluster(LabSupport.Settings seed) {
        return RedisClusterClient.builder().nodes(Set.of(new HostAndPort(seed.host(), seed.port())))
                .clientConfig(LabSupport.jedisConfig(seed, DefaultJedisClientConfig.builder())).build();
    }

    /** The Settings of an example (its URL settings too), pointed at one node: LabSupport's sentences name it. */
    static LabSupport.Settings settingsFor(LabSupport.Settings s, Node node) {
        return new LabSupport.Settings(s.example(), node.host(), node.port(), s.size(), s.repeat(), s.warmup(),
                s.url());
    }

    /**
     * Masters as CLUSTER SLOTS names them (it honours cluster-preferred-endpoint-type, as the
     * clients do); an empty or "?" host means "the address you used", i.e. the seed's host.
     */
    private static List<Node> mastersFromSlots(List<Object> slots, String seedHost) {
        Map<String, Node> byId = new LinkedHashMap<>();
        for (Object entry : slots) {
            List<?> master = (List<?>) ((List<?>) entry).get(2);
            String host = text(master.get(0));
            if (host.isEmpty() || host.equals("?")) {
                host = seedHost;
            }
            String id = text(master.get(2));
            byId.putIfAbsent(id, new Node(host, ((Long) master.get(1)).intValue(), id));
        }
        List<Node> masters = new ArrayList<>(byId.values());
        masters.sort((a, b) -> a.where().compareTo(b.where()));
        if (masters.isEmpty()) {
            throw new LabSupport.Stop(4, "The cluster serves no slots yet; form it first.");
        }
        return masters;
    }

    /**
     * CLUSTER SLOTS, raw: [[first, last, [host, port, id, ...], replicas...], ...]. Redis 7
     * deprecates it for CLUSTER SHARDS, which the lab's embedded Redis 6.2 does not have yet;
     * sent as a plain command so Jedis's deprecation of clusterSlots() does not warn on every build.
     */
    @SuppressWarnings("unchecked")
    static List<Object> clusterSlots(Jedis jedis) {
        return (List<Object>) jedis.sendCommand(Protocol.Command.CLUSTER, "SLOTS");
    }

    static String text(Object value) {
        return value instanceof byte[] bytes ? new String(bytes, java.nio.charset.StandardCharsets.UTF_8)
                : String.valueOf(value);
    }

    static String field(String info, String name) {
        for (String line : info.split("\r?\n")) {
            if (line.startsWith(name + ":")) {
                return line.substring(name.length() + 1).strip();
            }
        }
        return "?";
    }

    // ---------------------------------------------------------------- server-side counters

    /**
     * One master's counters from one INFO ALL: the "stats" section's numbers under their own
     * names (total_connections_received, total_reads_processed, ...), connected_clients, and
     * from commandstats and errorstats "calls.sadd", "rejected.set", "error.MOVED" and so on.
     * total_reads_processed counts the read(2) calls Redis made on client sockets: for a
     * client sending one command and waiting, one per command; for a pipeline, one per chunk
     * that arrived (at most 16 KB each), which is as close as the server can see to the
     * number of writes, i.e. round trips, the client made.
     */
    record Stats(Map<String, Long> values) {
        static Stats read(Jedis jedis) {
            Map<String, Long> values = new LinkedHashMap<>();
            for (String line : jedis.info("all").split("\r?\n")) {
                int colon = line.indexOf(':');
                if (colon < 0 || line.startsWith("#")) {
                    continue;
                }
                String name = line.substring(0, colon);
                String value = line.substring(colon + 1);
                if (name.startsWith("cmdstat_")) {
                    String command = name.substring("cmdstat_".length());
                    values.put("calls." + command, number(value, "calls="));
                    values.put("rejected." + command, number(value, "rejected_calls="));
                    values.put("failed." + command, number(value, "failed_calls="));
                } else if (name.startsWith("errorstat_")) {
                    values.put("error." + name.substring("errorstat_".length()), number(value, "count="));
                } else if (value.matches("-?\\d+")) {
                    values.put(name, Long.parseLong(value));
                }
            }
            return new Stats(values);
        }

        long get(String name) {
            return values.getOrDefault(name, 0L);
        }

        /** this - earlier, counter by counter. */
        Stats minus(Stats earlier) {
            Map<String, Long> delta = new LinkedHashMap<>();
            values.forEach((name, value) -> delta.put(name, value - earlier.get(name)));
            return new Stats(delta);
        }

        /** The number after `key` in "calls=3,usec=...", 0 when absent (older servers). */
        private static long number(String value, String key) {
            for (String part : value.split(",")) {
                if (part.startsWith(key)) {
                    return Long.parseLong(part.substring(key.length()));
                }
            }
            return 0;
        }
    }

    /**
     * What reading every master's INFO costs in the counters it reads: measured once, as the
     * difference of two readings with nothing in between, and subtracted from every delta so
     * a delta holds the client's traffic alone (one read and one write per master, as it turns out).
     */
    static List<Stats> readingCost(Cluster cluster) {
        cluster.stats();
        List<Stats> first = cluster.stats();
        List<Stats> second = cluster.stats();
        return between(first, second, null);
    }

    /** after - before per master, less the readings' own cost (when given). */
    static List<Stats> between(List<Stats> before, List<Stats> after, List<Stats> cost) {
        List<Stats> delta = new ArrayList<>(before.size());
        for (int i = 0; i < before.size(); i++) {
            Stats d = after.get(i).minus(before.get(i));
            delta.add(cost == null ? d : d.minus(cost.get(i)));
        }
        return delta;
    }

    /** A counter summed over the masters. */
    static long sum(List<Stats> perNode, String name) {
        long total = 0;
        for (Stats stats : perNode) {
            total += stats.get(name);
        }
        return total;
    }

    /** "127.0.0.1:17000=33320 127.0.0.1:17001=33355 ...": a counter per master, for a fact. */
    static String perNode(Cluster cluster, List<Stats> perNode, String name) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < perNode.size(); i++) {
            sb.append(i == 0 ? "" : " ").append(cluster.masters.get(i).where()).append('=').append(perNode.get(i).get(name));
        }
        return sb.toString();
    }

    // ---------------------------------------------------------------- moving a slot

    /**
     * Refuses to start while any master has a slot half-way between two masters, or while
     * the masters do not agree on the slot map (given 10 s to settle).
     */
    static void requireStable(Cluster cluster) throws InterruptedException {
        for (Node node : cluster.masters) {
            for (String line : cluster.on(node).clusterNodes().split("\n")) {
                if (line.contains("myself") && line.contains("[")) {
                    throw new LabSupport.Stop(1, "Master " + node.where() + " has a slot migration in progress ("
                            + line.substring(line.indexOf('[')).strip() + "); finish it or run CLUSTER SETSLOT <slot> "
                            + "STABLE first.");
                }
            }
        }
        if (!settled(cluster, 10_000)) {
            throw new LabSupport.Stop(1, "The masters of the cluster at " + cluster.s.where() + " do not agree on who "
                    + "serves which slot (compare CLUSTER NODES on each); the lab moves slots only in a settled cluster.");
        }
    }

    /**
     * Waits until every master's CLUSTER NODES shows the same masters with the same config
     * epochs and slots; false if that takes longer than `millis`. Moving a slot twice in a row
     * needs it: SETSLOT NODE on the importing master bumps its config epoch above the highest
     * it knows, and if the previous move's epoch has not reached it yet, the old owner's
     * higher epoch wins the slot back in gossip, and the masters disagree for good.
     */
    static boolean settled(Cluster cluster, long millis) throws InterruptedException {
        long deadline = System.nanoTime() + millis * 1_000_000L;
        while (true) {
            java.util.Set<String> views = new java.util.HashSet<>();
            for (Node node : cluster.masters) {
                views.add(view(cluster.on(node)));
            }
            if (views.size() == 1) {
                return true;
            }
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(20);
        }
    }

    /** One master's CLUSTER NODES as "id epoch slots" of each master, sorted; migration marks left out. */
    private static String view(Jedis jedis) {
        List<String> lines = new ArrayList<>();
        for (String line : jedis.clusterNodes().split("\n")) {
            String[] parts = line.strip().split(" ");
            if (parts.length < 8 || !parts[2].contains("master")) {
                continue;
            }
            StringBuilder sb = new StringBuilder(parts[0]).append(' ').append(parts[6]);
            for (int i = 8; i < parts.length; i++) {
                if (!parts[i].startsWith("[")) {
                    sb.append(' ').append(parts[i]);
                }
            }
            lines.add(sb.toString());
        }
        java.util.Collections.sort(lines);
        return String.join("\n", lines);
    }
}
