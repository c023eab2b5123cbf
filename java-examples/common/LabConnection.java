// How to reach the reader's Redis beyond host and port: user, password, database and TLS, from the
// environment variable REDIS_URL (never from the command line, where `ps` would show a password),
//   redis[s]://[user[:password]@]host[:port][/db][?ssl_ca_certs=/path/ca.pem]
// parsed here once, in plain JDK code, with the SSLContext built once from the CA's PEM. The
// client-specific builders (JedisSupport, LettuceSupport, SpringSupport, GlideSupport,
// RedissonSupport) take everything from here, and so do the one-sentence reasons for a refused
// connection (exit codes 4 and 5). Unset, nothing changes: plain TCP, no AUTH, database 0.
// A Redis Cluster may be set up apart from that server (its own users, no TLS): REDIS_CLUSTER_URL,
// of the same shape and naming one node (database 0), holds its settings, and cluster() hands them
// to everything that talks to a cluster node; unset, cluster() is get(), so one URL still serves
// a run that reaches one server or one cluster. Each instance names its variable in its sentences.
// In package pipelab, like LabDefaults, so that packaged examples (JMH's) can import it.
//SOURCES LabDefaults.java
//SOURCES LabProbe.java

package pipelab;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManagerFactory;

public final class LabConnection {

    public static final String VARIABLE = "REDIS_URL";

    /** A cluster's own settings, when they differ from REDIS_URL's server (see cluster()). */
    public static final String CLUSTER_VARIABLE = "REDIS_CLUSTER_URL";

    static final String SHAPE = "redis[s]://[user[:password]@]host[:port][/db][?ssl_ca_certs=/path/ca.pem]";

    private static final int DEFAULT_URL_PORT = 6379;

    // scheme, user info (up to the last '@' of the authority), host or [IPv6], port, db, query
    private static final Pattern URL = Pattern.compile(
            "(?i)(rediss?)://(?:([^/?#]*)@)?(\\[[0-9A-Fa-f:.]+\\]|[^:/?#@\\[\\]]+)(?::(\\d{1,5}))?(?:/(\\d*))?(?:\\?([^#]*))?");

    /** Redis 7.0 says "this user", 7.2 and later "User NAME"; both name the command in quotes. */
    private static final Pattern NOPERM_COMMAND = Pattern.compile("run the '([^']+)' command");

    private static LabConnection fromEnvironment;
    private static LabConnection clusterFromEnvironment;

    private final String variable;
    private final boolean set;
    private final String host;
    private final int port;
    private final String user;
    private final String password;
    private final int database;
    private final boolean tls;
    private final Path caFile;
    private SSLContext sslContext;
    private TrustManagerFactory trustManagers;
    private byte[] caPem;
    private final Set<String> plainProxies = ConcurrentHashMap.newKeySet();

    private LabConnection(String variable, boolean set, String host, int port, String user, String password,
                          int database, boolean tls, Path caFile) {
        this.variable = variable;
        this.set = set;
        this.host = host;
        this.port = port;
        this.user = user;
        this.password = password;
        this.database = database;
        this.tls = tls;
        this.caFile = caFile;
    }

    /**
     * REDIS_URL, parsed on first use; without it, the lab's plain defaults. A malformed one throws
     * Refused with exit code 2 (and again on every call, so no caller can miss it).
     */
    public static synchronized LabConnection get() {
        if (fromEnvironment == null) {
            String url = System.getenv(VARIABLE);
            fromEnvironment = url == null || url.isBlank()
                    ? new LabConnection(VARIABLE, false, LabDefaults.HOST, LabDefaults.port(), null, null, 0, false,
                            null)
                    : parse(VARIABLE, url.strip());
        }
        return fromEnvironment;
    }

    /**
     * The settings for a Redis Cluster's nodes: REDIS_CLUSTER_URL's when it is set, else get() itself
     * (the one URL of a run that reaches only a cluster, as chapter 5's do). Malformed: as get().
     */
    public static synchronized LabConnection cluster() {
        String url = System.getenv(CLUSTER_VARIABLE);
        if (url == null || url.isBlank()) {
            return get();
        }
        if (clusterFromEnvironment == null) {
            LabConnection parsed = parse(CLUSTER_VARIABLE, url.strip());
            if (parsed.database != 0) {
                throw malformed(CLUSTER_VARIABLE, "its database must be 0, the only one a cluster has");
            }
            clusterFromEnvironment = parsed;
        }
        return clusterFromEnvironment;
    }

    static LabConnection parse(String variable, String url) {
        Matcher m = URL.matcher(url);
        if (!m.matches()) {
            throw malformed(variable, "it does not have that shape");
        }
        boolean tls = m.group(1).equalsIgnoreCase("rediss");
        String user = null;
        String password = null;
        if (m.group(2) != null) {
            String info = m.group(2);
            int colon = info.indexOf(':');
            user = decode(variable, colon < 0 ? info : info.substring(0, colon), "the user name");
            // A user without a password authenticates with an empty one, as redis-py does.
            password = colon < 0 ? "" : decode(variable, info.substring(colon + 1), "the password");
            if (user.isEmpty()) {
                user = null; // redis://:password@host: plain AUTH password, the default user
                if (password.isEmpty()) {
                    password = null;
                }
            }
        }
        String host = m.group(3);
        if (host.startsWith("[")) {
            host = host.substring(1, host.length() - 1); // clients want the bare IPv6 literal
        }
        int port = m.group(4) == null ? DEFAULT_URL_PORT : Integer.parseInt(m.group(4));
        if (port < 1 || port > 65_535) {
            throw malformed(variable, "its port must be from 1 to 65535");
        }
        int database = 0;
        if (m.group(5) != null && !m.group(5).isEmpty()) {
            try {
                database = Integer.parseInt(m.group(5));
            } catch (NumberFormatException tooLong) {
                throw malformed(variable, "its database must be a small number");
            }
        }
        Path caFile = null;
        if (m.group(6) != null && !m.group(6).isEmpty()) {
            for (String pair : m.group(6).split("&")) {
                int eq = pair.indexOf('=');
                String name = eq < 0 ? pair : pair.substring(0, eq);
                if (!name.equals("ssl_ca_certs") || eq < 0 || eq == pair.length() - 1) {
                    throw malformed(variable, "the only query parameter it may carry is ssl_ca_certs=/path/ca.pem");
                }
                caFile = Path.of(decode(variable, pair.substring(eq + 1), "ssl_ca_certs"));
            }
            if (!tls) {
                throw malformed(variable, "ssl_ca_certs needs a TLS URL, one that starts with rediss://");
            }
        }
        return new LabConnection(variable, true, host, port, user, password, database, tls, caFile);
    }

    /** Percent-decoding as in a URL's user info: '+' stays '+' (java.net.URLDecoder would make it a space). */
    private static String decode(String variable, String text, String what) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(text.length());
        for (int i = 0; i < text.length(); i++) {
            char ch = text.charAt(i);
            if (ch == '%') {
                if (i + 2 >= text.length() || Character.digit(text.charAt(i + 1), 16) < 0
                        || Character.digit(text.charAt(i + 2), 16) < 0) {
                    throw malformed(variable, what + " has a '%' that is not followed by two hex digits");
                }
                out.write(Character.digit(text.charAt(i + 1), 16) * 16 + Character.digit(text.charAt(i + 2), 16));
                i += 2;
            } else {
                byte[] bytes = String.valueOf(ch).getBytes(StandardCharsets.UTF_8);
                out.write(bytes, 0, bytes.length);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    // The sentence never repeats the URL: it may hold a password.
    private static Refused malformed(String variable, String why) {
        return new Refused(2, variable + " is not a valid Redis URL (" + why + "); a valid one looks like " + SHAPE
                + ", with user and password percent-encoded.");
    }

    // ---------------------------------------------------------------- what it says

    /** The environment variable these settings come from (REDIS_URL or REDIS_CLUSTER_URL), for sentences. */
    public String variable() {
        return variable;
    }

    /** Whether the variable is set; when not, every client connects as the lab always did. */
    public boolean isSet() {
        return set;
    }

    /** The URL's host, or the lab's default: where to go when no host is given on the command line. */
    public String host() {
        return host;
    }

    /** The URL's port (6379 when it names none), or the lab's default when the variable is unset. */
    public int port() {
        return port;
    }

    /** The ACL user, or null for the default user. */
    public String user() {
        return user;
    }

    /** The password, or null for no AUTH at all. */
    public String password() {
        return password;
    }

    public boolean authenticates() {
        return password != null;
    }

    /** The user as Redis names it: "default" when the URL names none. */
    public String userName() {
        return user == null ? "default" : user;
    }

    public int database() {
        return database;
    }

    /** Whether the URL asks for TLS (rediss://). */
    public boolean tls() {
        return tls;
    }

    /**
     * Whether a connection to host:port speaks TLS: as the URL says, except to a proxy inside
     * this process that does the TLS to Redis itself (plainProxyAt). What the helpers ask.
     */
    public boolean tlsTo(String host, int port) {
        return tls && !plainProxies.contains(host + ":" + port);
    }

    /**
     * Marks host:port as a proxy of this process in front of Redis that speaks REDIS_URL's TLS to
     * Redis itself and plain TCP to its clients: exercise 8's check, which must read the commands
     * it relays. Connections to it, made with the helpers, then skip TLS (and still log in).
     */
    public void plainProxyAt(String host, int port) {
        plainProxies.add(host + ":" + port);
    }

    /** The PEM file of CA certificates to trust instead of the JDK's, or null. */
    public Path caFile() {
        return caFile;
    }

    // ---------------------------------------------------------------- TLS

    /**
     * The SSLContext every Java client's TLS uses: trusting the CA certificates of ssl_ca_certs
     * when the URL names a file, else the JDK's default trust store. Built once; `where`
     * (host:port) only names the server in the sentence when the CA file cannot be used.
     */
    public synchronized SSLContext sslContext(String where) {
        if (sslContext == null) {
            try {
                TrustManagerFactory trust = trustManagers(where);
                if (trust == null) {
                    sslContext = SSLContext.getDefault();
                } else {
                    SSLContext context = SSLContext.getInstance("TLS");
                    context.init(null, trust.getTrustManagers(), null);
                    sslContext = context;
                }
            } catch (GeneralSecurityException e) {
                throw new Refused(4, "Cannot set up TLS for Redis at " + where + ": " + e.getMessage()
                        + "; check the JDK's security setup.");
            }
        }
        return sslContext;
    }

    /**
     * The trust managers for ssl_ca_certs, or null when the URL names no CA file (the JDK's
     * defaults then apply). A missing, unreadable or certificate-less file stops with exit code 4.
     */
    public synchronized TrustManagerFactory trustManagers(String where) {
        if (caFile == null) {
            return null;
        }
        if (trustManagers == null) {
            byte[] pem = caPem(where);
            try (InputStream in = new java.io.ByteArrayInputStream(pem)) {
                Collection<? extends Certificate> certificates =
                        CertificateFactory.getInstance("X.509").generateCertificates(in);
                if (certificates.isEmpty()) {
                    throw new CertificateException("no certificate in it");
                }
                KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
                store.load(null, null);
                int i = 0;
                for (Certificate certificate : certificates) {
                    store.setCertificateEntry("ca-" + i++, certificate);
                }
                TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                factory.init(store);
                trustManagers = factory;
            } catch (GeneralSecurityException | IOException e) {
                throw new Refused(4, "The CA file " + caFile + " (ssl_ca_certs in " + variable + ", for Redis at " + where
                        + ") holds no usable PEM certificate (" + oneLine(e) + "); point ssl_ca_certs at the"
                        + " CA certificate that signed the server's.");
            }
        }
        return trustManagers;
    }

    /** The bytes of the ssl_ca_certs file (for clients that take PEM themselves), or null when none is named. */
    public synchronized byte[] caPem(String where) {
        if (caFile == null) {
            return null;
        }
        if (caPem == null) {
            try {
                caPem = Files.readAllBytes(caFile);
            } catch (IOException | SecurityException e) {
                String why = e instanceof java.nio.file.NoSuchFileException ? "no such file"
                        : e instanceof java.nio.file.AccessDeniedException ? "permission denied" : oneLine(e);
                throw new Refused(4, "Cannot read the CA file " + caFile + " that ssl_ca_certs in " + variable + " names"
                        + " for Redis at " + where + " (" + why + "); fix the path or the file's permissions.");
            }
        }
        return caPem;
    }

    /**
     * Hostname verification on: the certificate must name the host we dial (a SAN of the IP or
     * the DNS name). For clients that take SSLParameters (Jedis); the others verify by default.
     */
    public SSLParameters sslParameters() {
        SSLParameters parameters = new SSLParameters();
        parameters.setEndpointIdentificationAlgorithm("HTTPS");
        return parameters;
    }

    // ---------------------------------------------------------------- refusals

    /**
     * Ends an example with one sentence and an exit code: 2 malformed REDIS_URL (or REDIS_CLUSTER_URL),
     * 4 credentials, CA or TLS handshake refused, 5 an ACL rule forbids a command. An exception of its own, not
     * LabSupport's Stop, so that packaged examples can throw and catch it too.
     */
    public static final class Refused extends RuntimeException {
        private static final long serialVersionUID = 1L;
        public final int exitCode;

        public Refused(int exitCode, String message) {
            super(message, null, false, false); // the sentence is the report; no stack trace
            this.exitCode = exitCode;
        }
    }

    /**
     * What went wrong, when an exception from any client (Jedis, Lettuce, Redisson, Spring, GLIDE)
     * shows the server refusing REDIS_URL's credentials, a TLS handshake that failed, or an ACL rule
     * (NOPERM); null for anything else, which the caller reports its own way. Clients wrap the
     * cause differently, so the whole chain (causes and suppressed) is searched, by message.
     */
    public static Refused refusal(Throwable e, String where) {
        return refusal(e, where, get());
    }

    /** The same for a server reached with `c`'s settings (a cluster node's: cluster()), naming its variable. */
    public static Refused refusal(Throwable e, String where, LabConnection c) {
        String variable = c.variable;
        String nopermMessage = null;
        String authMessage = null;
        String tlsMessage = null;
        Throwable t = e;
        for (int depth = 0; t != null && depth < 20; depth++) {
            String m = t.getMessage() == null ? "" : t.getMessage();
            String upper = m.toUpperCase(Locale.ROOT);
            if (t instanceof Refused refused) {
                return refused;
            }
            if (nopermMessage == null && upper.contains("NOPERM")) {
                nopermMessage = m;
            }
            if (authMessage == null && (upper.contains("WRONGPASS") || upper.contains("NOAUTH")
                    || upper.contains("INVALID USERNAME-PASSWORD") || upper.contains("AUTHENTICATION REQUIRED")
                    || upper.contains("WITHOUT ANY PASSWORD CONFIGURED"))) {
                authMessage = m;
            }
            // The innermost TLS message says most ("unable to find valid certification path ...").
            if (t instanceof SSLException || t instanceof GeneralSecurityException || upper.contains("CERTIFICATE")
                    || upper.contains("HANDSHAKE") || upper.contains("UNRECOGNIZED SSL MESSAGE") || upper.contains("TLS")
                    || upper.contains("INITIALIZATION TIMED OUT")) { // Lettuce's, when the handshake hangs
                tlsMessage = m.isBlank() ? t.getClass().getSimpleName() : m;
            } else if (tlsMessage == null && t instanceof java.net.SocketTimeoutException && inHandshake(t)) {
                tlsMessage = m + " during the handshake"; // a plain server waits for the rest of a "command"
            }
            t = t.getCause() != null ? t.getCause() : t.getSuppressed().length > 0 ? t.getSuppressed()[0] : null;
        }
        if (nopermMessage != null) {
            Matcher command = NOPERM_COMMAND.matcher(nopermMessage);
            if (command.find()) {
                String name = command.group(1).toLowerCase(Locale.ROOT);
                return new Refused(5, "The ACL user '" + c.userName() + "' may not run '" + name + "' on Redis at "
                        + where + " (NOPERM): the lab needs it, so allow it (ACL SETUSER " + c.userName() + " +"
                        + name.replace(' ', '|') + ") or give the user the README's ACL line.");
            }
            return new Refused(5, "The ACL user '" + c.userName() + "' may not touch a key or channel the lab uses on"
                    + " Redis at " + where + " (" + oneLine(nopermMessage) + "): allow the lab's keys (~"
                    + LabDefaults.prefix() + "*) or give the user the README's ACL line.");
        }
        if (authMessage != null) {
            String upper = authMessage.toUpperCase(Locale.ROOT);
            if (upper.contains("WITHOUT ANY PASSWORD CONFIGURED")) {
                return new Refused(4, "Redis at " + where + " has no password set, but " + variable + " gives one:"
                        + " drop user and password from " + variable + ", or give the server a password (requirepass"
                        + " or ACL).");
            }
            if (!c.authenticates()) {
                return new Refused(4, "Redis at " + where + " requires a password (NOAUTH): put user and password in "
                        + variable + ", e.g. " + (c.tls ? "rediss" : "redis") + "://user:password@" + where + ".");
            }
            return new Refused(4, "Redis at " + where + " refused " + variable + "'s credentials for user '"
                    + c.userName() + "' (" + firstWord(authMessage) + "): check the user name and the password"
                    + " (percent-encoded) in " + variable + " against the server's ACL.");
        }
        if (tlsMessage != null && c.tls) {
            String upper = tlsMessage.toUpperCase(Locale.ROOT);
            if (upper.contains("UNRECOGNIZED SSL MESSAGE") || upper.contains("NOT AN SSL/TLS RECORD")
                    || upper.contains("CORRUPT MESSAGE") || upper.contains("INVALIDCONTENTTYPE")
                    || upper.contains("TIMED OUT") || upper.contains("TIMEOUT")) {
                return new Refused(4, "Redis at " + where + " did not answer the TLS handshake (" + oneLine(tlsMessage)
                        + "), and " + variable + " starts with rediss://: use redis:// if that port is plain, or give"
                        + " the server's TLS port.");
            }
            return new Refused(4, "The TLS handshake with Redis at " + where + " failed (" + oneLine(tlsMessage)
                    + "): check that " + (c.caFile == null ? "the JDK trusts the server's certificate (else name its CA"
                    + " in " + variable + "'s ssl_ca_certs=/path/ca.pem)"
                    : "ssl_ca_certs in " + variable + " (" + c.caFile
                    + ") holds the CA that signed the server's certificate") + ", that the certificate names "
                    + hostOf(where) + ", and that " + where + " is a TLS port.");
        }
        return null;
    }

    // ---------------------------------------------------------------- a probe with the JDK alone

    /**
     * What stops a client from connecting to host:port, found with a connection of the JDK's own
     * (LabProbe.probe): the first failure, or null when all of it works. Feed it to refusal().
     */
    public Exception probe(String host, int port, List<List<String>> commands) {
        return LabProbe.probe(this, host, port, commands);
    }

    /**
     * A plain connection to a TLS port: the server drops it at the first bytes, which clients
     * report as an end of stream, a reset, or a command that never got its reply. The hint for
     * the "cannot reach" sentence, or "".
     */
    public static String plainToTlsHint(String reason) {
        return plainToTlsHint(reason, get());
    }

    /** The same for a server reached with `c`'s settings. */
    public static String plainToTlsHint(String reason, LabConnection c) {
        String r = reason == null ? "" : reason.toLowerCase(Locale.ROOT);
        boolean dropped = r.contains("end of stream") || r.contains("connection reset") || r.contains("broken pipe")
                || r.contains("connection closed") || r.contains("timeout") || r.contains("timed out");
        return !c.tls && dropped ? " (if that port speaks TLS, " + c.variable + " must start with rediss://)" : "";
    }

    /** Whether the JDK's TLS handshake was running when `t` was thrown. */
    private static boolean inHandshake(Throwable t) {
        for (StackTraceElement frame : t.getStackTrace()) {
            if (frame.getMethodName().equals("startHandshake") || frame.getClassName().contains("Handshake")) {
                return true;
            }
        }
        return false;
    }

    private static String hostOf(String where) {
        int colon = where.lastIndexOf(':');
        return colon < 0 ? where : where.substring(0, colon);
    }

    /** The error code of Redis's reply ("WRONGPASS"), never the rest: some clients add what they sent. */
    private static String firstWord(String message) {
        Matcher code = Pattern.compile("\\b(WRONGPASS|NOAUTH)\\b").matcher(message);
        return code.find() ? code.group(1) : "wrong password";
    }

    /** A message on one line, without a final period and cut to a readable length. */
    static String oneLine(Object messageOrException) {
        String m = messageOrException instanceof Throwable t
                ? (t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage())
                : String.valueOf(messageOrException);
        m = m.strip().replaceAll("\\s+", " ");
        if (m.length() > 160) {
            m = m.substring(0, 157) + "...";
        }
        return m.endsWith(".") ? m.substring(0, m.length() - 1) : m;
    }
}
