// Jedis's side of REDIS_URL (LabConnection): a client config with its user, password, database
// and TLS added to the example's own settings. Pulled in by LabSupport, so every example that
// uses LabSupport has it; in package pipelab so that the JMH example (ch03's ConnectionModels,
// which cannot reach the default-package LabSupport) builds its Jedis connections the same way.
// Compiles against the Jedis of the example's //DEPS. Each builder also takes the LabConnection to
// use, for a cluster's nodes, whose settings (LabConnection.cluster()) may differ from REDIS_URL's.
//SOURCES LabConnection.java

package pipelab;

import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;

public final class JedisSupport {

    private JedisSupport() {
    }

    /**
     * What new Jedis(host, port) sends on connecting, which is nothing: RESP2 without HELLO (a Jedis
     * cannot negotiate RESP3, and would warn) and no CLIENT SETINFO, so the examples' wire counts
     * stay as they were. Start from this for a plain Jedis; RedisClient and RedisClusterClient
     * start from DefaultJedisClientConfig.builder(), their own defaults.
     */
    public static DefaultJedisClientConfig.Builder plain() {
        return DefaultJedisClientConfig.builder().autoNegotiateProtocol(false)
                .clientSetInfoConfig(ClientSetInfoConfig.DISABLED);
    }

    /**
     * `own` (the example's timeouts, protocol, client name) plus REDIS_URL's user, password,
     * database and TLS, for a connection to host:port (which only names the server when the CA
     * file cannot be read). Without REDIS_URL, `own` as it is.
     */
    public static JedisClientConfig config(String host, int port, DefaultJedisClientConfig.Builder own) {
        return config(LabConnection.get(), host, port, own);
    }

    /** The same with `c`'s settings: a cluster node's (LabConnection.cluster()) may differ from REDIS_URL's. */
    public static JedisClientConfig config(LabConnection c, String host, int port,
                                           DefaultJedisClientConfig.Builder own) {
        if (c.authenticates()) {
            own.user(c.user()).password(c.password()); // a null user: plain AUTH password
        }
        if (c.database() != 0) {
            own.database(c.database());
        }
        if (c.tlsTo(host, port)) {
            own.ssl(true).sslSocketFactory(c.sslContext(host + ":" + port).getSocketFactory())
                    .sslParameters(c.sslParameters());
        }
        return own.build();
    }

    /** new Jedis(host, port) with REDIS_URL's credentials, database and TLS; connects at once. */
    public static Jedis jedis(String host, int port) {
        return jedis(LabConnection.get(), host, port);
    }

    /** The same with `c`'s settings. */
    public static Jedis jedis(LabConnection c, String host, int port) {
        return new Jedis(new HostAndPort(host, port), config(c, host, port, plain()));
    }
}
