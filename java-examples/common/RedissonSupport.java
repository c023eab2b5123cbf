// The Redisson configuration of the examples that use Redisson (one server: chapter 1's
// SaddBench, chapter 3's RedissonModes, chapter 4's, chapter 8's RedissonTraps; a cluster:
// chapter 5's), kept once so that all run the same one, Redisson's two ways of sending the SADD
// workload (one by one, an RBatch), the same code on one server and on a cluster, and the plumbing
// of a run that may time out (a client of its own, the exception in one line). Only they pull it in,
//   //SOURCES ../common/RedissonSupport.java
// since it compiles against the Redisson each of them declares in //DEPS; LabSupport and
// SaddWorkload stay Jedis-only. Both configurations carry the user, password, database and TLS of
// the Settings' LabConnection (REDIS_URL's; a cluster seed's, LabConnection.cluster()); a
// cluster's nodes get the same.
//SOURCES LabConnection.java

import java.util.List;
import java.util.Map;

import org.redisson.Redisson;
import org.redisson.api.RBatch;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

import pipelab.LabConnection;

final class RedissonSupport {

    private RedissonSupport() {
    }

    // --8<-- [start:redisson]
    /** N round trips: RSet#add is addAsync plus a wait for its future; true when the member was added. */
    static long saddOneByOne(RedissonClient redisson, List<String> keys, String member) {
        long added = 0;
        for (String key : keys) {
            if (redisson.<String>getSet(key).add(member)) {
                added++;
            }
        }
        return added;
    }

    /** One SADD per key queued on `batch` (in whatever mode it was created), then execute(): its replies. */
    static List<?> saddBatch(RBatch batch, List<String> keys, String member) {
        for (String key : keys) {
            batch.<String>getSet(key).addAsync(member);
        }
        return batch.execute().getResponses();
    }

    /** How many of a batch's replies say "added": RSet#addAsync turns SADD's integer into a Boolean, in every mode. */
    static long added(List<?> replies) {
        long added = 0;
        for (Object reply : replies) {
            if (Boolean.TRUE.equals(reply)) {
                added++;
            }
        }
        return added;
    }
    // --8<-- [end:redisson]

    /**
     * Redisson's defaults, with one exception: its default codec (Kryo) would store a
     * serialized object instead of the plain string "m". StringCodec makes Redisson write
     * the same bytes as Jedis and Lettuce, so all the clients do the same work and one
     * check fits all.
     */
    static Config config(LabSupport.Settings s) {
        Config config = withUrl(new Config(), s);
        config.setCodec(StringCodec.INSTANCE);
        config.useSingleServer().setAddress(address(s)).setDatabase(s.url().database());
        return config;
    }

    /**
     * The same for a Redis Cluster: host and port name one node, from which Redisson reads the
     * topology. `scanIntervalMs` is how often it re-reads the slot map (Redisson's default: 5000).
     * `s` must carry the cluster's settings, LabConnection.cluster() (ClusterSupport.seedAt does).
     */
    static Config clusterConfig(LabSupport.Settings s, int scanIntervalMs) {
        Config config = withUrl(new Config(), s);
        config.setCodec(StringCodec.INSTANCE);
        config.useClusterServers().addNodeAddress(address(s)).setScanInterval(scanIntervalMs);
        return config;
    }

    // ---------------------------------------------------------------- runs that may time out

    /** Work to run on a Redisson client of its own. */
    interface ClientTask<T> {
        T run(RedissonClient client) throws Exception;
    }

    /**
     * Runs `task` on a new client made from `config` and shuts that client down afterwards, also
     * after an exception. A batch that timed out leaves its connection still receiving (or
     * skipping) the late replies; a client of its own keeps that away from the next run.
     */
    static <T> T withFreshClient(Config config, ClientTask<T> task) throws Exception {
        RedissonClient client = Redisson.create(config);
        try {
            return task.run(client);
        } finally {
            client.shutdown();
        }
    }

    /**
     * An exception as one short line, "RedisResponseTimeoutException: Redis server response
     * timeout (25 ms) occurred after 1 of 1 retry attempts": the message is cut where Redisson
     * starts appending node, channel and Netty details (its first comma, or ". channel:").
     */
    static String describe(Throwable e) {
        String message = e.getMessage() == null ? "" : e.getMessage().strip().replaceAll("\\s+", " ");
        int channel = message.indexOf(". channel:"); // Redis's own error text ends here
        if (channel > 0) {
            message = message.substring(0, channel + 1);
        }
        int comma = message.indexOf(',');
        if (comma > 0) {
            message = message.substring(0, comma);
        }
        if (message.length() > 160) {
            message = message.substring(0, 157) + "...";
        }
        return e.getClass().getSimpleName() + (message.isEmpty() ? "" : ": " + message);
    }


    /**
     * s.url()'s user, password and CA on a Config (Redisson 4 keeps them there, for every node);
     * Redisson verifies the certificate and the host name by default (SslVerificationMode.STRICT).
     */
    private static Config withUrl(Config config, LabSupport.Settings s) {
        LabConnection c = s.url();
        if (c.authenticates()) {
            config.setUsername(c.user()); // null: AUTH with the password alone
            config.setPassword(c.password());
        }
        if (c.tlsTo(s.host(), s.port()) && c.caFile() != null) {
            config.setSslTrustManagerFactory(c.trustManagers(s.where()));
        }
        return config;
    }

    /** rediss:// makes Redisson speak TLS, to the seed and to every node it learns of. */
    private static String address(LabSupport.Settings s) {
        String host = s.host().contains(":") ? "[" + s.host() + "]" : s.host(); // IPv6 literal in a URI
        return (s.url().tlsTo(s.host(), s.port()) ? "rediss://" : "redis://") + host + ":" + s.port();
    }
}
