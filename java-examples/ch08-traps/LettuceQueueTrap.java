// LettuceTraps, 1. the unbounded queue: one trap of the example, run by LettuceTraps.run, whose static
// members (the report, the clients, the helpers) it reaches by name.

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.resource.ClientResources;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;

final class LettuceQueueTrap extends LettuceTraps {

    /**
     * K SETs queued with auto-flush off, for K = size/4, size/2 and size: the time to queue them
     * (mode queue_<K>), the heap they hold after GC (fact queued_<K>_heap_mb, median), then a flush
     * and every reply awaited (one that timed out is counted: queued_timed_out), and the server's
     * SET count checked against the client's. Then the same with
     * requestQueueSize(Q): how many were refused, and how, and what the heap held.
     */
    static void queueTrap(LabSupport.Report report, LabSupport.Settings s, ClientResources resources,
                          List<String> keys, String value) throws Exception {
        List<Integer> ks = new ArrayList<>();
        for (int k : new int[] {Math.max(1, s.size() / 4), Math.max(1, s.size() / 2), s.size()}) {
            if (!ks.contains(k)) {
                ks.add(k);
            }
        }
        report.fact("value_bytes", VALUE_BYTES);
        report.fact("queue_keys", QUEUE_KEYS);
        report.fact("heap_max_mb", mb(Runtime.getRuntime().maxMemory()));
        RedisClient client = client(resources, s.host(), s.port(), QUEUE_TIMEOUT, ClientOptions.create());
        List<RedisFuture<String>> futures = new ArrayList<>(s.size()); // sized now, so no baseline counts it
        Map<Integer, Long> held = new LinkedHashMap<>();
        int timedOut = 0;
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            for (int k : ks) {
                long[] baseline = {0};
                List<Long> heldRecorded = new ArrayList<>();
                int[] ok = {0};
                int[] late = {0};
                Map<String, Long> before = LabSupport.commandCalls(s);
                LabSupport.Samples samples = LabSupport.measure(s, () -> {
                    futures.clear();
                    settle();
                    baseline[0] = heapAfterGc();
                }, () -> queue(connection, keys, value, k, futures), () -> {
                    heldRecorded.add(heapAfterGc() - baseline[0]); // the queued commands are all still reachable
                    connection.flushCommands();
                    connection.setAutoFlushCommands(true);
                    Ended ended = awaitEach(futures, QUEUE_TIMEOUT.plus(WAIT));
                    if (ended.failed.count > 0) {
                        throw LabSupport.failure("a queued SET failed: " + ended.failed.first());
                    }
                    ok[0] += ended.ok;
                    late[0] += ended.timedOut.count;
                });
                // A timed-out SET still queued is never sent; one already sent may still run.
                requireServerRan(s, before, ok[0], late[0], "queued");
                timedOut += late[0];
                report.add("queue_" + k, "queue " + k, "cmds", k, samples);
                // The recorded iterations are the last ones; how many warm-ups came first varies.
                long median = medianOf(heldRecorded.subList(heldRecorded.size() - samples.size(), heldRecorded.size()));
                held.put(k, median);
                report.fact("queued_" + k + "_heap_mb", round1(median / 1e6));
            }
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
        int small = ks.get(0);
        int large = ks.get(ks.size() - 1);
        // The slope between the smallest and the largest K: per-command cost, fixed costs cancelled.
        double perCommand = large > small ? (held.get(large) - held.get(small)) / (double) (large - small)
                : held.get(large) / (double) large;
        report.fact("queued_timed_out", timedOut);
        report.fact("queued_bytes_per_command", Math.round(perCommand));
        report.fact("queued_commands_to_fill_heap", Math.round(Runtime.getRuntime().maxMemory() / perCommand));

        boundedQueue(report, s, resources, keys, value);
    }

    // --8<-- [start:queue_unbounded]
    /** K commands on a connection with auto-flush off: each waits in DefaultEndpoint's commandBuffer. */
    static void queue(StatefulRedisConnection<String, String> connection, List<String> keys, String value, int k,
                      List<RedisFuture<String>> futures) {
        connection.setAutoFlushCommands(false); // nothing leaves before flushCommands()
        RedisAsyncCommands<String, String> async = connection.async();
        for (int i = 0; i < k; i++) {
            // requestQueueSize is Integer.MAX_VALUE: write() accepts every one, however many.
            futures.add(async.set(keys.get(i % keys.size()), value));
        }
    }
    // --8<-- [end:queue_unbounded]

    // --8<-- [start:queue_bounded]
    /** The fix: a bound. From the (Q+1)-th queued command on, write() refuses. */
    static ClientOptions bounded(int q) {
        return ClientOptions.builder().requestQueueSize(q).build();
    }

    /** As queue(), on a bounded connection: keeps what was accepted, counts what was refused. */
    static void queueBounded(StatefulRedisConnection<String, String> connection, List<String> keys, String value,
                             int k, List<RedisFuture<String>> accepted, Errors refused) {
        connection.setAutoFlushCommands(false);
        RedisAsyncCommands<String, String> async = connection.async();
        for (int i = 0; i < k; i++) {
            RedisFuture<String> future = async.set(keys.get(i % keys.size()), value);
            // A refusal is a future already failed; nothing is thrown, so unchecked it goes unseen.
            if (future.toCompletableFuture().isCompletedExceptionally()) {
                refused.add(failureOf(future));
            } else {
                accepted.add(future);
            }
        }
    }
    // --8<-- [end:queue_bounded]

    /**
     * K = size SETs queued on a connection bounded to Q (size/10, at most 10,000): facts
     * bounded_accepted, bounded_refused, bounded_error, the heap held after GC, and the SETs
     * the server ran once the accepted ones were flushed.
     */
    static void boundedQueue(LabSupport.Report report, LabSupport.Settings s, ClientResources resources,
                             List<String> keys, String value) throws Exception {
        int q = Math.min(MAX_BOUND, Math.max(1, s.size() / 10));
        int k = s.size();
        RedisClient client = client(resources, s.host(), s.port(), QUEUE_TIMEOUT, bounded(q));
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            List<RedisFuture<String>> accepted = new ArrayList<>(q);
            Errors refused = new Errors();
            Map<String, Long> before = LabSupport.commandCalls(s);
            settle();
            long baseline = heapAfterGc();
            queueBounded(connection, keys, value, k, accepted, refused);
            settle(); // the refused commands linger in the timer's queue for a tick or two
            long heap = heapAfterGc() - baseline;
            connection.flushCommands();
            connection.setAutoFlushCommands(true);
            Ended ended = awaitEach(accepted, QUEUE_TIMEOUT.plus(WAIT));
            if (ended.failed.count > 0) {
                throw LabSupport.failure("an accepted SET failed: " + ended.failed.first());
            }
            long sets = requireServerRan(s, before, ended.ok, ended.timedOut.count, "accepted");
            report.fact("bounded_request_queue_size", q);
            report.fact("bounded_offered", k);
            report.fact("bounded_accepted", accepted.size());
            report.fact("bounded_refused", refused.count);
            report.fact("bounded_error", refused.first());
            report.fact("bounded_heap_mb", round1(heap / 1e6));
            report.fact("bounded_timed_out", ended.timedOut.count);
            report.fact("bounded_server_sets", sets);
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    /**
     * Optional part of trap 1: auto-flush ON, F SETs fired without waiting through a proxy
     * limited to SLOW_KB_S. Every write() goes straight to the channel; netty's
     * ChannelOutboundBuffer turns the channel unwritable above its high-water mark (64 KB),
     * and Lettuce never asks, so the encoded commands pile up in direct memory and the
     * commands themselves in CommandHandler's stack. Then the same with requestQueueSize(Q),
     * whose count (DefaultEndpoint's QUEUE_SIZE) goes down only when a write completes.
     */
    static void firehose(LabSupport.Report report, LabSupport.Settings s, ClientResources resources, Proxy proxy,
                         List<String> keys, String value) throws Exception {
        int f = Math.min(FIREHOSE_MAX, s.size());
        int q = Math.min(MAX_BOUND, Math.max(1, f / 10));
        report.fact("firehose_commands", f);
        report.fact("firehose_link_kb_s", SLOW_KB_S);
        // What the queue weighs against the link and the command timeout (toxiproxy's KB is 1,000 bytes).
        long wire = 0;
        for (int i = 0; i < f; i++) {
            wire += setBytes(keys.get(i % keys.size()), value);
        }
        report.fact("firehose_wire_mb", round1(wire / 1e6));
        report.fact("firehose_link_s", Math.round(wire / (SLOW_KB_S * 1000.0)));
        report.fact("firehose_command_timeout_s", QUEUE_TIMEOUT.toSeconds());
        report.fact("firehose_pass_within_timeout", QUEUE_TIMEOUT.toSeconds() * SLOW_KB_S * 1000 * f / wire);
        for (boolean bounded : new boolean[] {false, true}) {
            String name = bounded ? "firehose_bounded" : "firehose";
            ClientOptions options = bounded ? bounded(q) : ClientOptions.create();
            RedisClient client = client(resources, proxy.host(), proxy.port(), QUEUE_TIMEOUT, options);
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                RedisAsyncCommands<String, String> async = connection.async();
                List<RedisFuture<String>> accepted = new ArrayList<>(f);
                Errors refused = new Errors();
                settle();
                long heapBefore = heapAfterGc();
                long directBefore = directMemory();
                Map<String, Long> before = LabSupport.commandCalls(s);
                proxy.toxics().add("slow", "bandwidth", "upstream", Map.of("rate", SLOW_KB_S));
                long start = System.nanoTime();
                for (int i = 0; i < f; i++) {
                    RedisFuture<String> future = async.set(keys.get(i % keys.size()), value);
                    if (future.toCompletableFuture().isCompletedExceptionally()) {
                        refused.add(failureOf(future));
                    } else {
                        accepted.add(future);
                    }
                }
                long loopMs = (System.nanoTime() - start) / 1_000_000;
                settle(); // the event loop takes what it was handed; refused commands leave the timer
                // Refused on the event loop meanwhile: dropped, as the application would after handling
                // them (each holds an exception with its stack trace, which is no queue cost).
                Errors later = new Errors();
                for (var it = accepted.iterator(); it.hasNext(); ) {
                    RedisFuture<String> future = it.next();
                    if (future.toCompletableFuture().isCompletedExceptionally()) {
                        later.add(failureOf(future));
                        it.remove();
                    }
                }
                long heap = heapAfterGc() - heapBefore;
                long direct = directMemory() - directBefore;
                long arrived = LabSupport.callsBetween(before, LabSupport.commandCalls(s)).getOrDefault("set", 0L);
                proxy.toxics().remove("slow"); // what the toxic still holds goes through at once
                // Accepted by write() is not accepted by the channel: with a bound, CommandHandler
                // refuses on the event loop once Q commands await their replies. The command timeout
                // started at write(), so what still waits behind the link may time out meanwhile.
                Ended ended = awaitEach(accepted, QUEUE_TIMEOUT.plus(WAIT));
                if (!bounded && ended.failed.count + refused.count > 0) { // no bound, so nothing may be refused
                    throw LabSupport.failure((ended.failed.count + refused.count) + " of " + f
                            + " unbounded SETs failed: " + (ended.failed.count > 0 ? ended.failed : refused).first());
                }
                later.addAll(ended.failed);
                long sets = requireServerRan(s, before, ended.ok, ended.timedOut.count, name);
                report.fact(name + "_loop_ms", loopMs);
                report.fact(name + "_applied_when_loop_ended", arrived);
                report.fact(name + "_heap_mb", round1(heap / 1e6));
                report.fact(name + "_direct_mb", directBefore < 0 ? -1 : round1(direct / 1e6));
                report.fact(name + "_ok", ended.ok);
                report.fact(name + "_timed_out", ended.timedOut.count);
                report.fact(name + "_timed_out_ran", sets - ended.ok); // timed out in the client, run by Redis
                report.fact(name + "_drain_ms", ended.ms);
                report.fact(name + "_server_sets", sets);
                if (bounded) {
                    report.fact(name + "_request_queue_size", q);
                    report.fact(name + "_refused_at_call", refused.count);
                    report.fact(name + "_refused_later", later.count);
                    report.fact(name + "_error_at_call", refused.first());
                    report.fact(name + "_error_later", later.first());
                }
            } finally {
                proxy.toxics().removeOurs();
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }

    /** Direct memory held by netty's default allocator (AbstractRedisClient gives Lettuce that one); -1 if unknown. */
    static long directMemory() {
        return ByteBufAllocator.DEFAULT instanceof ByteBufAllocatorMetricProvider provider
                ? provider.metric().usedDirectMemory() : -1;
    }
}
