//SOURCES ExerciseCheck.java

// Exercise 7's check, beside the exercise: the shared plumbing (arguments, the lab's Redis,
// the verdict) is ExerciseCheck's, whose static members this class reaches by name.

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

final class Ex07Check extends ExerciseCheck {

    private static final int EX07_ACCOUNTS = 10;
    private static final long EX07_BALANCE = 1_000;
    private static final int EX07_WRITERS = 4;
    private static final int EX07_EACH = 300;
    private static final int EX07_MAX_AMOUNT = 10;
    /** What the check pays into a source between the transfer's read and its write. */
    private static final long EX07_DEPOSIT = 1;
    private static final int EX07_DEPOSIT_EVERY = 4;
    private static final Set<String> EX07_WRITES = Set.of("SET", "MSET", "SETEX", "PSETEX", "SETNX", "MSETNX",
            "GETSET", "SETRANGE", "APPEND", "INCR", "DECR", "INCRBY", "DECRBY", "INCRBYFLOAT", "DEL", "UNLINK",
            "GETDEL", "GETEX");

    static void ex07(String[] args, Transfer transfer) {
        run(EX07, args, EX07_EACH, s -> inLab(EX07, s, jedis -> checkTransfer(s, jedis, transfer)));
    }

    /** One call of transfer as it reached the server: each WATCH's keys and each EXEC's fate. */
    static final class TransferCall {
        final String src;
        final String dst;
        final long amount;
        final boolean depositDue;
        int depositAt = -1; // index in execRan of the EXEC that followed the check's deposit
        final List<Set<String>> watches = new ArrayList<>();
        final List<Boolean> execRan = new ArrayList<>();
        final List<Set<String>> execWatched = new ArrayList<>(); // the keys watched when each EXEC went
        boolean result;

        TransferCall(String src, String dst, long amount, boolean depositDue) {
            this.src = src;
            this.dst = dst;
            this.amount = amount;
            this.depositDue = depositDue;
        }

        boolean guarded(int exec) {
            return execWatched.get(exec).contains(src) && execWatched.get(exec).contains(dst);
        }

        /** An EXEC that ran with no WATCH at all after one that was aborted: the aborted writes sent again. */
        boolean blindRetry() {
            int aborted = execRan.indexOf(false);
            for (int i = aborted + 1; aborted >= 0 && i < execRan.size(); i++) {
                if (execRan.get(i) && execWatched.get(i).isEmpty()) {
                    return true;
                }
            }
            return false;
        }

        /** The keys watched for an EXEC that ran without a WATCH on both accounts, or null. */
        Set<String> unguarded() {
            for (int i = 0; i < execRan.size(); i++) {
                if (execRan.get(i) && !guarded(i)) {
                    return execWatched.get(i);
                }
            }
            return null;
        }

        boolean lastExecAborted() {
            return !execRan.isEmpty() && !execRan.get(execRan.size() - 1);
        }

        boolean forcedAbort() {
            return depositAt >= 0 && depositAt < execRan.size() && !execRan.get(depositAt);
        }
    }

    /**
     * The connection under the Jedis handed to transfer. Every command passes through
     * sendCommand(CommandArguments), and Transaction.exec() reads EXEC's reply with
     * getObjectMultiBulkReply(), so this notes each WATCH's keys and each EXEC's fate (a null
     * reply: aborted). When a call is due a deposit, it pays EX07_DEPOSIT into the source from a
     * connection of its own right before the call's first write or EXEC: another client's write
     * at the moment it does the most harm.
     */
    static final class SpyConnection extends Connection {
        private final Jedis depositor;
        private final Set<String> watched = new HashSet<>();
        private TransferCall call;
        private Set<String> awaitedExec; // the keys watched when the EXEC whose reply is due went out

        SpyConnection(LabSupport.Settings s, Jedis depositor) {
            // The handshake (AUTH, when REDIS_URL has a password) passes sendCommand before `call` is set.
            super(new HostAndPort(s.host(), s.port()), LabSupport.jedisConfig(s));
            this.depositor = depositor;
        }

        TransferCall begin(String src, String dst, long amount, boolean deposit) {
            call = new TransferCall(src, dst, amount, deposit);
            awaitedExec = null;
            return call;
        }

        @Override
        public void sendCommand(CommandArguments args) {
            String name = new String(args.getCommand().getRaw(), StandardCharsets.UTF_8).toUpperCase(Locale.ROOT);
            if (call != null) {
                if (name.equals("WATCH")) {
                    Set<String> keys = new HashSet<>();
                    for (int i = 1; i < args.size(); i++) { // 0 is the command
                        keys.add(new String(args.get(i).getRaw(), StandardCharsets.UTF_8));
                    }
                    watched.addAll(keys);
                    call.watches.add(keys);
                } else if (name.equals("UNWATCH") || name.equals("DISCARD")) {
                    watched.clear();
                } else if (name.equals("EXEC") || EX07_WRITES.contains(name)) {
                    if (call.depositDue && call.depositAt < 0) {
                        depositor.incrBy(call.src, EX07_DEPOSIT);
                        call.depositAt = call.execRan.size();
                    }
                    if (name.equals("EXEC")) {
                        awaitedExec = new HashSet<>(watched);
                        watched.clear(); // EXEC ends every WATCH, whether it runs or not
                    }
                }
            }
            super.sendCommand(args);
        }

        @Override
        public List<Object> getObjectMultiBulkReply() {
            List<Object> reply = super.getObjectMultiBulkReply();
            if (awaitedExec != null && call != null) {
                call.execRan.add(reply != null);
                call.execWatched.add(awaitedExec);
                awaitedExec = null;
            }
            return reply;
        }
    }

    private static String checkTransfer(LabSupport.Settings s, Jedis jedis, Transfer transfer) throws Exception {
        List<String> keys = LabSupport.keys(EX07_ACCOUNTS, EX07.alias(), "acct");
        System.out.println(String.format(Locale.ROOT, "Exercise 7: transfer by %d writers x %,d transfers of 1 to %d"
                + " between %d accounts of %,d at %s; before the first write of every %dth transfer the check pays"
                + " %d into its source from another connection", EX07_WRITERS, EX07_EACH, EX07_MAX_AMOUNT,
                EX07_ACCOUNTS, EX07_BALANCE, s.where(), EX07_DEPOSIT_EVERY, EX07_DEPOSIT));
        openAccounts(jedis, keys);
        checkRefusals(s, jedis, keys, transfer);
        openAccounts(jedis, keys);

        List<List<long[]>> plans = planTransfers();
        List<TransferCall> calls = Collections.synchronizedList(new ArrayList<>());
        AtomicReference<RuntimeException> failed = new AtomicReference<>();
        List<Jedis> opened = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        CountDownLatch go = new CountDownLatch(1);
        Map<String, Long> before = LabSupport.commandCalls(s);
        long start;
        try {
            for (List<long[]> plan : plans) {
                Jedis depositor = LabSupport.jedis(s);
                SpyConnection spy = new SpyConnection(s, depositor);
                Jedis handed = new Jedis(spy);
                opened.add(depositor);
                opened.add(handed);
                Thread writer = new Thread(() -> {
                    try {
                        go.await();
                        for (int i = 0; i < plan.size(); i++) {
                            String src = keys.get((int) plan.get(i)[0]);
                            String dst = keys.get((int) plan.get(i)[1]);
                            long amount = plan.get(i)[2];
                            TransferCall call = spy.begin(src, dst, amount, i % EX07_DEPOSIT_EVERY == 1);
                            call.result = student(EX07, () -> transfer.transfer(handed, src, dst, amount));
                            calls.add(call);
                        }
                    } catch (RuntimeException e) {
                        failed.compareAndSet(null, e);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                threads.add(writer);
                writer.start();
            }
            start = System.nanoTime();
            go.countDown();
            for (Thread writer : threads) {
                writer.join();
            }
        } finally {
            opened.forEach(Jedis::close);
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        if (failed.get() != null) {
            throw failed.get();
        }
        Map<String, Long> server = LabSupport.callsBetween(before, LabSupport.commandCalls(s));
        long[] held = balances(jedis, keys);
        diagnose(calls, held, keys, server);

        long execs = 0;
        long aborted = 0;
        long forced = 0;
        long deposits = 0;
        for (TransferCall call : calls) {
            execs += call.execRan.size();
            aborted += call.execRan.stream().filter(ran -> !ran).count();
            forced += call.forcedAbort() ? 1 : 0;
            deposits += call.depositAt >= 0 ? 1 : 0;
        }
        int n = calls.size();
        System.out.println(String.format(Locale.ROOT, "%,d transfers in %.2f s (%,.0f/s), all true; %,d in the"
                + " accounts, as went in (%,d and %,d deposits); lowest balance %,d; every balance is what the"
                + " transfers and deposits make it", n, seconds, n / seconds, Arrays.stream(held).sum(),
                EX07_ACCOUNTS * EX07_BALANCE, deposits, Arrays.stream(held).min().orElse(0)));
        System.out.println(String.format(Locale.ROOT, "EXECs: %,d, of which %,d aborted, exec() returning null"
                + " (%,d by the check's deposits, %,d by the other writers), each followed by a new WATCH and read",
                execs, aborted, forced, aborted - forced));
        System.out.println(String.format(Locale.ROOT, "the server counted %,d WATCH, %,d MULTI, %,d EXEC, %,d"
                + " UNWATCH", server.getOrDefault("watch", 0L), server.getOrDefault("multi", 0L),
                server.getOrDefault("exec", 0L), server.getOrDefault("unwatch", 0L)));
        return String.format(Locale.ROOT, "%,d transfers by %d writers, %,d aborted EXECs retried, not one unit lost",
                n, EX07_WRITERS, aborted);
    }

    private static void openAccounts(Jedis jedis, List<String> keys) {
        List<String> keysAndValues = new ArrayList<>();
        for (String key : keys) {
            keysAndValues.add(key);
            keysAndValues.add(Long.toString(EX07_BALANCE));
        }
        jedis.mset(keysAndValues.toArray(new String[0]));
    }

    private static long[] balances(Jedis jedis, List<String> keys) {
        return jedis.mget(keys.toArray(new String[0])).stream().mapToLong(Long::parseLong).toArray();
    }

    /** One writer first: a transfer the source cannot pay is refused and writes nothing; all it holds can go. */
    private static void checkRefusals(LabSupport.Settings s, Jedis jedis, List<String> keys, Transfer transfer) {
        String src = keys.get(0);
        String dst = keys.get(1);
        try (Jedis depositor = LabSupport.jedis(s);
             Jedis handed = new Jedis(new SpyConnection(s, depositor))) {
            // {amount, 1 if it must go through, the two balances after}
            long[][] cases = {{EX07_BALANCE + 1, 0, EX07_BALANCE, EX07_BALANCE},
                    {EX07_BALANCE, 1, 0, 2 * EX07_BALANCE}};
            for (long[] c : cases) {
                long amount = c[0];
                boolean want = c[1] == 1;
                boolean got = student(EX07, () -> transfer.transfer(handed, src, dst, amount));
                long[] held = balances(jedis, List.of(src, dst));
                if (got && !want) {
                    throw EX07.notSolved(String.format(Locale.ROOT, "transfer of %,d from an account holding %,d"
                            + " returned true and left %,d in it; return false, writing nothing, when the source"
                            + " would go negative", amount, EX07_BALANCE, held[0]));
                }
                if (want && !got) {
                    throw EX07.notSolved(String.format(Locale.ROOT, "transfer refused to move %,d out of an account"
                            + " holding exactly %,d; refuse only when the source would go negative", amount,
                            EX07_BALANCE));
                }
                if (held[0] != c[2] || held[1] != c[3]) {
                    throw EX07.notSolved(String.format(Locale.ROOT, "after transfer(\"%s\", \"%s\", %,d) returned %s"
                            + " the accounts hold %,d and %,d where %,d and %,d were expected; %s", src, dst, amount,
                            got, held[0], held[1], c[2], c[3], got ? "write the source's balance less the amount"
                            + " and the destination's plus it" : "a refusal writes nothing"));
                }
            }
        }
        System.out.println(String.format(Locale.ROOT, "one writer: %,d from %,d refused with nothing written; %,d"
                + " from %,d moved (0 and %,d)", EX07_BALANCE + 1, EX07_BALANCE, EX07_BALANCE, EX07_BALANCE,
                2 * EX07_BALANCE));
    }

    /**
     * Each writer's transfers {source, destination, amount}, random, yet no account's planned
     * outflow passes its opening balance: every transfer can be paid in whatever order the
     * writers run, so a refusal is a bug.
     */
    private static List<List<long[]>> planTransfers() {
        Random random = new Random(7);
        long[] out = new long[EX07_ACCOUNTS];
        List<List<long[]>> plans = new ArrayList<>();
        for (int w = 0; w < EX07_WRITERS; w++) {
            plans.add(new ArrayList<>());
        }
        for (int i = 0; i < EX07_EACH; i++) {
            for (List<long[]> plan : plans) {
                int src;
                int dst;
                long amount;
                do {
                    src = random.nextInt(EX07_ACCOUNTS);
                    dst = (src + 1 + random.nextInt(EX07_ACCOUNTS - 1)) % EX07_ACCOUNTS;
                    amount = 1 + random.nextInt(EX07_MAX_AMOUNT);
                } while (out[src] + amount > EX07_BALANCE);
                out[src] += amount;
                plan.add(new long[] {src, dst, amount});
            }
        }
        return plans;
    }

    /** The first thing wrong with the concurrent run, cause before consequence. */
    private static void diagnose(List<TransferCall> calls, long[] held, List<String> keys, Map<String, Long> server) {
        long deposits = calls.stream().filter(c -> c.depositAt >= 0).count();
        long putIn = EX07_ACCOUNTS * EX07_BALANCE + deposits * EX07_DEPOSIT;
        long total = Arrays.stream(held).sum();
        long negative = Arrays.stream(held).filter(b -> b < 0).count();
        String money = String.format(Locale.ROOT, "the accounts hold %,d in all where %,d went in (%,d and the"
                + " check's %,d deposits)%s", total, putIn, EX07_ACCOUNTS * EX07_BALANCE, deposits,
                negative == 0 ? "" : String.format(Locale.ROOT, ", and %d account%s negative", negative,
                        negative == 1 ? " is" : "s are"));
        long[] expected = new long[EX07_ACCOUNTS];
        Arrays.fill(expected, EX07_BALANCE);
        for (TransferCall c : calls) {
            if (c.depositAt >= 0) {
                expected[keys.indexOf(c.src)] += EX07_DEPOSIT;
            }
            if (c.result) {
                expected[keys.indexOf(c.src)] -= c.amount;
                expected[keys.indexOf(c.dst)] += c.amount;
            }
        }
        boolean right = Arrays.equals(held, expected);
        int n = calls.size();
        String writers = "with " + EX07_WRITERS + " writers";

        if (calls.stream().allMatch(c -> c.watches.isEmpty()) && server.getOrDefault("watch", 0L) == 0) {
            if (right) {
                throw EX07.notSolved("transfer moved the money right with no WATCH (on the server, in one command or"
                        + " script, as the section recommends where it can); this exercise asks for the WATCH loop:"
                        + " WATCH both accounts, read them, MULTI/EXEC, and retry when exec() returns null");
            }
            if (calls.stream().anyMatch(c -> !c.execRan.isEmpty()) || server.getOrDefault("exec", 0L) > 0) {
                throw EX07.notSolved("transfer sent MULTI/EXEC but no WATCH, so no EXEC could abort: " + writers + " "
                        + money + "; MULTI only queues the writes, jedis.watch(src, dst) before reading them");
            }
            throw EX07.notSolved("transfer sent no WATCH: " + writers + " " + money + "; jedis.watch(src, dst), read"
                    + " both, write in jedis.multi() ... exec(), and retry when exec() returns null");
        }
        long blind = calls.stream().filter(TransferCall::blindRetry).count();
        if (blind > 0) {
            throw EX07.notSolved(String.format(Locale.ROOT, "after an aborted EXEC transfer sent MULTI/EXEC again"
                    + " without a new WATCH and read (%,d times), writing balances computed before the abort: %s; a"
                    + " retry starts over from WATCH and the read", blind, money));
        }
        List<TransferCall> unguarded = calls.stream().filter(c -> c.unguarded() != null).toList();
        if (!unguarded.isEmpty()) {
            TransferCall c = unguarded.get(0);
            Set<String> seen = new TreeSet<>(c.unguarded());
            throw EX07.notSolved(String.format(Locale.ROOT, "%,d of %,d transfers ran EXEC without a WATCH on both"
                    + " accounts (from %s to %s watched %s): %s; a write to an unwatched account between the read"
                    + " and EXEC is overwritten, so WATCH the source and the destination", unguarded.size(), n,
                    c.src, c.dst, seen.isEmpty() ? "nothing" : String.join(", ", seen), money));
        }
        long ignored = calls.stream().filter(c -> c.result && c.lastExecAborted()).count();
        if (ignored > 0) {
            throw EX07.notSolved(String.format(Locale.ROOT, "%,d of %,d transfers returned true although their last"
                    + " EXEC was aborted, so their money never moved; Transaction.exec() returns null when a watched"
                    + " key changed (it does not throw): check for null, read both balances again and retry",
                    ignored, n));
        }
        List<TransferCall> refused = calls.stream().filter(c -> !c.result).toList();
        if (!refused.isEmpty()) {
            long afterAbort = refused.stream().filter(c -> c.execRan.contains(false)).count();
            throw EX07.notSolved(String.format(Locale.ROOT, "transfer returned false for %,d of %,d transfers that"
                    + " the source could pay (the check plans each account's outflow within its balance), %s",
                    refused.size(), n, afterAbort > 0 ? String.format(Locale.ROOT, "%,d of them right after an"
                    + " aborted EXEC; an aborted EXEC is not a refusal: read both balances again and retry",
                    afterAbort) : "refuse only when the source's balance is below the amount"));
        }
        long watches = server.getOrDefault("watch", 0L);
        if (watches < n) {
            throw EX07.notSolved(String.format(Locale.ROOT, "the server counted %,d WATCH calls for %,d transfers;"
                    + " each transfer WATCHes its two accounts before reading them", watches, n));
        }
        long done = calls.stream().filter(c -> c.result).count();
        long execs = server.getOrDefault("exec", 0L);
        if (execs < done) {
            throw EX07.notSolved(String.format(Locale.ROOT, "the server counted %,d EXEC calls for %,d transfers"
                    + " that returned true; write each transfer's two balances in MULTI/EXEC", execs, done));
        }
        if (!right) {
            int wrong = 0;
            while (held[wrong] == expected[wrong]) {
                wrong++;
            }
            throw EX07.notSolved(String.format(Locale.ROOT, "%s, and the transfers that returned true do not explain"
                    + " the balances (%s holds %,d where %,d was expected); every retry reads both balances again"
                    + " after its WATCH, and true means that exec() ran", money, keys.get(wrong), held[wrong],
                    expected[wrong]));
        }
    }
}
