// Chapter 5's slot moves, as redis-cli --cluster reshard makes them: the three steps ClusterPipelines
// takes while its pipelines run, and putting a slot back after an interrupted run. Apart from
// ClusterSupport (where requireStable and settled stay, which every cluster example calls) so that
// each file stays under 600 lines.

import java.util.ArrayList;
import java.util.List;

import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

final class ClusterSlots {

    /** Keys per MIGRATE while moving a slot. */
    private static final int MIGRATE_BATCH = 100;

    private ClusterSlots() {
    }

    /**
     * The address `node` has inside the cluster, from the CLUSTER NODES of `from`: MIGRATE is
     * run by a master, so it needs that address (a container's, under Docker), not the one
     * this process uses.
     */
    static HostAndPort busAddress(Jedis from, ClusterSupport.Node node) {
        for (String line : from.clusterNodes().split("\n")) {
            String[] parts = line.split(" ");
            if (parts.length > 1 && parts[0].equals(node.id())) {
                String address = parts[1].split("[@,]")[0];
                int colon = address.lastIndexOf(':');
                return new HostAndPort(address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)));
            }
        }
        throw LabSupport.failure("CLUSTER NODES on a master does not list " + node.where());
    }

    /** Step 1 of a slot move: IMPORTING on the target first, so the source never sends ASK to a node that would refuse it. */
    static void beginMigration(ClusterSupport.Cluster cluster, int slot, ClusterSupport.Node source,
                               ClusterSupport.Node target) {
        cluster.on(target).clusterSetSlotImporting(slot, source.id());
        cluster.on(source).clusterSetSlotMigrating(slot, target.id());
    }

    /** Step 2: MIGRATE up to `count` of the slot's keys (all when count < 0), in batches; returns how many moved. */
    static int moveKeys(ClusterSupport.Cluster cluster, int slot, ClusterSupport.Node source, ClusterSupport.Node target,
                        int count) {
        Jedis from = cluster.on(source);
        HostAndPort to = busAddress(from, target);
        int moved = 0;
        while (count < 0 || moved < count) {
            int want = count < 0 ? MIGRATE_BATCH : Math.min(MIGRATE_BATCH, count - moved);
            List<String> keys = from.clusterGetKeysInSlot(slot, want);
            if (keys.isEmpty()) {
                break;
            }
            from.migrate(to.getHost(), to.getPort(), 0, 5000, cluster.migrateParams(), keys.toArray(new String[0]));
            moved += keys.size();
        }
        return moved;
    }

    /**
     * Step 3: the rest of the keys, then SETSLOT NODE on every master (target, source, the
     * others), then wait until all masters agree who serves the slot and know each other's
     * config epochs.
     */
    static void finishMigration(ClusterSupport.Cluster cluster, int slot, ClusterSupport.Node source,
                                ClusterSupport.Node target) throws InterruptedException {
        moveKeys(cluster, slot, source, target, -1);
        // Every master must know every config epoch before the target bumps its own (see ClusterSupport.settled()).
        if (!ClusterSupport.settled(cluster, 10_000)) {
            throw LabSupport.failure("the masters did not agree on the slot map within 10 s before moving slot " + slot);
        }
        List<ClusterSupport.Node> order = new ArrayList<>(List.of(target, source));
        cluster.masters.stream().filter(n -> !order.contains(n)).forEach(order::add);
        for (ClusterSupport.Node node : order) {
            cluster.on(node).clusterSetSlotNode(slot, target.id());
        }
        awaitOwner(cluster, slot, target);
    }

    /** Until every master's CLUSTER SLOTS names `owner` for the slot (10 s at most). */
    static void awaitOwner(ClusterSupport.Cluster cluster, int slot, ClusterSupport.Node owner)
            throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (true) {
            boolean agreed = true;
            for (ClusterSupport.Node node : cluster.masters) {
                agreed &= owner.id().equals(ownerSeenBy(cluster.on(node), slot));
            }
            if (agreed && ClusterSupport.settled(cluster, 10_000)) {
                cluster.refreshOwners();
                return;
            }
            if (System.nanoTime() > deadline) {
                throw LabSupport.failure("the masters did not agree within 10 s that " + owner.where()
                        + " serves slot " + slot);
            }
            Thread.sleep(20);
        }
    }

    private static String ownerSeenBy(Jedis jedis, int slot) {
        for (Object entry : ClusterSupport.clusterSlots(jedis)) {
            List<?> range = (List<?>) entry;
            if (((Long) range.get(0)) <= slot && slot <= ((Long) range.get(1))) {
                return ClusterSupport.text(((List<?>) range.get(2)).get(2));
            }
        }
        return null;
    }

    /**
     * Puts `slot` back on `home` whatever step an interrupted run stopped at, using only the
     * three steps above: a move away from home still in progress is finished first (keys half
     * on each side cannot simply be sent back: a master that does not serve the slot refuses
     * to MIGRATE them, and one that is MIGRATING answers RESTORE with ASK), then the slot is
     * moved from whoever serves it back home, and stray IMPORTING marks are cleared. For a
     * finally block; problems are reported, not thrown.
     */
    static void restoreSlot(ClusterSupport.Cluster cluster, int slot, ClusterSupport.Node home) {
        try {
            String movingTo = migratingTo(cluster.on(home), slot);
            if (movingTo != null) {
                finishMigration(cluster, slot, home, cluster.masters.get(cluster.indexOf(movingTo)));
            }
            String ownerId = ownerSeenBy(cluster.on(home), slot);
            if (ownerId != null && !ownerId.equals(home.id())) {
                ClusterSupport.Node owner = cluster.masters.get(cluster.indexOf(ownerId));
                beginMigration(cluster, slot, owner, home);
                finishMigration(cluster, slot, owner, home);
            }
            for (ClusterSupport.Node node : cluster.masters) {
                if (!node.equals(home)) {
                    cluster.on(node).clusterSetSlotStable(slot); // an IMPORTING left from an interrupted begin
                }
            }
            awaitOwner(cluster, slot, home);
        } catch (Exception e) {
            System.err.println("Warning: could not put slot " + slot + " back on " + home.where() + ": " + e.getMessage()
                    + ". Check CLUSTER NODES on every master; CLUSTER SETSLOT " + slot + " NODE " + home.id()
                    + " on each, once no other master holds keys of the slot.");
        }
    }

    /** The id of the master this node is MIGRATING `slot` to ("[slot->-id]" in its CLUSTER NODES), or null. */
    static String migratingTo(Jedis node, int slot) {
        String mark = "[" + slot + "->-";
        for (String line : node.clusterNodes().split("\n")) {
            int at = line.indexOf(mark);
            if (line.contains("myself") && at >= 0) {
                return line.substring(at + mark.length(), line.indexOf(']', at));
            }
        }
        return null;
    }

    /** MIGRATE the given keys (all of one slot) from `from` to `to`, 100 per command. */
    static void migrate(ClusterSupport.Cluster cluster, ClusterSupport.Node from, ClusterSupport.Node to,
                        List<String> keys) {
        Jedis source = cluster.on(from);
        HostAndPort target = busAddress(source, to);
        for (int i = 0; i < keys.size(); i += 100) {
            List<String> batch = keys.subList(i, Math.min(i + 100, keys.size()));
            source.migrate(target.getHost(), target.getPort(), 0, 5000, cluster.migrateParams(),
                    batch.toArray(new String[0]));
        }
    }
}
