// Lettuce's side of REDIS_URL (LabConnection): a RedisURI with its user, password, database and
// TLS, and client options that trust its CA, for standalone and cluster clients alike (a cluster
// client hands the seed's credentials and TLS to every node it learns of). The cluster client is
// built from the LabConnection it is given (LabConnection.cluster(), which may differ from
// REDIS_URL's), seed and CA alike. Pulled in only by examples that declare Lettuce in //DEPS,
//   //SOURCES ../common/LettuceSupport.java
// and in package pipelab so that the JMH example (ch03's ConnectionModels) can import it too.
//SOURCES LabConnection.java

package pipelab;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslOptions;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.resource.ClientResources;

public final class LettuceSupport {

    private LettuceSupport() {
    }

    /**
     * RedisURI.builder() for host:port plus REDIS_URL's user, password, database and TLS (peer
     * verified, hostname included: Lettuce's default); the example adds its own timeout and so on.
     */
    public static RedisURI.Builder uri(String host, int port) {
        return uri(LabConnection.get(), host, port);
    }

    /** The same with `c`'s settings. */
    public static RedisURI.Builder uri(LabConnection c, String host, int port) {
        RedisURI.Builder uri = RedisURI.builder().withHost(host).withPort(port);
        if (c.authenticates()) {
            if (c.user() == null) {
                uri.withPassword(c.password().toCharArray());
            } else {
                uri.withAuthentication(c.user(), c.password().toCharArray());
            }
        }
        if (c.database() != 0) {
            uri.withDatabase(c.database());
        }
        if (c.tlsTo(host, port)) {
            uri.withSsl(true);
        }
        return uri;
    }

    /**
     * `own` (the example's options) with SSL options that trust REDIS_URL's CA (ssl_ca_certs); `own`
     * itself when the URL names no CA file (TLS then trusts the JDK's defaults). Set a client's
     * options through this, or its TLS connections would trust the JDK's CAs alone.
     */
    public static ClientOptions options(ClientOptions own) {
        SslOptions ssl = sslOptions(LabConnection.get());
        return ssl == null ? own : own.mutate().sslOptions(ssl).build();
    }

    /** The same for a cluster client's options, trusting `c`'s CA (a cluster's: LabConnection.cluster()). */
    public static ClusterClientOptions clusterOptions(LabConnection c, ClusterClientOptions own) {
        SslOptions ssl = sslOptions(c);
        return ssl == null ? own : own.mutate().sslOptions(ssl).build();
    }

    /** RedisClient.create(uri), trusting REDIS_URL's CA; build `uri` with uri(host, port). */
    public static RedisClient client(RedisURI uri) {
        RedisClient client = RedisClient.create(uri);
        if (sslOptions(LabConnection.get()) != null) { // else the defaults stay as they are, untouched
            client.setOptions(options(client.getOptions()));
        }
        return client;
    }

    /** RedisClient.create(resources, uri), trusting REDIS_URL's CA. */
    public static RedisClient client(ClientResources resources, RedisURI uri) {
        RedisClient client = RedisClient.create(resources, uri);
        if (sslOptions(LabConnection.get()) != null) {
            client.setOptions(options(client.getOptions()));
        }
        return client;
    }

    /**
     * RedisClusterClient.create(seed) for the cluster node host:port, the seed's RedisURI and every
     * node's TLS from `c` (LabConnection.cluster()).
     */
    public static RedisClusterClient clusterClient(LabConnection c, String host, int port) {
        RedisClusterClient client = RedisClusterClient.create(uri(c, host, port).build());
        if (sslOptions(c) != null) {
            client.setOptions(clusterOptions(c, client.getOptions() instanceof ClusterClientOptions own
                    ? own : ClusterClientOptions.create()));
        }
        return client;
    }

    /**
     * The JDK provider with the trust managers `c` built from the PEM, or null without a CA file.
     * A CA file that cannot be used stops the example (exit code 4), naming c's server.
     */
    private static SslOptions sslOptions(LabConnection c) {
        if (!c.tls() || c.caFile() == null) {
            return null;
        }
        return SslOptions.builder().jdkSslProvider()
                .trustManager(c.trustManagers(c.host() + ":" + c.port())).build();
    }
}
