// Hangs, part 3: a Redisson RBatch with skipResult(); run by Hangs.run, whose helpers it reaches by name.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.redisson.api.BatchOptions;
import org.redisson.api.BatchResult;
import org.redisson.api.RBatch;
import org.redisson.api.RedissonClient;

import redis.clients.jedis.Jedis;

final class RedissonSkipResult extends Hangs {

    static final List<String> CASES = List.of("skip_result", "with_results");

    static List<String> keys(int n) {
        return CASES.stream().map(RedissonSkipResult::key).toList();
    }

    static String key(String name) {
        return LabSupport.key("ch08", "hangs", "redisson", name);
    }

    static void run(LabSupport.Report report, LabSupport.Settings s, Jedis control, Duration bound, int n)
            throws Exception {
        report.fact("redisson_commands", n);
        for (String name : CASES) {
            BatchOptions options = name.equals("skip_result") ? BatchOptions.defaults().skipResult() : BatchOptions.defaults();
            RedissonSupport.withFreshClient(RedissonSupport.config(s), client -> {
                List<CompletableFuture<Long>> futures = new ArrayList<>(n);
                long start = System.nanoTime();
                BatchResult<?> result = incrBatch(client, options, key(name), n, futures);
                long executeMs = msSince(start);
                long waitStart = System.nanoTime();
                long doneMs = awaitAll(futures, waitStart, bound);
                String prefix = "redisson_" + name;
                Tally.of(futures).report(report, prefix);
                report.fact(prefix + "_execute_ms", executeMs);
                report.fact(prefix + "_responses", result.getResponses().size());
                report.fact(prefix + "_hung", doneMs < 0);
                report.fact(prefix + "_wait_ms", doneMs < 0 ? msSince(waitStart) : doneMs);
                report.fact(prefix + "_applied", counter(control, key(name)));
                return null;
            });
        }
    }

    // --8<-- [start:redisson_hang]
    /**
     * N INCRs of one counter in an RBatch, each command's RFuture kept; execute() returns when the
     * batch is done. With skipResult() the commands' futures are never completed: wait on execute().
     */
    static BatchResult<?> incrBatch(RedissonClient client, BatchOptions options, String key, int n,
                                    List<CompletableFuture<Long>> futures) {
        RBatch batch = client.createBatch(options);
        for (int i = 0; i < n; i++) {
            futures.add(batch.getAtomicLong(key).incrementAndGetAsync().toCompletableFuture());
        }
        return batch.execute();
    }
    // --8<-- [end:redisson_hang]
}
