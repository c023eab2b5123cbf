// Spring Data Redis's side of REDIS_URL (LabConnection), on Lettuce: the standalone configuration
// with its user, password and database, and a client configuration with its TLS and CA. Pulled in
// only by examples that declare spring-data-redis and Lettuce in //DEPS,
//   //SOURCES ../common/SpringSupport.java
// and in package pipelab so that the JMH example (ch03's ConnectionModels) can import it too.
//SOURCES LettuceSupport.java

package pipelab;

import io.lettuce.core.ClientOptions;

import org.springframework.data.redis.connection.RedisPassword;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

public final class SpringSupport {

    private SpringSupport() {
    }

    /** new RedisStandaloneConfiguration(host, port) plus REDIS_URL's user, password and database. */
    public static RedisStandaloneConfiguration standalone(String host, int port) {
        LabConnection c = LabConnection.get();
        RedisStandaloneConfiguration server = new RedisStandaloneConfiguration(host, port);
        if (c.authenticates()) {
            server.setUsername(c.user()); // null: AUTH with the password alone
            server.setPassword(RedisPassword.of(c.password()));
        }
        server.setDatabase(c.database());
        return server;
    }

    /**
     * The example's client configuration (`own`: command timeout and so on) plus REDIS_URL's TLS:
     * SSL with peer and hostname verification (Spring's default), and the client options it
     * would use anyway, with SSL options that trust ssl_ca_certs. Without TLS, `own` as it is.
     */
    public static LettuceClientConfiguration client(LettuceClientConfiguration.LettuceClientConfigurationBuilder own,
                                                    String host, int port) {
        LabConnection c = LabConnection.get();
        if (c.tlsTo(host, port)) {
            // Built once to read the options `own` holds (Spring's defaults unless the example set some).
            ClientOptions options = own.build().getClientOptions().orElseGet(ClientOptions::create);
            own.clientOptions(LettuceSupport.options(options)).useSsl();
        }
        return own.build();
    }

    /** A LettuceConnectionFactory for host:port with REDIS_URL's credentials, database and TLS, not yet started. */
    public static LettuceConnectionFactory factory(String host, int port,
                                                   LettuceClientConfiguration.LettuceClientConfigurationBuilder own) {
        return new LettuceConnectionFactory(standalone(host, port), client(own, host, port));
    }

    /** The same with Spring's default client configuration, as new LettuceConnectionFactory(standalone) has it. */
    public static LettuceConnectionFactory factory(String host, int port) {
        return factory(host, port, LettuceClientConfiguration.builder());
    }
}
