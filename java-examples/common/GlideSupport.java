// Valkey GLIDE's side of REDIS_URL (LabConnection): client configurations with its user, password,
// database and TLS, the CA handed over as PEM bytes (GLIDE's Rust core does the TLS, not the JDK;
// it verifies the certificate and the host name by default), and client start-up that says why
// a connection was refused. The cluster's take the LabConnection to use (LabConnection.cluster(),
// which may differ from REDIS_URL's). Pulled in only by examples that declare GLIDE in //DEPS,
//   //SOURCES ../common/GlideSupport.java
//SOURCES LabConnection.java

package pipelab;

import java.util.List;
import java.util.concurrent.ExecutionException;

import glide.api.GlideClient;
import glide.api.GlideClusterClient;
import glide.api.models.configuration.AdvancedGlideClientConfiguration;
import glide.api.models.configuration.AdvancedGlideClusterClientConfiguration;
import glide.api.models.configuration.BaseClientConfiguration;
import glide.api.models.configuration.GlideClientConfiguration;
import glide.api.models.configuration.GlideClusterClientConfiguration;
import glide.api.models.configuration.NodeAddress;
import glide.api.models.configuration.ServerCredentials;
import glide.api.models.configuration.TlsAdvancedConfiguration;

public final class GlideSupport {

    private GlideSupport() {
    }

    /**
     * GlideClientConfiguration.builder() with host:port and REDIS_URL's user, password, database
     * and TLS; the example adds its own settings (request timeout and so on) and builds it.
     */
    public static GlideClientConfiguration.GlideClientConfigurationBuilder<?, ?> config(String host, int port) {
        GlideClientConfiguration.GlideClientConfigurationBuilder<?, ?> config = GlideClientConfiguration.builder();
        byte[] ca = fromUrl(LabConnection.get(), config, host, port);
        if (ca != null) {
            config.advancedConfiguration(AdvancedGlideClientConfiguration.builder()
                    .tlsAdvancedConfiguration(TlsAdvancedConfiguration.builder().rootCertificates(ca).build()).build());
        }
        return config;
    }

    /**
     * The same for a cluster, seeded with one node, with `c`'s settings (LabConnection.cluster()):
     * the nodes GLIDE learns from the cluster get the same credentials and TLS.
     */
    public static GlideClusterClientConfiguration.GlideClusterClientConfigurationBuilder<?, ?> clusterConfig(
            LabConnection c, String host, int port) {
        GlideClusterClientConfiguration.GlideClusterClientConfigurationBuilder<?, ?> config =
                GlideClusterClientConfiguration.builder();
        byte[] ca = fromUrl(c, config, host, port);
        if (ca != null) {
            config.advancedConfiguration(AdvancedGlideClusterClientConfiguration.builder()
                    .tlsAdvancedConfiguration(TlsAdvancedConfiguration.builder().rootCertificates(ca).build()).build());
        }
        return config;
    }

    /**
     * GlideClient.createClient(config).get(). GLIDE's exception says "Connection refused" whatever
     * the server said (its log has the reason), so a failure is probed again with the JDK
     * (LabConnection.probe): the server's own reason (WRONGPASS, NOPERM, a certificate) is what
     * is thrown, when there is one.
     */
    public static GlideClient client(GlideClientConfiguration config) throws Exception {
        try {
            return GlideClient.createClient(config).get();
        } catch (ExecutionException e) {
            // GLIDE reads INFO REPLICATION on connecting, to find the primary.
            throw why(LabConnection.get(), config.getAddresses().get(0), e, List.of(List.of("INFO", "REPLICATION")));
        }
    }

    /**
     * GlideClusterClient.createClient(config).get(), failures explained as in client(), probed with
     * `c`, the settings `config` was built with (clusterConfig).
     */
    public static GlideClusterClient clusterClient(LabConnection c, GlideClusterClientConfiguration config)
            throws Exception {
        try {
            return GlideClusterClient.createClient(config).get();
        } catch (ExecutionException e) {
            // GLIDE reads the slot map on connecting.
            throw why(c, config.getAddresses().get(0), e, List.of(List.of("CLUSTER", "SLOTS")));
        }
    }

    /** The probe's finding as c's refusal sentence (naming its variable and user), else as it is. */
    private static Exception why(LabConnection c, NodeAddress seed, ExecutionException e,
                                 List<List<String>> handshake) {
        Exception server = c.probe(seed.getHost(), seed.getPort(), handshake);
        if (server != null) {
            LabConnection.Refused refused = LabConnection.refusal(server, seed.getHost() + ":" + seed.getPort(), c);
            return refused != null ? refused : server;
        }
        // The JDK got through where GLIDE did not (its Rust TLS is stricter, say): its log has the reason.
        return new java.io.IOException("GLIDE could not connect (" + e.getCause().getMessage() + ") although"
                + " the JDK connects with the same settings; GLIDE's log lines above name the reason");
    }

    /**
     * Address, and c's credentials, database and TLS, on either builder (they change it in place);
     * returns the CA's PEM for the advanced configuration, which each kind of client has its own
     * class for, or null when the URL names no CA file.
     */
    private static byte[] fromUrl(LabConnection c, BaseClientConfiguration.BaseClientConfigurationBuilder<?, ?> config,
                                  String host, int port) {
        config.address(NodeAddress.builder().host(host).port(port).build());
        if (c.authenticates()) {
            ServerCredentials.ServerCredentialsBuilder credentials = ServerCredentials.builder().password(c.password());
            if (c.user() != null) {
                credentials.username(c.user()); // none: AUTH with the password alone
            }
            config.credentials(credentials.build());
        }
        if (c.database() != 0) {
            config.databaseId(c.database()); // a cluster has only database 0, unless it is Valkey 9's
        }
        if (!c.tlsTo(host, port)) {
            return null;
        }
        config.useTLS(true);
        return c.caPem(host + ":" + port);
    }
}
