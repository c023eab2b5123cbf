"""Exercise 8, charge once: a charge that a dropped connection and a retry cannot apply twice."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from ...errors import LabError
from ...lab import Lab
from ...server import Endpoint
from .common import NotSolved, _call, _fail, _own_keys, _prefix, _solved

EX08_AMOUNTS = (7, 12, 19, 25, 37)  # 100 in all: a balance that moved by 200 means the charge ran twice
EX08_HOLD_S = 6.0  # a silenced connection stays open this long (past redis-py's 5 s socket_timeout), then closes
EX08_BOUND_S = 20.0  # a call still running after this long is reported as hanging
EX08_WRITES = frozenset(
    {
        "SET",
        "SETNX",
        "SETEX",
        "PSETEX",
        "GETSET",
        "MSET",
        "MSETNX",
        "APPEND",
        "INCR",
        "DECR",
        "INCRBY",
        "DECRBY",
        "INCRBYFLOAT",
        "DEL",
        "UNLINK",
        "GETDEL",
        "GETEX",
        "EXPIRE",
        "HSET",
        "HSETNX",
        "HINCRBY",
        "SADD",
        "LPUSH",
        "RPUSH",
        "ZADD",
    }
)
EX08_SCRIPTS = frozenset({"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"})


def _resp_commands(buf: bytearray) -> list[list[bytes]]:
    """The complete commands at the head of `buf`, removed from it; a command cut by the chunk stays."""
    out: list[list[bytes]] = []
    while buf:
        if buf[:1] != b"*":  # an inline command: one line of words
            end = buf.find(b"\r\n")
            if end < 0:
                break
            line = bytes(buf[:end])
            del buf[: end + 2]
            if line.split():
                out.append(line.split())
            continue
        end = buf.find(b"\r\n")
        if end < 0:
            break
        count, at, args = int(buf[1:end]), end + 2, []
        for _ in range(count):
            head = buf.find(b"\r\n", at)
            if head < 0:
                return out
            length = int(buf[at + 1 : head])
            if len(buf) < head + 2 + length + 2:
                return out
            args.append(bytes(buf[head + 2 : head + 2 + length]))
            at = head + 4 + length
        del buf[:at]
        if args:
            out.append(args)
    return out


def _written_keys(args: tuple[str, ...]) -> list[str]:
    """The keys a write or a script names (a script's KEYS), or none for any other command."""
    name = args[0].upper()
    if name in EX08_SCRIPTS and len(args) > 2 and args[2].isdigit():
        return list(args[3 : 3 + int(args[2])])
    if name in ("MSET", "MSETNX"):
        return list(args[1::2])
    return [args[1]] if name in EX08_WRITES and len(args) > 1 else []


@dataclass
class _Link:
    """One connection through the check's proxy, and what the check did to it."""

    number: int
    fault: str | None = None  # "reply" or "request": what the proxy drops on it from the fault on
    fault_at: float | None = None
    closed_at: float | None = None
    closed_by: str | None = None  # "client" (it gave up), "check" (after EX08_HOLD_S), "server", "end"
    in_multi: bool = False
    sockets: tuple = ()


@dataclass(frozen=True)
class _Sent:
    """One command the reader's client sent through the proxy."""

    step: str
    link: int
    args: tuple[str, ...]
    in_multi: bool  # queued between MULTI and EXEC on its connection
    forwarded: bool


class _FaultProxy:
    """A TCP proxy on loopback in front of the lab's Redis, handed to the reader's function instead of it.
    Armed with a fault, it waits for the first command that writes the account (INCRBY, a script naming it,
    ...) and, on that connection only, drops from then on the replies ("reply": the server ran the commands,
    the client hears nothing) or the requests ("request": nothing more reaches the server). The connection
    stays open and silent until the client gives up on it, or EX08_HOLD_S, then the proxy closes it. Every
    other connection, and every later one, passes untouched. It records every command it sees.
    No toxiproxy (a laptop without Go has none), and one silenced connection makes the count exact:
    a resend meets a healthy connection and runs."""

    def __init__(self, target: Endpoint, account: str):
        self.target, self.account = target, account
        self.sent: list[_Sent] = []
        self.links: list[_Link] = []
        self.fired: _Link | None = None
        self._step, self._fault = "", None
        self._lock = threading.Lock()
        self._timers: list[threading.Timer] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.host, self.port = self._listener.getsockname()[:2]
        threading.Thread(target=self._accept, daemon=True, name="ex08-proxy").start()

    def __enter__(self) -> _FaultProxy:
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() below (close() alone may not)
        except OSError:
            pass
        self._listener.close()
        for timer in self._timers:
            timer.cancel()
        for link in list(self.links):
            self._close(link, "end")

    def arm(self, step: str, fault: str | None) -> None:
        with self._lock:
            self._step, self._fault, self.fired = step, fault, None

    def disarm(self) -> _Link | None:
        """No more faults; the connection the last one hit, if it hit one."""
        with self._lock:
            self._fault = None
            return self.fired

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # the listener closed: the check is over
                return
            try:
                upstream = socket.create_connection((self.target.host, self.target.port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()  # the reader's client sees a refused connection, as without the proxy
                continue
            with self._lock:
                link = _Link(len(self.links) + 1, sockets=(client, upstream))
                self.links.append(link)
            threading.Thread(target=self._requests, args=(link,), daemon=True).start()
            threading.Thread(target=self._replies, args=(link,), daemon=True).start()

    def _writes_account(self, args: tuple[str, ...]) -> bool:
        return self.account in _written_keys(args)

    def _requests(self, link: _Link) -> None:
        client, upstream = link.sockets
        pending = bytearray()
        while True:
            try:
                data = client.recv(65536)
            except OSError:
                data = b""
            if not data:
                self._close(link, "client")
                return
            pending += data
            commands = [tuple(a.decode("utf-8", "replace") for a in c) for c in _resp_commands(pending)]
            with self._lock:
                # Decided before the chunk is forwarded: no reply to it can slip through.
                if self._fault and self.fired is None and any(map(self._writes_account, commands)):
                    link.fault, link.fault_at, self.fired = self._fault, time.monotonic(), link
                    timer = threading.Timer(EX08_HOLD_S, self._close, (link, "check"))
                    timer.daemon = True
                    timer.start()
                    self._timers.append(timer)
                forward = link.fault != "request"
                for args in commands:
                    name = args[0].upper()
                    self.sent.append(_Sent(self._step, link.number, args, link.in_multi and name != "EXEC", forward))
                    if name == "MULTI":
                        link.in_multi = True
                    elif name in ("EXEC", "DISCARD"):
                        link.in_multi = False
            if forward:
                try:
                    upstream.sendall(data)
                except OSError:
                    self._close(link, "server")
                    return

    def _replies(self, link: _Link) -> None:
        client, upstream = link.sockets
        while True:
            try:
                data = upstream.recv(65536)
            except OSError:
                data = b""
            if not data:
                self._close(link, "server")
                return
            if link.fault is None:
                try:
                    client.sendall(data)
                except OSError:
                    self._close(link, "client")
                    return

    def _close(self, link: _Link, by: str) -> None:
        with self._lock:
            if link.closed_at is not None:
                return
            link.closed_at, link.closed_by = time.monotonic(), by
        for sock in link.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


@dataclass
class _Charge:
    """One call of the reader's charge through the proxy, and what the server's balance says about it."""

    step: str
    charge_id: str
    fault: str | None
    error: BaseException | None
    seconds: float
    hung: bool
    moved: int  # how much the balance moved during the call
    fired: _Link | None
    sent: list[_Sent]

    @property
    def runs(self) -> float:
        return self.moved / sum(EX08_AMOUNTS)

    def raised(self) -> str:
        text = " ".join(str(self.error).split())
        return f"{type(self.error).__name__} ({text[:90] + '...' if len(text) > 90 else text or 'no message'})"

    def sends(self, account: str) -> int:
        """On how many connections a write to the account reached the server."""
        return len({s.link for s in self.sent if s.forwarded and account in _written_keys(s.args)})

    def silence(self) -> str:
        """How the silenced connection ended, for the sentences below."""
        link = self.fired
        if link is None or link.closed_at is None:
            return "the connection whose replies went silent was still open"
        if link.closed_by == "client":
            return f"your client gave up on the silent connection after {link.closed_at - link.fault_at:.1f} s"
        return f"the check closed the silent connection after {EX08_HOLD_S:g} s, your client still waiting"


def _balance(client: redis.Redis, account: str) -> int:
    value = client.get(account)
    try:
        return int(value or 0)
    except ValueError:
        raise _fail(8, f"{account} holds {value!r}, not a whole number; INCRBY each amount into it") from None


def _charge(
    client: redis.Redis,
    proxy: _FaultProxy,
    charge: Callable,
    account: str,
    step: str,
    charge_id: str,
    fault: str | None,
) -> _Charge:
    """charge(proxy host, proxy port, account, charge_id, amounts) on a thread of its own, bounded."""
    before = _balance(client, account)
    first = len(proxy.sent)
    proxy.arm(step, fault)
    box: list[BaseException] = []

    def run() -> None:
        try:
            _call(8, charge, proxy.host, proxy.port, account, charge_id, list(EX08_AMOUNTS))
        except BaseException as err:  # noqa: BLE001 (reported below, from the check's thread)
            box.append(err)

    worker = threading.Thread(target=run, daemon=True, name="ex08-charge")
    start = time.perf_counter()
    worker.start()
    worker.join(EX08_BOUND_S)
    seconds = time.perf_counter() - start
    fired = proxy.disarm()
    if box and isinstance(box[0], NotSolved):
        raise box[0]
    time.sleep(0.1)  # a resend still on the wire reaches the server before the balance is read
    return _Charge(
        step,
        charge_id,
        fault,
        box[0] if box else None,
        seconds,
        worker.is_alive(),
        _balance(client, account) - before,
        fired,
        proxy.sent[first:],
    )


def _check_keys(call: _Charge) -> None:
    outside = sorted({k for s in call.sent for k in _written_keys(s.args) if not k.startswith(_prefix(8))})
    if outside:
        raise _fail(
            8,
            f"charge wrote {outside[0]!r}, outside {_prefix(8)}; keep every key it writes, the marker "
            f"too, under {_prefix(8)}, which the check deletes when it ends (delete {outside[0]!r} "
            "yourself)",
        )


def _charged_twice(call: _Charge, account: str) -> str:
    """Why a call that returned normally ran the charge more than once: the first cause that fits."""
    total = sum(EX08_AMOUNTS)
    due = (
        f"the server ran the charge {call.runs:g} times (the balance moved by {call.moved:,} where {total} was due)"
        if call.moved % total == 0
        else f"part of the charge ran more than once (the balance moved by "
        f"{call.moved:,} where {total} was due; send all the INCRBYs together, in one MULTI/EXEC)"
    )
    resend = (
        f"{call.silence()}, and the charge went again on a new connection ({call.sends(account)} connections "
        "carried it)"
    )
    markers = [
        s for s in call.sent if s.args[0].upper() in EX08_WRITES and any(k != account for k in _written_keys(s.args))
    ]
    if any(s.args[0].upper() in EX08_SCRIPTS for s in call.sent):
        return (
            f"{due}: {resend}, and your script charged each time it ran; let the script SET the marker with "
            "NX first and charge only when that succeeded, so that a second run changes nothing"
        )
    if any(s.in_multi for s in markers):
        return (
            f"{due}: the marker is in the MULTI/EXEC with the INCRBYs, but a transaction has no 'if': "
            f"{resend}, where the SET NX failed and the INCRBYs ran; turn the client's retries off "
            "(retry=Retry(NoBackoff(), 0)) and look for the marker before each send yourself"
        )
    if markers:
        return (
            f"{due}: the marker was written on its own, outside the MULTI/EXEC of the INCRBYs, and nothing "
            f"looked at it before the resend: {resend}; write it in the same MULTI/EXEC as the INCRBYs and "
            "look for it before each send"
        )
    if any(s.args[0].upper() == "WATCH" and account in s.args[1:] for s in call.sent):
        return (
            f"{due}: under WATCH redis-py turns the lost EXEC reply into a WatchError, and Redis.transaction() "
            "ran your function again, which read the new balance and charged once more; WATCH guards what "
            "you read, not the charge: a marker keyed by charge_id, written with the INCRBYs, tells a second "
            "run that the work is done"
        )
    return (
        f"{due}: {resend}; redis-py's default Retry does that, resending the whole pipeline after a timeout or "
        "a dropped connection up to 10 times (socket_timeout is 5 s when you set none), and so does any loop "
        "that sends again blindly; write a marker keyed by charge_id in the same MULTI/EXEC as the INCRBYs, "
        "turn the client's retries off (retry=Retry(NoBackoff(), 0)) and send again only when the marker is "
        "absent"
    )


def _judge(call: _Charge, account: str) -> None:
    """The first thing wrong with one call, as one NotSolved; nothing when it charged as due."""
    total = sum(EX08_AMOUNTS)
    want = 0 if call.step == "again" else 1
    if call.hung:
        raise _fail(
            8,
            f"charge had not returned {EX08_BOUND_S:g} s after the call"
            + (f" ({call.silence()})" if call.fired else "")
            + "; bound every wait: a socket_timeout you choose, and a bounded number of attempts",
        )
    if call.fault and call.fired is None:
        raise _fail(
            8,
            f"charge sent no write to {account} through the host and port it was handed (call "
            f"{call.charge_id!r}); build the client from host and port on every call",
        )
    if call.step == "plain":
        if call.error is not None:
            raise _fail(8, f"charge raised {call.raised()} with no fault at all; fix that first")
        if not call.sends(account):
            raise _fail(
                8,
                f"charge did not charge through the host and port it was handed (the check's proxy saw "
                f"no write to {account}); build the client from them",
            )
        if call.moved != total:
            raise _fail(
                8,
                f"with no fault, one call moved the balance by {call.moved:,} where {total} was due; "
                "INCRBY each amount into the account once",
            )
        return
    if call.step == "again":
        if call.error is not None:
            raise _fail(
                8,
                f"charge raised {call.raised()} when called again with charge_id {call.charge_id!r}, "
                "already charged; return normally, charging nothing",
            )
        if call.moved:
            raise _fail(
                8,
                f"calling charge again with charge_id {call.charge_id!r}, already charged, moved the "
                f"balance by {call.moved:,}; look for the marker before charging, so that your "
                "caller's retry is harmless too",
            )
        return
    if call.error is not None:
        if call.step == "reply" and call.runs == 1:
            raise _fail(
                8,
                f"charge raised {call.raised()} after its replies went silent, although the server "
                f"had run the charge once (the balance moved by {call.moved:,}): your caller cannot "
                "tell whether to charge again; on a timeout, find out whether it ran (a marker written "
                "in the same MULTI/EXEC as the INCRBYs) and return normally",
            )
        if call.step == "request" and call.runs == 0:
            raise _fail(
                8,
                f"charge raised {call.raised()} when its request was lost before reaching the server "
                "(the balance did not move): when a timeout leaves you unsure, look for the marker; "
                "absent means the charge did not run, so send it again and return normally",
            )
        raise _fail(
            8,
            f"charge raised {call.raised()} after the server had run the charge {call.runs:g} times; "
            "run it exactly once and return normally",
        )
    if call.runs == want:
        return
    if call.runs == 0:
        what = (
            "its request never reached the server" if call.step == "request" else "the server ran nothing it was sent"
        )
        raise _fail(
            8,
            f"charge returned normally although {what}: the balance did not move; a timeout means "
            "'unknown', not 'done': look for the marker and send the charge again when it is absent",
        )
    raise _fail(8, _charged_twice(call, account))


def check_ex08(lab: Lab, charge: Callable) -> dict:
    e = lab.endpoint
    if e.password is not None or e.tls or e.db:
        raise LabError(
            "Exercise 8 hands charge a bare host and port, and the lab's Redis needs a password, TLS "
            "or a database other than 0; run it on the embedded lab (make lab without REDIS_URL)."
        )
    account = f"{_prefix(8)}account:42"
    total = sum(EX08_AMOUNTS)
    with _own_keys(lab, 8) as client, _FaultProxy(e, account) as proxy:
        print(
            f"charge({', '.join(map(str, EX08_AMOUNTS))}) = {total} to {account}, through the check's proxy at "
            f"{proxy.host}:{proxy.port} in front of {e.host}:{e.port}; four calls:"
        )
        calls = []
        for step, charge_id, fault, label in (
            ("plain", "order-1", None, "no fault"),
            ("reply", "order-2", "reply", "the replies to its first write to the account are dropped"),
            ("again", "order-2", None, "the same charge_id again, no fault"),
            ("request", "order-3", "request", "its first write to the account is dropped before the server"),
        ):
            call = _charge(client, proxy, charge, account, step, charge_id, fault)
            _check_keys(call)
            _judge(call, account)
            calls.append(call)
            silent = f"; {call.silence()}" if call.fired else ""
            print(
                f"  {len(calls)}. {label} ({charge_id}): the balance moved by {call.moved:,} "
                f"({call.runs:g} x {total}){silent}; charge returned after {call.seconds:.2f} s"
            )
    reply, request = calls[1], calls[3]
    gave_up = (reply.fired.closed_at - reply.fired.fault_at) if reply.fired and reply.fired.closed_at else None
    _solved(
        8,
        f"charged exactly once when its replies were lost (returned after {reply.seconds:.1f} s) and when "
        f"its request was lost ({request.seconds:.1f} s); the same charge_id again charged nothing",
    )
    return {
        "total": total,
        "reply_lost_runs": reply.runs,
        "reply_lost_s": reply.seconds,
        "reply_lost_sends": reply.sends(account),
        "client_gave_up_s": gave_up,
        "request_lost_runs": request.runs,
        "request_lost_s": request.seconds,
        "request_lost_sends": request.sends(account),
        "repeat_moved": calls[2].moved,
        "closed_by": reply.fired.closed_by if reply.fired else None,
    }
