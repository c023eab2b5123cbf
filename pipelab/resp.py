"""RESP by hand: what a client library writes and reads, with nothing but a socket."""

from __future__ import annotations

import socket


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


def connect(host: str, port: int) -> socket.socket:
    """A socket as client libraries open one: TCP_NODELAY, so the kernel never holds a write back."""
    sock = socket.create_connection((host, port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock
