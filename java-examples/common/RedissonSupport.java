// The Redisson configuration of the examples that use Redisson (one server: chapter 1's
// SaddBench, chapter 3's RedissonModes, chapter 4's; a cluster: chapter 5's), kept once so that
// all run the same one. Only they pull it in,
//   //SOURCES ../common/RedissonSupport.java
// since it compiles against the Redisson each of them declares in //DEPS; LabSupport and
// SaddWorkload stay Jedis-only.

import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

final class RedissonSupport {

    private RedissonSupport() {
    }

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
