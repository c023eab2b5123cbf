"""Exercise 7, move money without losing it: transfer with WATCH under concurrent writers."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import redis
from redis.exceptions import WatchError

from ... import observe
from ...lab import Lab
from .common import _call, _fail, _own_keys, _prefix, _solved

EX07_ACCOUNTS = 10
EX07_BALANCE = 1_000
EX07_WRITERS = 4
EX07_AMOUNTS = (1, 10)
EX07_DEPOSIT = 1  # what the check pays into a source between the reader's read and write
EX07_DEPOSIT_EVERY = 4  # every 4th transfer of each writer gets a deposit
EX07_WRITES = frozenset(
    {
        "SET",
        "MSET",
        "SETEX",
        "PSETEX",
        "SETNX",
        "MSETNX",
        "GETSET",
        "SETRANGE",
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
    }
)


def _text(arg) -> str:
    return arg.decode() if isinstance(arg, bytes) else str(arg)


@dataclass
class _Transfer:
    """One call of the reader's transfer, as the spy saw it reach the server."""

    src: str
    dst: str
    amount: int
    deposit_due: bool
    deposit_at: int | None = None  # index in execs of the EXEC that followed the check's deposit
    watches: list[frozenset] = field(default_factory=list)  # the keys of each WATCH
    execs: list[tuple[bool, frozenset]] = field(default_factory=list)  # (ran, keys watched when sent)
    result: object = None

    def blind_retry(self) -> bool:
        """An EXEC that ran with no WATCH at all after one that was aborted: the aborted writes sent again."""
        aborted = [i for i, (ran, _) in enumerate(self.execs) if not ran]
        return bool(aborted) and any(ran and not keys for ran, keys in self.execs[aborted[0] + 1 :])

    def unguarded(self) -> frozenset | None:
        """The keys watched for an EXEC that ran without a WATCH on both accounts, if one did."""
        return next((keys for ran, keys in self.execs if ran and not {self.src, self.dst} <= keys), None)

    def forced_abort(self) -> bool:
        return self.deposit_at is not None and len(self.execs) > self.deposit_at and not self.execs[self.deposit_at][0]


class _TransferSpy:
    """Sees one handed client's commands from the inside (on this instance only: the reader still gets a
    redis.Redis): for each transfer, every WATCH's keys and every EXEC's fate. When a transfer is due a
    deposit, it pays EX07_DEPOSIT into the source from a connection of its own right before the transfer's
    first write or EXEC, the moment another client's write is the most dangerous."""

    def __init__(self, client: redis.Redis, depositor: redis.Redis):
        self.depositor = depositor
        self.call: _Transfer | None = None
        self._pipeline = client.pipeline
        self._direct = client.execute_command
        client.pipeline = self.pipeline
        client.execute_command = self.execute_command

    def begin(self, src: str, dst: str, amount: int, deposit: bool) -> _Transfer:
        self.call = _Transfer(src, dst, amount, deposit)
        return self.call

    def _before_write(self) -> None:
        call = self.call
        if call is not None and call.deposit_due and call.deposit_at is None:
            self.depositor.incrby(call.src, EX07_DEPOSIT)
            call.deposit_at = len(call.execs)

    def execute_command(self, *args, **options):
        if args and _text(args[0]).upper() in EX07_WRITES:
            self._before_write()
        return self._direct(*args, **options)

    def pipeline(self, *args, **kwargs):
        pipe = self._pipeline(*args, **kwargs)
        watched: set[str] = set()  # WATCH holds per connection, and a pipeline holds one while watching
        command, execute = pipe.execute_command, pipe.execute

        def spied_command(*a, **kw):
            name = _text(a[0]).upper()
            if name == "WATCH":
                keys = frozenset(_text(k) for k in a[1:])
                watched.update(keys)
                if self.call is not None:
                    self.call.watches.append(keys)
            elif name == "UNWATCH":
                watched.clear()
            elif name in EX07_WRITES and pipe.watching and not pipe.explicit_transaction:
                self._before_write()  # sent at once, outside MULTI
            return command(*a, **kw)

        def spied_execute(*a, **kw):
            sends_exec = (pipe.transaction or pipe.explicit_transaction) and bool(pipe.command_stack or pipe.watching)
            if sends_exec or any(_text(args[0]).upper() in EX07_WRITES for args, _ in pipe.command_stack):
                self._before_write()
            keys = frozenset(watched)
            watched.clear()  # EXEC, or the reset after a plain pipeline, ends every WATCH
            try:
                result = execute(*a, **kw)
            except WatchError:
                if self.call is not None:
                    self.call.execs.append((False, keys))
                raise
            if sends_exec and self.call is not None:
                self.call.execs.append((True, keys))
            return result

        pipe.execute_command, pipe.execute = spied_command, spied_execute
        return pipe


def _plan_transfers(writers: int, each: int, seed: int = 7) -> list[list[tuple[int, int, int]]]:
    """Each writer's transfers (source, destination, amount), random, yet no account's planned outflow passes
    its opening balance: every transfer can be paid in whatever order the writers run, so a refusal is a bug."""
    rng = random.Random(seed)
    out = [0] * EX07_ACCOUNTS
    plans: list[list[tuple[int, int, int]]] = [[] for _ in range(writers)]
    for _ in range(each):
        for plan in plans:
            while True:
                src, dst = rng.sample(range(EX07_ACCOUNTS), 2)
                amount = rng.randint(*EX07_AMOUNTS)
                if out[src] + amount <= EX07_BALANCE:
                    break
            out[src] += amount
            plan.append((src, dst, amount))
    return plans


def _balances(client: redis.Redis, keys: list[str]) -> list[int]:
    return [int(v) for v in client.mget(keys)]


def _check_refusals(client: redis.Redis, handed: redis.Redis, spy: _TransferSpy, transfer: Callable) -> None:
    """One writer first: a transfer the source cannot pay is refused and writes nothing; all it holds can go."""
    src, dst = f"{_prefix(7)}acct:0", f"{_prefix(7)}acct:1"
    for amount, want, after in (
        (EX07_BALANCE + 1, False, [EX07_BALANCE, EX07_BALANCE]),
        (EX07_BALANCE, True, [0, 2 * EX07_BALANCE]),
    ):
        spy.begin(src, dst, amount, deposit=False)
        got = _call(7, transfer, handed, src, dst, amount)
        if not isinstance(got, bool):
            raise _fail(
                7,
                f"transfer returned {got!r}, not True or False; return True when the money moved and "
                "False when the transfer was refused",
            )
        held = _balances(client, [src, dst])
        if got and not want:
            raise _fail(
                7,
                f"transfer of {amount:,} from an account holding {EX07_BALANCE:,} returned True and left "
                f"{held[0]:,} in it; return False, writing nothing, when the source would go negative",
            )
        if want and not got:
            raise _fail(
                7,
                f"transfer refused to move {amount:,} out of an account holding exactly {EX07_BALANCE:,}; "
                "refuse only when the source would go negative",
            )
        if held != after:
            raise _fail(
                7,
                f"after transfer({src!r}, {dst!r}, {amount:,}) returned {got} the accounts hold "
                f"{held[0]:,} and {held[1]:,} where {after[0]:,} and {after[1]:,} were expected; "
                + (
                    "a refusal writes nothing"
                    if not got
                    else "write the source's balance less the amount and the destination's plus it"
                ),
            )
    print(
        f"  one writer: {EX07_BALANCE + 1:,} from {EX07_BALANCE:,} refused with nothing written; "
        f"{EX07_BALANCE:,} from {EX07_BALANCE:,} moved (0 and {2 * EX07_BALANCE:,})"
    )


def _run_writers(lab: Lab, transfer: Callable, keys: list[str], plans) -> tuple[list[_Transfer], float]:
    """Every writer on a thread and a connection of its own, released together; their calls, and the seconds."""
    calls: list[_Transfer] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(plans) + 1)
    clients = [(lab.client(), lab.client()) for _ in plans]

    def writer(handed: redis.Redis, depositor: redis.Redis, plan) -> None:
        spy = _TransferSpy(handed, depositor)
        start.wait()
        try:
            for i, (src, dst, amount) in enumerate(plan):
                call = spy.begin(keys[src], keys[dst], amount, deposit=i % EX07_DEPOSIT_EVERY == 1)
                call.result = transfer(handed, keys[src], keys[dst], amount)
                calls.append(call)
        except BaseException as err:  # noqa: BLE001 (reported by the check, from its own thread)
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(*pair, plan), daemon=True) for pair, plan in zip(clients, plans)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    for pair in clients:
        for c in pair:
            c.close()
    if errors:
        err = errors[0]
        hint = (
            "an aborted EXEC is redis-py's WatchError: catch it, then read again and retry"
            if isinstance(err, WatchError)
            else "fix that first"
        )
        raise _fail(7, f"transfer raised {type(err).__name__} ({err}) while {len(plans)} writers ran; {hint}")
    return calls, seconds


def _money(held: list[int], put_in: int, deposits: int) -> str:
    negative = sum(b < 0 for b in held)
    return (
        f"the accounts hold {sum(held):,} in all where {put_in:,} went in ({EX07_ACCOUNTS * EX07_BALANCE:,} and "
        f"the check's {deposits:,} deposit{'s' if deposits != 1 else ''})"
        + (f", and {negative} account{'s are' if negative != 1 else ' is'} negative" if negative else "")
    )


def _diagnose(calls: list[_Transfer], held: list[int], keys: list[str], server: dict) -> None:
    """The first thing wrong with the concurrent run, cause before consequence, as one NotSolved."""
    deposits = sum(c.deposit_at is not None for c in calls)
    put_in = EX07_ACCOUNTS * EX07_BALANCE + deposits * EX07_DEPOSIT
    money = _money(held, put_in, deposits)
    expected = [EX07_BALANCE] * EX07_ACCOUNTS
    index = {key: i for i, key in enumerate(keys)}
    for c in calls:
        if c.deposit_at is not None:
            expected[index[c.src]] += EX07_DEPOSIT
        if c.result is True:
            expected[index[c.src]] -= c.amount
            expected[index[c.dst]] += c.amount
    right = held == expected
    n = len(calls)
    writers = f"with {EX07_WRITERS} writers"

    odd = next((c for c in calls if not isinstance(c.result, bool)), None)
    if odd is not None:
        raise _fail(
            7,
            f"transfer returned {odd.result!r}, not True or False; return True when the money moved and "
            "False when the transfer was refused",
        )
    if not any(c.watches for c in calls) and not server.get("watch"):
        if right:
            raise _fail(
                7,
                "transfer moved the money right with no WATCH (on the server, in one command or script, "
                "as the section recommends where it can); this exercise asks for the WATCH loop: WATCH "
                "both accounts, read them, MULTI/EXEC, and retry when EXEC is aborted",
            )
        if any(c.execs for c in calls) or server.get("exec"):
            raise _fail(
                7,
                f"transfer sent MULTI/EXEC but no WATCH, so no EXEC could abort: {writers} {money}; "
                "MULTI only queues the writes, WATCH both accounts before reading them",
            )
        raise _fail(
            7,
            f"transfer sent no WATCH: {writers} {money}; WATCH both accounts, read them, write in "
            "MULTI/EXEC, and retry when EXEC is aborted",
        )
    blind = [c for c in calls if c.blind_retry()]
    if blind:
        raise _fail(
            7,
            f"after an aborted EXEC transfer sent MULTI/EXEC again without a new WATCH and read "
            f"({len(blind):,} times), writing balances computed before the abort: {money}; a retry starts "
            "over from WATCH and the read",
        )
    unguarded = [c for c in calls if c.unguarded() is not None]
    if unguarded:
        c = unguarded[0]
        seen = ", ".join(sorted(c.unguarded())) or "nothing"
        raise _fail(
            7,
            f"{len(unguarded):,} of {n:,} transfers ran EXEC without a WATCH on both accounts (from "
            f"{c.src} to {c.dst} watched {seen}): {money}; a write to an unwatched account between the "
            "read and EXEC is overwritten, so WATCH the source and the destination",
        )
    ignored = [c for c in calls if c.result is True and c.execs and not c.execs[-1][0]]
    if ignored:
        raise _fail(
            7,
            f"{len(ignored):,} of {n:,} transfers returned True although their last EXEC was aborted, "
            "so their money never moved; when EXEC is aborted (redis-py raises WatchError) read both "
            "balances again and retry",
        )
    refused = [c for c in calls if c.result is False]
    if refused:
        after_abort = sum(any(not ran for ran, _ in c.execs) for c in refused)
        why = (
            f"{after_abort:,} of them right after an aborted EXEC; an aborted EXEC is not a refusal: read both "
            "balances again and retry"
            if after_abort
            else "refuse only when the source's balance is below the amount"
        )
        raise _fail(
            7,
            f"transfer returned False for {len(refused):,} of {n:,} transfers that the source could pay "
            f"(the check plans each account's outflow within its balance), {why}",
        )
    if server.get("watch", 0) < n:
        raise _fail(
            7,
            f"the server counted {server.get('watch', 0):,} WATCH calls for {n:,} transfers; each "
            "transfer WATCHes its two accounts before reading them",
        )
    done = sum(c.result is True for c in calls)
    if server.get("exec", 0) < done:
        raise _fail(
            7,
            f"the server counted {server.get('exec', 0):,} EXEC calls for {done:,} transfers that "
            "returned True; write each transfer's two balances in MULTI/EXEC",
        )
    if not right:
        wrong = next(i for i, (h, e) in enumerate(zip(held, expected)) if h != e)
        raise _fail(
            7,
            f"{money}, and the transfers that returned True do not explain the balances ({keys[wrong]} "
            f"holds {held[wrong]:,} where {expected[wrong]:,} was expected); every retry reads both "
            "balances again after its WATCH, and True means that the EXEC ran",
        )


def check_ex07(lab: Lab, transfer: Callable) -> dict:
    each = lab.size(full=300, quick=100)
    keys = [f"{_prefix(7)}acct:{i}" for i in range(EX07_ACCOUNTS)]
    plans = _plan_transfers(EX07_WRITERS, each)
    n = EX07_WRITERS * each
    print(
        f"{EX07_WRITERS} writers x {each:,} transfers of {EX07_AMOUNTS[0]} to {EX07_AMOUNTS[1]} between "
        f"{EX07_ACCOUNTS} accounts of {EX07_BALANCE:,} under {_prefix(7)}; before the first write of every "
        f"{EX07_DEPOSIT_EVERY}th transfer the check pays {EX07_DEPOSIT} into its source from another connection"
    )
    with _own_keys(lab, 7) as client, lab.client() as handed, lab.client() as depositor:
        client.mset({key: EX07_BALANCE for key in keys})
        _check_refusals(client, handed, _TransferSpy(handed, depositor), transfer)
        client.mset({key: EX07_BALANCE for key in keys})
        with observe.wire(lab.endpoint) as server:
            calls, seconds = _run_writers(lab, transfer, keys, plans)
        held = _balances(client, keys)
    _diagnose(calls, held, keys, server)
    execs = sum(len(c.execs) for c in calls)
    aborted = sum(not ran for c in calls for ran, _ in c.execs)
    forced = sum(c.forced_abort() for c in calls)
    deposits = sum(c.deposit_at is not None for c in calls)
    print(
        f"  {n:,} transfers in {seconds:.2f} s ({n / seconds:,.0f}/s), all True; {sum(held):,} in the accounts, "
        f"as went in ({EX07_ACCOUNTS * EX07_BALANCE:,} and {deposits:,} deposits); lowest balance {min(held):,}; "
        "every balance is what the transfers and deposits make it"
    )
    print(
        f"  EXECs: {execs:,}, of which {aborted:,} aborted ({forced:,} by the check's deposits, "
        f"{aborted - forced:,} by the other writers), each followed by a new WATCH and read"
    )
    print(
        f"  the server counted {server.get('watch', 0):,} WATCH, {server.get('multi', 0):,} MULTI, "
        f"{server.get('exec', 0):,} EXEC"
    )
    _solved(7, f"{n:,} transfers by {EX07_WRITERS} writers, {aborted:,} aborted EXECs retried, not one unit lost")
    return {
        "transfers": n,
        "seconds": seconds,
        "transfers_per_s": n / seconds,
        "execs": execs,
        "aborted": aborted,
        "forced_aborts": forced,
        "deposits": deposits,
        "total": sum(held),
        "lowest": min(held),
        "server_watch": server.get("watch", 0),
        "server_exec": server.get("exec", 0),
    }
