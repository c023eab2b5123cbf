///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../exercises/Ex08Check.java

// Solution of exercise 8, "Charge once" (the task: java-examples/exercises/Ex08ChargeOnce.java).
//
//   jbang ex08-solution [host] [port]     (defaults: 127.0.0.1 and the lab's port)

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.SetArgs;
import io.lettuce.core.TransactionResult;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;

import pipelab.LettuceSupport;

public class Ex08ChargeOnce {

    private static final int ATTEMPTS = 5;

    public static void main(String[] args) {
        Ex08Check.ex08(args, Ex08ChargeOnce::charge);
    }

    static void charge(String host, int port, String account, String chargeId, List<Long> amounts) throws Exception {
        String marker = "pipelab:ex08:charged:" + chargeId;
        // A bound we choose: 1 s without a reply fails the command (Lettuce's default waits 60 s).
        // LettuceSupport: host and port with REDIS_URL's user, password, database and TLS.
        RedisClient client = LettuceSupport.client(LettuceSupport.uri(host, port)
                .withTimeout(Duration.ofSeconds(1)).build());
        // At-most-once: a command in flight when its connection drops fails instead of being written
        // again after a reconnect, so only this method decides what is sent twice. The client's own
        // options otherwise (REDIS_URL's CA among them).
        client.setOptions(client.getOptions().mutate().autoReconnect(false).build());
        try {
            for (int attempt = 1; ; attempt++) {
                // A new connection per attempt: the last one may still be silent.
                try (StatefulRedisConnection<String, String> connection = client.connect()) {
                    if (connection.sync().exists(marker) > 0) {
                        return; // charged before: by an attempt whose reply was lost, or by an earlier call
                    }
                    connection.setAutoFlushCommands(false);
                    RedisAsyncCommands<String, String> async = connection.async();
                    async.multi();
                    for (long amount : amounts) {
                        async.incrby(account, amount);
                    }
                    async.set(marker, "1", SetArgs.Builder.ex(Duration.ofDays(1))); // both run, or neither
                    RedisFuture<TransactionResult> exec = async.exec();
                    connection.flushCommands();
                    exec.get(); // fails with RedisCommandTimeoutException after 1 s of silence
                    return;
                } catch (ExecutionException | RedisException e) {
                    if (attempt == ATTEMPTS) {
                        throw e;
                    }
                    TimeUnit.MILLISECONDS.sleep(50L * attempt); // then ask the marker again
                }
            }
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }
}
