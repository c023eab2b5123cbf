//SOURCES ExerciseCheck.java
//SOURCES Ex08Proxy.java

// Exercise 8's check, beside the exercise: the shared plumbing (arguments, the lab's Redis,
// the verdict) is ExerciseCheck's and the proxy is Ex08Proxy's, whose static members this class
// reaches by name.

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import redis.clients.jedis.Jedis;

final class Ex08Check extends Ex08Proxy {

    private static final List<Long> EX08_AMOUNTS = List.of(7L, 12L, 19L, 25L, 37L);
    /** The amounts' sum: a balance that moved by 200 means the charge ran twice. */
    private static final long EX08_TOTAL = 100;
    /** A call still running after this long is reported as hanging. */
    private static final long EX08_BOUND_MS = 20_000;

    static void ex08(String[] args, Charge charge) {
        run(EX08, args, EX08_AMOUNTS.size(), s -> inLab(EX08, s, jedis -> checkCharge(s, jedis, charge)));
    }

    /** One call of the student's charge through the proxy, and what the balance says about it. */
    record ChargeCall(String step, String chargeId, String fault, Throwable error, double seconds, boolean hung,
                      long moved, Link fired, List<Sent> sent) {
        double runs() {
            return (double) moved / EX08_TOTAL;
        }

        String runsText() {
            return moved % EX08_TOTAL == 0 ? Long.toString(moved / EX08_TOTAL)
                    : String.format(Locale.ROOT, "%.2f", runs());
        }

        String raised() {
            String text = String.valueOf(error.getMessage()).replaceAll("\\s+", " ").trim();
            if (text.length() > 90) {
                text = text.substring(0, 90) + "...";
            }
            return error.getClass().getSimpleName() + " (" + text + ")" + studentLine(error);
        }

        /** On how many connections a write to the account reached the server. */
        long sends(String account) {
            return sent.stream().filter(x -> x.forwarded() && writtenKeys(x.args()).contains(account))
                    .map(Sent::link).distinct().count();
        }

        /** How the silenced connection ended, for the sentences below. */
        String silence() {
            if (fired == null || fired.closedBy == null) {
                return "the connection whose replies went silent was still open";
            }
            if (fired.closedBy.equals("client")) {
                return String.format(Locale.ROOT, "your client gave up on the silent connection after %.1f s",
                        fired.silentSeconds());
            }
            return String.format(Locale.ROOT, "the check closed the silent connection after %d s, your client still"
                    + " waiting (Lettuce's default command timeout is 60 s)", EX08_HOLD_MS / 1000);
        }
    }

    /** " at Ex08ChargeOnce.java:NN", the student's line that threw, or "". */
    private static String studentLine(Throwable e) {
        for (StackTraceElement frame : e.getStackTrace()) {
            String cls = frame.getClassName();
            if (cls.equals(EX08.className()) || cls.startsWith(EX08.className() + "$")) {
                return " at " + frame.getFileName() + ":" + frame.getLineNumber();
            }
        }
        return "";
    }

    private static long balance(Jedis jedis, String account) {
        String value = jedis.get(account);
        try {
            return value == null ? 0 : Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw EX08.notSolved(account + " holds '" + value + "', not a whole number; INCRBY each amount into it");
        }
    }

    /** charge(proxy host, proxy port, account, chargeId, amounts) on a thread of its own, bounded. */
    private static ChargeCall callCharge(Jedis jedis, FaultProxy proxy, Charge charge, String account, String step,
                                         String chargeId, String fault) throws InterruptedException {
        long before = balance(jedis, account);
        int first = proxy.sentCount();
        proxy.arm(step, fault);
        ExecutorService worker = Executors.newSingleThreadExecutor(daemon("ex08-charge"));
        long start = System.nanoTime();
        Future<?> done = worker.submit(() -> {
            charge.charge(proxy.host(), proxy.port(), account, chargeId, new ArrayList<>(EX08_AMOUNTS));
            return null;
        });
        Throwable error = null;
        boolean hung = false;
        try {
            done.get(EX08_BOUND_MS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            hung = true;
        } catch (ExecutionException e) {
            error = e.getCause();
            while ((error instanceof ExecutionException || error instanceof CompletionException)
                    && error.getCause() != null) {
                error = error.getCause(); // a future's failure: what failed it
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        worker.shutdown();
        Link fired = proxy.disarm();
        if (error instanceof UnsupportedOperationException && String.valueOf(error.getMessage()).startsWith("TODO")) {
            throw EX08.notSolved("charge still throws TODO; fill it in");
        }
        Thread.sleep(100); // a resend still on the wire reaches the server before the balance is read
        return new ChargeCall(step, chargeId, fault, error, seconds, hung, balance(jedis, account) - before, fired,
                proxy.sentSince(first));
    }

    private static void checkKeys(ChargeCall call) {
        for (Sent x : call.sent()) {
            for (String key : writtenKeys(x.args())) {
                if (!key.startsWith(EX08.prefix())) {
                    throw EX08.notSolved("charge wrote '" + key + "', outside " + EX08.prefix() + "; keep every key"
                            + " it writes, the marker too, under " + EX08.prefix() + ", which the check deletes when"
                            + " it ends (delete '" + key + "' yourself)");
                }
            }
        }
    }

    /** Why a call that returned normally ran the charge more than once: the first cause that fits. */
    private static String chargedTwice(ChargeCall call, String account) {
        String due = call.moved() % EX08_TOTAL == 0
                ? String.format(Locale.ROOT, "the server ran the charge %s times (the balance moved by %,d where %d"
                        + " was due)", call.runsText(), call.moved(), EX08_TOTAL)
                : String.format(Locale.ROOT, "part of the charge ran more than once (the balance moved by %,d where"
                        + " %d was due; send all the INCRBYs together, in one MULTI/EXEC)", call.moved(), EX08_TOTAL);
        String resend = call.silence() + ", and the charge went again on a new connection (" + call.sends(account)
                + " connections carried it)";
        List<Sent> markers = call.sent().stream().filter(x -> EX08_WRITES.contains(x.name())
                && writtenKeys(x.args()).stream().anyMatch(k -> !k.equals(account))).toList();
        if (call.sent().stream().anyMatch(x -> EX08_SCRIPTS.contains(x.name()))) {
            return due + ": " + resend + ", and your script charged each time it ran; let the script SET the marker"
                    + " with NX first and charge only when that succeeded, so that a second run changes nothing";
        }
        if (markers.stream().anyMatch(Sent::inMulti)) {
            return due + ": the marker is in the MULTI/EXEC with the INCRBYs, but a transaction has no 'if': "
                    + resend + ", where the SET NX failed and the INCRBYs ran; make the client at-most-once"
                    + " (ClientOptions.builder().autoReconnect(false)) and look for the marker before each send"
                    + " yourself";
        }
        if (!markers.isEmpty()) {
            return due + ": the marker was written on its own, outside the MULTI/EXEC of the INCRBYs, and nothing"
                    + " looked at it before the resend: " + resend + "; write it in the same MULTI/EXEC as the"
                    + " INCRBYs and look for it before each send";
        }
        if (call.sent().stream().anyMatch(x -> x.name().equals("WATCH") && x.args().contains(account))) {
            return due + ": " + resend + " under a WATCH of the balance, which read the new balance and charged"
                    + " once more; WATCH guards what you read, not the charge: a marker keyed by chargeId, written"
                    + " with the INCRBYs, tells a second attempt that the work is done";
        }
        return due + ": " + resend + "; Lettuce does that with autoReconnect on, its default: after a reconnect it"
                + " writes again every command still waiting for its reply (at-least-once), and so does any loop"
                + " that sends again blindly; write a marker keyed by chargeId in the same MULTI/EXEC as the"
                + " INCRBYs, make the client at-most-once (ClientOptions.builder().autoReconnect(false)) and send"
                + " again only when the marker is absent";
    }

    /** The first thing wrong with one call, as one Stop; nothing when it charged as due. */
    private static void judge(ChargeCall call, String account) {
        String step = call.step();
        if (call.hung()) {
            throw EX08.notSolved(String.format(Locale.ROOT, "charge had not returned %d s after the call%s; bound"
                    + " every wait: a command timeout you choose, and a bounded number of attempts",
                    EX08_BOUND_MS / 1000, call.fired() == null ? "" : " (" + call.silence() + ")"));
        }
        if (call.fault() != null && call.fired() == null) {
            throw EX08.notSolved("charge sent no write to " + account + " through the host and port it was handed"
                    + " (call '" + call.chargeId() + "'); build the client from host and port on every call");
        }
        if (step.equals("plain")) {
            if (call.error() != null) {
                throw EX08.notSolved("charge threw " + call.raised() + " with no fault at all; fix that first");
            }
            if (call.sends(account) == 0) {
                throw EX08.notSolved("charge did not charge through the host and port it was handed (the check's"
                        + " proxy saw no write to " + account + "); build the client from them");
            }
            if (call.moved() != EX08_TOTAL) {
                throw EX08.notSolved(String.format(Locale.ROOT, "with no fault, one call moved the balance by %,d"
                        + " where %d was due; INCRBY each amount into the account once", call.moved(), EX08_TOTAL));
            }
            return;
        }
        if (step.equals("again")) {
            if (call.error() != null) {
                throw EX08.notSolved("charge threw " + call.raised() + " when called again with chargeId '"
                        + call.chargeId() + "', already charged; return normally, charging nothing");
            }
            if (call.moved() != 0) {
                throw EX08.notSolved(String.format(Locale.ROOT, "calling charge again with chargeId '%s', already"
                        + " charged, moved the balance by %,d; look for the marker before charging, so that your"
                        + " caller's retry is harmless too", call.chargeId(), call.moved()));
            }
            return;
        }
        if (call.error() != null) {
            if (step.equals("reply") && call.moved() == EX08_TOTAL) {
                throw EX08.notSolved("charge threw " + call.raised() + " after its replies went silent, although"
                        + " the server had run the charge once (the balance moved by " + call.moved() + "): your"
                        + " caller cannot tell whether to charge again; on a timeout, find out whether it ran (a"
                        + " marker written in the same MULTI/EXEC as the INCRBYs) and return normally");
            }
            if (step.equals("request") && call.moved() == 0) {
                throw EX08.notSolved("charge threw " + call.raised() + " when its request was lost before reaching"
                        + " the server (the balance did not move): when a timeout leaves you unsure, look for the"
                        + " marker; absent means the charge did not run, so send it again and return normally");
            }
            throw EX08.notSolved("charge threw " + call.raised() + " after the server had run the charge "
                    + call.runsText() + " times; run it exactly once and return normally");
        }
        if (call.moved() == EX08_TOTAL) {
            return;
        }
        if (call.moved() == 0) {
            throw EX08.notSolved("charge returned normally although " + (step.equals("request")
                    ? "its request never reached the server" : "the server ran nothing it was sent") + ": the balance"
                    + " did not move; a timeout means 'unknown', not 'done': look for the marker and send the charge"
                    + " again when it is absent");
        }
        throw EX08.notSolved(chargedTwice(call, account));
    }

    private static String checkCharge(LabSupport.Settings s, Jedis jedis, Charge charge) throws Exception {
        String account = LabSupport.key(EX08.alias(), "account:42");
        List<ChargeCall> calls = new ArrayList<>();
        try (FaultProxy proxy = new FaultProxy(s.host(), s.port(), account)) {
            System.out.println(String.format(Locale.ROOT, "Exercise 8: charge of %s (%d in all) to %s, through the"
                    + " check's proxy at %s:%d in front of %s; four calls:", EX08_AMOUNTS, EX08_TOTAL, account,
                    proxy.host(), proxy.port(), s.where()));
            String[][] steps = {
                {"plain", "order-1", null, "no fault"},
                {"reply", "order-2", "reply", "the replies to its first write to the account are dropped"},
                {"again", "order-2", null, "the same chargeId again, no fault"},
                {"request", "order-3", "request", "its first write to the account is dropped before the server"},
            };
            for (String[] step : steps) {
                ChargeCall call = callCharge(jedis, proxy, charge, account, step[0], step[1], step[2]);
                checkKeys(call);
                judge(call, account);
                calls.add(call);
                System.out.println(String.format(Locale.ROOT, "  %d. %s (%s): the balance moved by %,d (%s x %d)%s;"
                        + " charge returned after %.2f s", calls.size(), step[3], step[1], call.moved(),
                        call.runsText(), EX08_TOTAL, call.fired() == null ? "" : "; " + call.silence(),
                        call.seconds()));
            }
        }
        return String.format(Locale.ROOT, "charged exactly once when its replies were lost (returned after %.1f s)"
                + " and when its request was lost (%.1f s); the same chargeId again charged nothing",
                calls.get(1).seconds(), calls.get(3).seconds());
    }
}
