// The Redisson configuration of the examples that time Redisson (chapter 1's SaddBench and
// chapter 3's RedissonModes), kept once so that both run the same one. Only they pull it in,
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
        String host = s.host().contains(":") ? "[" + s.host() + "]" : s.host(); // IPv6 literal in a URI
        Config config = new Config();
        config.setCodec(StringCodec.INSTANCE);
        config.useSingleServer().setAddress("redis://" + host + ":" + s.port());
        return config;
    }
}
