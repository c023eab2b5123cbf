// LabConnection's probe: what stops a client from connecting, found with a connection of the JDK's
// own (GlideSupport asks, through LabConnection.probe). Apart so that LabConnection stays under 600 lines.

package pipelab;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import javax.net.ssl.SSLSocket;

final class LabProbe {

    private LabProbe() {
    }

    /** An error reply of Redis's, as the probe met it ("WRONGPASS ...", "NOPERM ..."). */
    public static final class ErrorReply extends Exception {
        private static final long serialVersionUID = 1L;

        ErrorReply(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * What stops a client from connecting to host:port, found with a connection of the JDK's own:
     * TCP, TLS as the URL says (same SSLContext, hostname verified), AUTH, SELECT, then
     * `commands` (each a command and its arguments, as the client sends them on connecting).
     * Returns the first failure (the socket's exception, or the server's ErrorReply), or null when
     * all of it works. For clients whose own exception has lost the server's reason (GLIDE says
     * "Connection refused" for a wrong password too); feed the result to refusal().
     */
    static Exception probe(LabConnection c, String host, int port, List<List<String>> commands) {
        String where = host + ":" + port;
        try (Socket plain = new Socket()) {
            plain.connect(new InetSocketAddress(host, port), 5_000);
            plain.setSoTimeout(5_000);
            Socket socket = plain;
            if (c.tlsTo(host, port)) {
                SSLSocket secure = (SSLSocket) c.sslContext(where).getSocketFactory().createSocket(plain, host, port, true);
                secure.setSSLParameters(c.sslParameters());
                secure.startHandshake();
                socket = secure;
            }
            List<List<String>> all = new ArrayList<>();
            if (c.password() != null) {
                all.add(c.user() == null ? List.of("AUTH", c.password()) : List.of("AUTH", c.user(), c.password()));
            }
            if (c.database() != 0) {
                all.add(List.of("SELECT", Integer.toString(c.database())));
            }
            all.addAll(commands);
            OutputStream out = socket.getOutputStream();
            InputStream in = new java.io.BufferedInputStream(socket.getInputStream());
            for (List<String> command : all) {
                ByteArrayOutputStream request = new ByteArrayOutputStream();
                request.writeBytes(("*" + command.size() + "\r\n").getBytes(StandardCharsets.UTF_8));
                for (String arg : command) {
                    byte[] bytes = arg.getBytes(StandardCharsets.UTF_8);
                    request.writeBytes(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.UTF_8));
                    request.writeBytes(bytes);
                    request.writeBytes("\r\n".getBytes(StandardCharsets.UTF_8));
                }
                out.write(request.toByteArray());
                out.flush();
                String reply = line(in);
                if (reply.startsWith("-")) {
                    return new ErrorReply(reply.substring(1));
                }
                if (reply.startsWith("$")) { // a bulk string (INFO's): skip its bytes and the CRLF
                    in.skipNBytes(Math.max(0, Integer.parseInt(reply.substring(1))) + 2L);
                }
            }
            return null;
        } catch (IOException | RuntimeException e) {
            return e; // a Refused (the CA file) included
        }
    }

    private static String line(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) >= 0 && b != '\n') {
            if (b != '\r') {
                line.write(b);
            }
        }
        if (b < 0 && line.size() == 0) {
            throw new java.io.EOFException("Unexpected end of stream");
        }
        return line.toString(StandardCharsets.UTF_8);
    }
}
