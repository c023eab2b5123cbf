"""RESP by hand: what a client library writes and reads, with nothing but a socket."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from .errors import LabError

if TYPE_CHECKING:
    from .server import Endpoint


def encode(*args: str | bytes) -> bytes:
    """A command as a RESP array of bulk strings: *<count>, then $<length> and the bytes of each argument."""
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg.encode() if isinstance(arg, str) else arg
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def read_replies(sock: socket.socket, count: int) -> list[bytes]:
    """Read `count` simple-string replies (+PONG\\r\\n ...); enough for PING, no full parser."""
    buf = b""
    while buf.count(b"\r\n") < count:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("server closed the connection")
        buf += chunk
    return buf.split(b"\r\n")[:count]


def read_bytes(sock: socket.socket, count: int) -> None:
    """Read exactly `count` bytes (the replies), or fail if the server hangs up."""
    view = memoryview(bytearray(count))
    got = 0
    while got < count:
        n = sock.recv_into(view[got:])
        if not n:
            raise ConnectionError("server closed the connection")
        got += n


def connect(endpoint: Endpoint, timeout: float = 30) -> socket.socket:
    """A socket as client libraries open one: TCP_NODELAY, so the kernel never holds a write back;
    wrapped in TLS, logged in and on the database when the endpoint's URL asks for them."""
    sock = socket.create_connection((endpoint.host, endpoint.port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if context := endpoint.ssl_context():
        sock = context.wrap_socket(sock, server_hostname=endpoint.host)
    setup = []
    if endpoint.password is not None:
        setup.append(encode("AUTH", *filter(None, [endpoint.username]), endpoint.password))
    if endpoint.db:
        setup.append(encode("SELECT", str(endpoint.db)))
    if setup:
        sock.sendall(b"".join(setup))
        refused = [r for r in read_replies(sock, len(setup)) if not r.startswith(b"+")]
        if refused:
            sock.close()
            raise LabError(
                f"Redis at {endpoint.where} refused the login or database in REDIS_URL: {refused[0][1:].decode()}."
            )
    return sock
