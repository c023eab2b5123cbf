// The few calls of toxiproxy's HTTP API that the lab's Java examples need (chapter 4's
// dropped pipeline, chapter 8's replayed one), with java.net.http and the Gson that
// LabSupport already declares. An example pulls it in with
//   //SOURCES ../common/Toxics.java
// Toxics are added to and removed from the one named proxy only, and only the example's own:
// every name starts with the prefix the example chooses.

import com.google.gson.JsonElement;
import com.google.gson.JsonParser;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

import redis.clients.jedis.Jedis;

final class Toxics {

    /** docker-compose.yml's toxiproxy API and proxy. */
    static final String DEFAULT_API = "http://127.0.0.1:8474";
    static final String DEFAULT_PROXY = "pipelab-redis";

    /** Upper bound for one API call (connect, request and answer). */
    static final Duration WAIT = Duration.ofSeconds(10);

    final String api;
    final String proxy;
    /** The bandwidth of the last addDrop(), in KB/s: examples report it. */
    long lastRate;

    private final String usage;
    private final String prefix;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    /**
     * Checks the two arguments' form only (no call yet); `usage` ends the sentences that
     * report a bad one, `prefix` starts the name of every toxic this example adds.
     */
    Toxics(String example, String usage, String api, String proxy, String prefix) {
        this.usage = usage;
        this.api = api.endsWith("/") ? api.substring(0, api.length() - 1) : api;
        this.proxy = proxy;
        this.prefix = prefix;
        try {
            URI uri = new URI(this.api);
            if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null) {
                throw new URISyntaxException(api, "not an http:// URL");
            }
        } catch (URISyntaxException e) {
            throw new LabSupport.Stop(2, example + ": toxiproxy-api-url must be an http URL such as "
                    + DEFAULT_API + ", not '" + api + "'; " + usage + ".");
        }
        if (!proxy.matches("[A-Za-z0-9._-]+")) {
            throw new LabSupport.Stop(2, example + ": proxy-name must be a toxiproxy proxy name such as "
                    + DEFAULT_PROXY + ", not '" + proxy + "'; " + usage + ".");
        }
    }

    /**
     * The API answers, the proxy exists and listens on the port we connect to, and carries no
     * toxics but ours (a latency toxic left by another run would change what arrives when).
     * Returns the proxy's upstream ("127.0.0.1:6379").
     */
    String check(int port) {
        String body;
        try {
            body = call("GET", "/proxies/" + proxy, null, 200, 404);
        } catch (IOException e) {
            throw new LabSupport.Stop(4, "Cannot reach the toxiproxy API at " + api + ": "
                    + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage())
                    + ". Start toxiproxy (docker compose up) or pass its API URL as toxiproxy-api-url; " + usage + ".");
        }
        if (body == null) {
            throw new LabSupport.Stop(2, "Toxiproxy at " + api + " has no proxy named '" + proxy
                    + "'; create it in front of Redis or pass its name as proxy-name; " + usage + ".");
        }
        JsonElement listen = JsonParser.parseString(body).getAsJsonObject().get("listen");
        JsonElement upstream = JsonParser.parseString(body).getAsJsonObject().get("upstream");
        String address = listen == null ? "an unknown address" : listen.getAsString();
        if (!address.endsWith(":" + port)) {
            throw new LabSupport.Stop(2, "Proxy '" + proxy + "' listens on " + address + ", not on port " + port
                    + "; pass the proxy's listen address.");
        }
        removeOurs(); // leftovers of an interrupted run
        List<String> others = names();
        if (!others.isEmpty()) {
            throw new LabSupport.Stop(2, "Proxy '" + proxy + "' already has toxics " + others
                    + "; remove them first, they would change what reaches Redis.");
        }
        return upstream == null ? "" : upstream.getAsString();
    }

    /**
     * A connection dropped in the middle of a transfer of `bytes` towards Redis: `bandwidth`
     * upstream at the rate (KB/s = bytes per ms) at which the transfer takes `passMs`, and
     * `reset_peer` downstream, which swallows Redis's replies and closes the client's
     * connection `resetAfterMs` after the first of them (toxiproxy's ResetToxic starts its
     * clock at the first chunk it sees). Existing connections get them too: toxiproxy adds a
     * toxic to every link of the proxy.
     */
    void addDrop(long bytes, long passMs, long resetAfterMs) throws IOException {
        lastRate = Math.max(1, (bytes + passMs - 1) / passMs);
        add("bandwidth", "bandwidth", "upstream", Map.of("rate", lastRate));
        add("reset", "reset_peer", "downstream", Map.of("timeout", resetAfterMs));
    }

    /**
     * Removes both, reset first so that no new connection gets it. Deleting a reset_peer
     * whose clock is running waits for it to fire (its Pipe cannot be interrupted while it
     * sleeps); deleting the bandwidth toxic lets the data it still holds through at once.
     */
    void removeDrop() throws IOException {
        remove("reset");
        remove("bandwidth");
    }

    /** One toxic named prefix + `name`, on every connection of the proxy, toxicity 1. */
    void add(String name, String type, String stream, Map<String, Object> attributes) throws IOException {
        String json = LabSupport.toJson(Map.of("name", prefix + name, "type", type, "stream", stream,
                "toxicity", 1.0, "attributes", attributes));
        call("POST", "/proxies/" + proxy + "/toxics", json, 200);
    }

    /** DELETE prefix + `name`; a toxic that is already gone (404) is fine. */
    void remove(String name) throws IOException {
        call("DELETE", "/proxies/" + proxy + "/toxics/" + prefix + name, null, 204, 200, 404);
    }

    /** For finally blocks: our toxics gone, and a problem reported rather than thrown. */
    void removeOurs() {
        try {
            for (String name : names()) {
                if (name.startsWith(prefix)) {
                    call("DELETE", "/proxies/" + proxy + "/toxics/" + name, null, 204, 200, 404);
                }
            }
        } catch (IOException | RuntimeException e) {
            System.err.println("Warning: could not remove toxics " + prefix + "* from proxy '" + proxy
                    + "' at " + api + ": " + e.getMessage());
        }
    }

    private List<String> names() {
        try {
            String body = call("GET", "/proxies/" + proxy + "/toxics", null, 200);
            List<String> names = new ArrayList<>();
            for (JsonElement toxic : JsonParser.parseString(body).getAsJsonArray()) {
                names.add(toxic.getAsJsonObject().get("name").getAsString());
            }
            return names;
        } catch (IOException e) {
            throw new IllegalStateException("toxiproxy: " + e.getMessage(), e);
        }
    }

    /** One request; returns the body, or null for a 404 the caller accepts. */
    private String call(String method, String path, String json, int... expected) throws IOException {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(api + path)).timeout(WAIT)
                .method(method, json == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(json));
        if (json != null) {
            request.header("Content-Type", "application/json");
        }
        HttpResponse<String> response;
        try {
            response = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        } catch (IOException e) {
            // HttpClient's ConnectException carries no message; say what failed.
            throw e.getMessage() != null ? e
                    : new IOException(e instanceof java.net.ConnectException ? "connection refused" : e.getClass().getSimpleName(), e);
        }
        for (int status : expected) {
            if (response.statusCode() == status) {
                return status == 404 ? null : response.body();
            }
        }
        throw new IOException(method + " " + path + " answered " + response.statusCode() + ": " + response.body().strip());
    }

    // ---------------------------------------------------------------- counting what a drop let through

    /** Bytes of one INCR in RESP: *2 $4 INCR $len key, each line ending in CRLF. */
    static int incrBytes(String key) {
        int keyLength = key.getBytes(StandardCharsets.UTF_8).length;
        return ("*2\r\n$4\r\nINCR\r\n$" + keyLength + "\r\n").length() + keyLength + 2;
    }

    /** The counter's value; a key that was never written counts 0. */
    static long counter(Jedis control, String key) {
        String value = control.get(key);
        return value == null ? 0 : Long.parseLong(value);
    }

    /**
     * Waits until Redis no longer lists the dropped connection: it has read and applied all it
     * will ever get from it, so a counter read afterwards is final. (The proxy delivers the
     * data it was still holding before it closes its side towards Redis.)
     */
    static void awaitServerClosed(Jedis control, long clientId) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!control.clientList(clientId).isBlank()) {
            if (System.nanoTime() > deadline) {
                throw LabSupport.failure("Redis still has the dropped connection (client id " + clientId + ") open after "
                        + WAIT.toSeconds() + " s, so its counter is not final");
            }
            Thread.sleep(10);
        }
    }

    /** What the futures of a dropped pipeline of INCRs said: completed, failed (and why, in order), lowest reply. */
    record Outcomes(int ok, int failed, long lowest, Map<String, Integer> errors) {
        String firstError() {
            return errors.isEmpty() ? null : errors.keySet().iterator().next();
        }
    }

    /**
     * Awaits every future until `deadlineNanos` (System.nanoTime()), counting instead of stopping at
     * the first failure as LettuceFutures.awaitAll would. An INCR's reply is the counter after it, so
     * `lowest` - 1 is what the server held when the first re-sent command ran.
     */
    static Outcomes awaitIncrs(List<? extends Future<Long>> futures, long deadlineNanos,
                               Function<Exception, String> describe) throws InterruptedException {
        int ok = 0;
        int failed = 0;
        long lowest = Long.MAX_VALUE;
        Map<String, Integer> errors = new LinkedHashMap<>();
        for (Future<Long> future : futures) {
            try {
                lowest = Math.min(lowest, future.get(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS));
                ok++;
            } catch (ExecutionException | CancellationException | TimeoutException e) {
                failed++;
                errors.merge(describe.apply(e), 1, Integer::sum);
            }
        }
        return new Outcomes(ok, failed, lowest, errors);
    }
}
