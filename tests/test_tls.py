"""The lab's throw-away CA passes the strict verification Python 3.13 makes by default: checked on every
Python by asking for it (VERIFY_X509_STRICT), in a handshake over a socket pair, no server needed."""

from __future__ import annotations

import socket
import ssl
import threading

import pytest

from pipelab import tls


def handshake(files: tls.TlsFiles, flags: ssl.VerifyFlags) -> None:
    client_ctx = ssl.create_default_context(cafile=str(files.ca))
    client_ctx.verify_flags |= flags
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(files.cert, files.key)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        # The server side handshakes in a thread; a client that refuses the certificate ends it with an alert.
        serving = threading.Thread(target=lambda: _serve(server_ctx, theirs), daemon=True)
        serving.start()
        with client_ctx.wrap_socket(ours, server_hostname="127.0.0.1") as tls_sock:
            tls_sock.sendall(b"x")
        serving.join(5)


def _serve(ctx: ssl.SSLContext, sock: socket.socket) -> None:
    try:
        with ctx.wrap_socket(sock, server_side=True) as s:
            s.recv(1)
    except (ssl.SSLError, OSError):
        pass


def test_the_labs_certificates_pass_strict_verification(tmp_path):
    files = tls.make_ca(tmp_path)
    handshake(files, ssl.VERIFY_X509_STRICT)  # raises SSLCertVerificationError for a CA without keyUsage


def test_strict_verification_refuses_a_ca_without_key_usage(tmp_path, monkeypatch):
    """The check above can fail: a CA made the old way, without its key usage, is refused."""
    real = tls._openssl

    def without_key_usage(*args, cwd):
        if "keyUsage=critical,keyCertSign,cRLSign" in args:
            at = args.index("keyUsage=critical,keyCertSign,cRLSign")
            args = args[: at - 1] + args[at + 1 :]
        real(*args, cwd=cwd)

    monkeypatch.setattr(tls, "_openssl", without_key_usage)
    files = tls.make_ca(tmp_path)
    with pytest.raises(ssl.SSLCertVerificationError, match="key usage"):
        handshake(files, ssl.VERIFY_X509_STRICT)
