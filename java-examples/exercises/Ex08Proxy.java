//SOURCES ExerciseCheck.java

// Exercise 8's fault-injecting proxy and what it reads of the commands passing through, apart from
// the check so that each file stays under 600 lines; Ex08Check extends this class to reach its
// members by name, as the checks reach ExerciseCheck's.

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import javax.net.ssl.SSLSocket;

import pipelab.LabConnection;

class Ex08Proxy extends ExerciseCheck {

    /** A silenced connection stays open this long, then the proxy closes it (as the Python check). */
    static final long EX08_HOLD_MS = 6_000;
    static final Set<String> EX08_WRITES = Set.of("SET", "SETNX", "SETEX", "PSETEX", "GETSET", "MSET",
            "MSETNX", "APPEND", "INCR", "DECR", "INCRBY", "DECRBY", "INCRBYFLOAT", "DEL", "UNLINK", "GETDEL", "GETEX",
            "EXPIRE", "HSET", "HSETNX", "HINCRBY", "SADD", "LPUSH", "RPUSH", "ZADD");
    static final Set<String> EX08_SCRIPTS = Set.of("EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL",
            "FCALL_RO");

    Ex08Proxy() {  // extended by Ex08Check, never made
    }

    /** The keys a write or a script names (a script's KEYS); none for any other command. */
    static List<String> writtenKeys(List<String> args) {
        String name = args.get(0).toUpperCase(Locale.ROOT);
        if (EX08_SCRIPTS.contains(name) && args.size() > 2 && args.get(2).matches("\\d+")) {
            return args.subList(3, Math.min(args.size(), 3 + Integer.parseInt(args.get(2))));
        }
        if (name.equals("MSET") || name.equals("MSETNX")) {
            List<String> keys = new ArrayList<>();
            for (int i = 1; i < args.size(); i += 2) {
                keys.add(args.get(i));
            }
            return keys;
        }
        return EX08_WRITES.contains(name) && args.size() > 1 ? List.of(args.get(1)) : List.of();
    }

    /** The complete commands at the head of buf[0, len) go to `out`; returns the bytes they took. */
    static int parseCommands(byte[] buf, int len, List<List<String>> out) {
        int at = 0;
        while (at < len) {
            int start = at;
            int end = crlf(buf, at, len);
            if (end < 0) {
                return start;
            }
            if (buf[at] != '*') { // an inline command: one line of words
                String line = new String(buf, at, end - at, StandardCharsets.UTF_8).trim();
                if (!line.isEmpty()) {
                    out.add(List.of(line.split("\\s+")));
                }
                at = end + 2;
                continue;
            }
            int count = Integer.parseInt(new String(buf, at + 1, end - at - 1, StandardCharsets.US_ASCII));
            at = end + 2;
            List<String> args = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                int head = crlf(buf, at, len);
                if (head < 0) {
                    return start;
                }
                int length = Integer.parseInt(new String(buf, at + 1, head - at - 1, StandardCharsets.US_ASCII));
                if (len < head + 2 + length + 2) {
                    return start;
                }
                args.add(new String(buf, head + 2, length, StandardCharsets.UTF_8));
                at = head + 4 + length;
            }
            if (!args.isEmpty()) {
                out.add(args);
            }
        }
        return at;
    }

    private static int crlf(byte[] buf, int from, int len) {
        for (int i = from; i + 1 < len; i++) {
            if (buf[i] == '\r' && buf[i + 1] == '\n') {
                return i;
            }
        }
        return -1;
    }

    /** One command the student's client sent through the proxy. */
    record Sent(String step, int link, List<String> args, boolean inMulti, boolean forwarded) {
        String name() {
            return args.get(0).toUpperCase(Locale.ROOT);
        }
    }

    /** One connection through the proxy, and what the check did to it. */
    static final class Link {
        final int number;
        final Socket client;
        final Socket upstream;
        volatile String fault; // "reply" or "request": what the proxy drops on it from the fault on
        volatile long faultAt;
        volatile long closedAt;
        volatile String closedBy; // "client" (it gave up), "check" (after EX08_HOLD_MS), "server", "end"
        boolean inMulti;

        Link(int number, Socket client, Socket upstream) {
            this.number = number;
            this.client = client;
            this.upstream = upstream;
        }

        double silentSeconds() {
            return (closedAt - faultAt) / 1e9;
        }
    }

    /**
     * A TCP proxy on loopback in front of the lab's Redis, handed to charge instead of it. Armed
     * with a fault, it waits for the first command that writes the account (INCRBY, a script
     * naming it, ...) and, on that connection only, drops from then on the replies ("reply": the
     * server ran the commands, the client hears nothing) or the requests ("request": nothing more
     * reaches the server). That connection stays open and silent until the client gives up on
     * it, or EX08_HOLD_MS, then the proxy closes it; every other connection, and every later
     * one, passes untouched. It records every command it sees. No toxiproxy (a laptop without
     * Go has none), and one silenced connection makes the count exact: a resend meets a healthy
     * connection and runs. With REDIS_URL's TLS it speaks TLS to Redis itself and plain TCP on
     * loopback to the student's client (LabConnection.plainProxyAt), or it could not read the commands.
     */
    static final class FaultProxy implements AutoCloseable {
        private final String targetHost;
        private final int targetPort;
        private final String account;
        private final ServerSocket listener;
        private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(daemon("ex08-hold"));
        private final List<Link> links = new ArrayList<>();
        private final List<Sent> sent = new ArrayList<>();
        private String step = "";
        private String fault;
        private Link fired;

        FaultProxy(String targetHost, int targetPort, String account) throws IOException {
            this.targetHost = targetHost;
            this.targetPort = targetPort;
            this.account = account;
            listener = new ServerSocket();
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            LabConnection.get().plainProxyAt(host(), port());
            daemon("ex08-proxy").newThread(this::accept).start();
        }

        String host() {
            return listener.getInetAddress().getHostAddress();
        }

        int port() {
            return listener.getLocalPort();
        }

        synchronized void arm(String step, String fault) {
            this.step = step;
            this.fault = fault;
            this.fired = null;
        }

        /** No more faults; the connection the last one hit, or null. */
        synchronized Link disarm() {
            fault = null;
            return fired;
        }

        synchronized int sentCount() {
            return sent.size();
        }

        synchronized List<Sent> sentSince(int first) {
            return new ArrayList<>(sent.subList(first, sent.size()));
        }

        private void accept() {
            while (true) {
                Socket client;
                try {
                    client = listener.accept();
                } catch (IOException e) {
                    return; // the listener closed: the check is over
                }
                Socket upstream = new Socket();
                try {
                    upstream.connect(new InetSocketAddress(targetHost, targetPort), 5_000);
                    upstream = secured(upstream);
                } catch (IOException | RuntimeException e) {
                    closeQuietly(client); // the student's client sees a refused connection, as without the proxy
                    closeQuietly(upstream);
                    continue;
                }
                Link link;
                synchronized (this) {
                    link = new Link(links.size() + 1, client, upstream);
                    links.add(link);
                }
                daemon("ex08-requests").newThread(() -> requests(link)).start();
                daemon("ex08-replies").newThread(() -> replies(link)).start();
            }
        }

        /** The connection to Redis in TLS when REDIS_URL says so: the same context and checks as every client's. */
        private Socket secured(Socket upstream) throws IOException {
            LabConnection c = LabConnection.get();
            if (!c.tlsTo(targetHost, targetPort)) {
                return upstream;
            }
            String where = targetHost + ":" + targetPort;
            SSLSocket tls = (SSLSocket) c.sslContext(where).getSocketFactory()
                    .createSocket(upstream, targetHost, targetPort, true);
            tls.setSSLParameters(c.sslParameters());
            tls.startHandshake();
            return tls;
        }

        private void requests(Link link) {
            byte[] chunk = new byte[65_536];
            byte[] pending = new byte[65_536];
            int pendingLen = 0;
            String end = "client";
            try {
                InputStream in = link.client.getInputStream();
                OutputStream out = link.upstream.getOutputStream();
                int n;
                while ((n = in.read(chunk)) >= 0) {
                    if (pendingLen + n > pending.length) {
                        pending = Arrays.copyOf(pending, Math.max(pending.length * 2, pendingLen + n));
                    }
                    System.arraycopy(chunk, 0, pending, pendingLen, n);
                    pendingLen += n;
                    List<List<String>> commands = new ArrayList<>();
                    int used = parseCommands(pending, pendingLen, commands);
                    System.arraycopy(pending, used, pending, 0, pendingLen - used);
                    pendingLen -= used;
                    boolean forward;
                    synchronized (this) {
                        // Decided before the chunk is forwarded: no reply to it can slip through.
                        if (fault != null && fired == null
                                && commands.stream().anyMatch(c -> writtenKeys(c).contains(account))) {
                            link.fault = fault;
                            link.faultAt = System.nanoTime();
                            fired = link;
                            timer.schedule(() -> close(link, "check"), EX08_HOLD_MS, TimeUnit.MILLISECONDS);
                        }
                        forward = !"request".equals(link.fault);
                        for (List<String> c : commands) {
                            String name = c.get(0).toUpperCase(Locale.ROOT);
                            sent.add(new Sent(step, link.number, c, link.inMulti && !name.equals("EXEC"), forward));
                            if (name.equals("MULTI")) {
                                link.inMulti = true;
                            } else if (name.equals("EXEC") || name.equals("DISCARD")) {
                                link.inMulti = false;
                            }
                        }
                    }
                    if (forward) {
                        end = "server";
                        out.write(chunk, 0, n);
                        out.flush();
                        end = "client";
                    }
                }
            } catch (IOException e) {
                // the side named by `end` went away
            }
            close(link, end);
        }

        private void replies(Link link) {
            byte[] chunk = new byte[65_536];
            String end = "server";
            try {
                InputStream in = link.upstream.getInputStream();
                OutputStream out = link.client.getOutputStream();
                int n;
                while ((n = in.read(chunk)) >= 0) {
                    if (link.fault == null) {
                        end = "client";
                        out.write(chunk, 0, n);
                        out.flush();
                        end = "server";
                    }
                }
            } catch (IOException e) {
                // the side named by `end` went away
            }
            close(link, end);
        }

        private void close(Link link, String by) {
            synchronized (this) {
                if (link.closedBy != null) {
                    return;
                }
                link.closedAt = System.nanoTime();
                link.closedBy = by;
            }
            closeQuietly(link.client);
            closeQuietly(link.upstream);
        }

        @Override
        public void close() {
            closeQuietly(listener);
            timer.shutdownNow();
            List<Link> all;
            synchronized (this) {
                all = new ArrayList<>(links);
            }
            for (Link link : all) {
                close(link, "end");
            }
        }
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception ignored) {
            // already closed
        }
    }

    /** Daemon threads: a student's call that never returns must not keep the JVM up. */
    static java.util.concurrent.ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }
}
