// The Redisson configuration of the examples that use Redisson (one server: chapter 1's
// SaddBench, chapter 3's RedissonModes, chapter 4's; a cluster: chapter 5's), kept once so that
// all run the same one, and Redisson's two ways of sending the SADD workload (one by one, an
// RBatch), the same code on one server and on a cluster. Only they pull it in,
//   //SOURCES ../common/RedissonSupport.java
// since it compiles against the Redisson each of them declares in //DEPS; LabSupport and
// SaddWorkload stay Jedis-only.

import java.util.List;

import org.redisson.api.RBatch;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

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
        Config config = new Config();
        config.setCodec(StringCodec.INSTANCE);
        config.useSingleServer().setAddress(address(s));
        return config;
    }

    /**
     * The same for a Redis Cluster: host and port name one node, from which Redisson reads the
     * topology. `scanIntervalMs` is how often it re-reads the slot map (Redisson's default: 5000).
     */
    static Config clusterConfig(LabSupport.Settings s, int scanIntervalMs) {
        Config config = new Config();
        config.setCodec(StringCodec.INSTANCE);
        config.useClusterServers().addNodeAddress(address(s)).setScanInterval(scanIntervalMs);
        return config;
    }

    private static String address(LabSupport.Settings s) {
        String host = s.host().contains(":") ? "[" + s.host() + "]" : s.host(); // IPv6 literal in a URI
        return "redis://" + host + ":" + s.port();
    }
}
