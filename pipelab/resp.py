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


# --8<-- [start:three_pings]
def three_pings(host: str, port: int) -> tuple[bytes, list[bytes]]:
    request = encode("PING") * 3  # three commands, one buffer
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(request)  # one write: the server finds all three in one read
        replies = read_replies(sock, 3)  # three +PONG, in order
    return request, replies
# --8<-- [end:three_pings]


def inline_ping(host: str, port: int) -> bytes:
    """The inline form `PING\\r\\n` that `printf | nc` sends works too."""
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(b"PING\r\n")
        return read_replies(sock, 1)[0]
