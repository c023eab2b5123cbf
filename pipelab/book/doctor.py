"""`make doctor`: is this laptop ready for the course? A trainer runs it on each laptop before the day.

One line per check: "ok" and what was found, or one sentence on what to do. It installs and fetches
nothing (`make prefetch` does), and touches only what it starts itself: a redis-server (on the lab's
port, or a free one when that is busy), a toxiproxy and one JVM, each stopped before it returns,
on Ctrl-C too. A server it did not start is never connected to: a busy port is only bound to.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import redis

from .. import golang, host, jbang, node, placement, proxy
from ..cluster import BUS_OFFSET
from ..cluster import PORT_VAR as CLUSTER_PORT_VAR
from ..errors import LabError
from ..paths import REPO, build_dir, tools_dir
from ..server import (
    EmbeddedRedis,
    Endpoint,
    find_redis_server,
    free_port,
    port_is_free,
    server_builds,
    start_process,
    stop_process,
)
from ..settings import DEFAULT_CLUSTER_PORT, DEFAULT_PORT

OK, FIX, SKIP, NOT_RUN = "ok", "FIX", "skip", "--"  # FIX: the course needs it; SKIP: an optional part
VENV = REPO / "build" / "venv"  # the Makefile's, whatever PIPELAB_BUILD says
MIN_PYTHON = (3, 11)
MIN_JAVA = 17
CLUSTER_MASTERS = 3  # chapter 5's embedded cluster (cluster.EmbeddedCluster's default)
# The cheapest alias that proves a JDK, JBang, a Maven client and the lab's Redis work together: one JVM,
# Jedis only, 100 PINGs each way, one round, no warm-up (about 0.6 s once compiled).
ALIAS, ALIAS_ARGS = "ch01-ping", ("100", "1", "0")
JAVA_TIMEOUT_S = 60
# Sizes under build/, from `du` on the machine that built this book: what `make prefetch` fetches
# (build/venv with JupyterLab 0.9 GB, build/uv, build/tools: JBang, toxiproxy, Node packages), and what
# the course then writes (results, the site and its caches, lab copies, chapter 9's load files).
FETCH_BYTES = 1_200 << 20
WORK_BYTES = 300 << 20
NO_PROXY_PARTS = "chapter 1's round-trip sweep and chapter 4's connection-drop experiment skip, everything else runs"


@dataclass(frozen=True)
class Check:
    name: str
    state: str
    text: str

    def line(self) -> str:
        return f"{self.state:<4}  {self.name:<9}  {self.text}"


# --- the pure parts -------------------------------------------------------------------------------


def javac_version(text: str) -> tuple[int, str]:
    """The major version `javac -version` prints and the whole one ("javac 17.0.15" is 17, "javac
    1.8.0_392" is 8), or (0, "")."""
    found = re.search(r"javac ((\d+)(?:\.(\d+))?\S*)", text)
    if not found:
        return 0, ""
    major = int(found.group(2))
    return (int(found.group(3) or 0) if major == 1 else major), found.group(1)


def port_setting(variable: str, default: int, highest: int = 65535) -> int:
    """A port from the environment as the lab reads it, or one sentence on what is wrong with it."""
    text = os.environ.get(variable) or str(default)
    if not text.isdigit() or not 1024 <= int(text) <= highest:
        raise LabError(
            f"{variable}={text} is not a port between 1024 and {highest}; set it to a free port, or unset it."
        )
    return int(text)


def busy_ports(redis_port: int, cluster_base: int, is_free=port_is_free) -> list[tuple[int, str]]:
    """The lab's ports that something listens on, each with what the lab needs it for."""
    wanted = [(redis_port, "redis")]
    for port in range(cluster_base, cluster_base + CLUSTER_MASTERS):
        wanted += [(port, "cluster"), (port + BUS_OFFSET, "cluster")]
    return [(port, what) for port, what in wanted if not is_free(port)]


def busy_sentence(busy: list[tuple[int, str]]) -> str:
    """One sentence for the busy ports: what probably holds them and which setting moves the lab."""
    parts = []
    redis_ports = [p for p, what in busy if what == "redis"]
    cluster_ports = [p for p, what in busy if what == "cluster"]
    if redis_ports:
        parts.append(
            f"port {redis_ports[0]} is in use: is `make lab` already running? stop it, or set PIPELAB_PORT to a free port"
        )
    if cluster_ports:
        shown = ", ".join(map(str, cluster_ports))
        parts.append(
            f"port{'s' if len(cluster_ports) > 1 else ''} {shown} of chapter 5's cluster "
            f"{'are' if len(cluster_ports) > 1 else 'is'} in use: is a chapter 5 notebook still open? "
            f"stop it, or set {CLUSTER_PORT_VAR} to a free base port"
        )
    return "; ".join(parts) + "."


def disk_need(prepared: bool) -> int:
    """Bytes the course still needs under build/: its results and site, and what prefetch fetches if not done."""
    return WORK_BYTES + (0 if prepared else FETCH_BYTES)


def size(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def disk_check(free: int, prepared: bool) -> Check:
    need = disk_need(prepared)
    if prepared:
        why = f"the course writes about {size(WORK_BYTES)} more there (results, the site, your runs)"
    else:
        why = (
            f"the course needs about {size(need)} there: {size(FETCH_BYTES)} that `make prefetch` fetches, "
            f"then {size(WORK_BYTES)} of results and the site"
        )
    if free < need:
        return Check("disk", FIX, f"only {size(free)} free under build/, and {why}: free some space.")
    return Check("disk", OK, f"{size(free)} free under build/; {why}")


def summary(checks: list[Check], seconds: float) -> tuple[str, int]:
    """The last line and the exit code: "ready", or how many things need attention (1)."""
    fixes = [c.name for c in checks if c.state == FIX]
    skipped = [c.name for c in checks if c.state == SKIP]
    took = f"{seconds:.1f} s"
    if fixes:
        n = len(fixes)
        return (
            f"{n} thing{'s' if n > 1 else ''} need{'' if n > 1 else 's'} attention ({', '.join(fixes)}): "
            f"fix {'them' if n > 1 else 'it'} as said above, then run `make doctor` again ({took}).",
            1,
        )
    optional = f"; optional and missing: {', '.join(skipped)}" if skipped else ""
    return f"ready for the course ({len(checks)} checks in {took}{optional}).", 0


def without_jdk_path(path: str, into: Path) -> str:
    """PATH with java and javac hidden (for the tests): the directories holding them are replaced by
    `into`, filled with links to everything else those directories hold."""
    into.mkdir(parents=True, exist_ok=True)
    kept = []
    for folder in filter(None, path.split(os.pathsep)):
        if not any(os.access(Path(folder) / tool, os.X_OK) for tool in ("java", "javac")):
            kept.append(folder)
            continue
        for entry in Path(folder).iterdir():
            link = into / entry.name
            if entry.name not in ("java", "javac") and not link.exists():
                link.symlink_to(entry)
    return os.pathsep.join([str(into), *kept])


# --- the checks -----------------------------------------------------------------------------------


def check_python() -> Check:
    version = platform.python_version()
    if sys.version_info < MIN_PYTHON:
        return Check(
            "Python",
            FIX,
            f"Python {version} runs this, but the course needs 3.11 or newer: run `make lab PYTHON=python3.12`.",
        )
    if not (VENV / "bin" / "python").exists():
        return Check("Python", FIX, "No build/venv yet: run `make prefetch` (or `make lab`) on a good connection.")
    if Path(sys.prefix).resolve() != VENV.resolve():
        return Check("Python", FIX, f"This is {sys.executable}, not build/venv's Python: run `make doctor`.")
    if importlib.util.find_spec("jupyterlab") is None:
        return Check("Python", FIX, "JupyterLab is not installed yet: run `make prefetch` (or `make lab`).")
    text = f"{version} in build/venv, JupyterLab installed"
    stamp = VENV / ".lab-installed"
    if stamp.exists() and any(
        (REPO / f).stat().st_mtime > stamp.stat().st_mtime for f in ("pyproject.toml", "uv.lock")
    ):
        text += "; pyproject.toml or uv.lock changed since: the next `make lab` updates it"
    return Check("Python", OK, text)


def check_jdk() -> Check:
    java = jbang.require_jdk()  # LabError: one sentence naming the JDK
    javac = jbang.java_home_bin("javac")
    javac_text = subprocess.run([javac, "-version"], capture_output=True, text=True, timeout=30)
    found, full = javac_version(javac_text.stdout + javac_text.stderr)
    if found < MIN_JAVA:
        return Check(
            "JDK",
            FIX,
            f"javac {found or 'of unknown version'} at {javac}, but the examples need {MIN_JAVA} or newer; "
            + jbang.NO_JDK.split(": ", 1)[1],
        )
    where = f"in {Path(java).parent}" if Path(java).parent == Path(javac).parent else f"at {java} and {javac}"
    return Check("JDK", OK, f"java {jbang.java_version(java)} and javac {full} {where}")


def check_ports() -> tuple[Check, int]:
    """The ports check, and the port the doctor's own Redis uses: the lab's, or a free one if that is
    busy or not valid."""
    try:
        redis_port = port_setting("PIPELAB_PORT", DEFAULT_PORT)
        # the masters' bus ports (+BUS_OFFSET) must be ports too
        cluster_base = port_setting(CLUSTER_PORT_VAR, DEFAULT_CLUSTER_PORT, 65535 - BUS_OFFSET - CLUSTER_MASTERS + 1)
    except LabError as err:
        return Check("ports", FIX, str(err)), free_port()
    busy = busy_ports(redis_port, cluster_base)
    if busy:
        return Check("ports", FIX, busy_sentence(busy)), free_port() if (redis_port, "redis") in busy else redis_port
    last = cluster_base + CLUSTER_MASTERS - 1
    text = (
        f"{redis_port} (the lab's Redis) and {cluster_base}-{last} with {cluster_base + BUS_OFFSET}-"
        f"{last + BUS_OFFSET} (chapter 5's cluster) are free; toxiproxy takes free ports as it starts"
    )
    if os.environ.get("REDIS_URL"):
        text += "; REDIS_URL is set, so the lab will use that server (the doctor leaves it alone)"
    return Check("ports", OK, text), redis_port


def server_label(binary: str) -> str:
    for build in server_builds().values():
        if build.path == binary:
            return build.source
    return binary


def start_redis(server: EmbeddedRedis, note: str = "") -> Check:
    """Start the embedded server as the lab does, PING it, say which server it is."""
    server.start()
    started = time.monotonic()
    with server.endpoint.client(socket_timeout=5) as client:
        client.ping()
        ping_ms = (time.monotonic() - started) * 1e3
        info = client.info("server")
    version = info.get("valkey_version") or info.get("redis_version")
    where = f"port {server.port}" + (f" ({note})" if note else "")
    return Check(
        "Redis",
        OK,
        f"{(info.get('server_name') or 'redis').capitalize()} {version} ({server_label(server.binary)}) started on {where}, "
        f"answered PING in {ping_ms:.1f} ms; stopped at the end",
    )


def _launch_known(alias: str) -> bool:
    """Whether JBang compiled `alias` before (prefetch, an earlier run): its launch is in JBang's cache."""
    try:
        known = json.loads((jbang.cache_dir() / jbang.LAUNCHES).read_text())
        entry = known.get(jbang.launch_key(alias), {})
    except (OSError, ValueError):
        return False
    return bool(entry) and all(Path(jar).exists() for jar in entry.get("jars", []))


def run_java(endpoint: Endpoint) -> Check:
    """One JBang example against the doctor's Redis: compiled if need be, run, its result line read."""
    on_path = shutil.which("jbang")
    jar = tools_dir() / f"jbang-cli-{jbang.JBANG_VERSION}-all.jar"
    if not on_path and not jar.exists():
        return Check(
            "JBang",
            FIX,
            "JBang is not fetched yet: run `make prefetch` on a good connection (it fetches JBang and compiles every example).",
        )
    source = f"jbang on PATH ({on_path})" if on_path else f"JBang {jbang.JBANG_VERSION} from build/tools"
    compiled = on_path is not None or _launch_known(ALIAS)
    if not compiled:
        print(f"      {ALIAS} is not compiled yet: compiling it now (`make prefetch` compiles every example) ...")
    started = time.monotonic()
    argv = jbang.jbang_argv([ALIAS, endpoint.host, str(endpoint.port), *ALIAS_ARGS])
    env = dict(jbang.jbang_env(endpoint), PIPELAB_REPEAT_RULE="")  # exactly the rounds asked for
    # Its own process group, killed whole at the end: a JVM never outlives the doctor (Ctrl-C included).
    proc = subprocess.Popen(
        argv,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        process_group=0,
        preexec_fn=host.before_exec(None, die_with_parent=True),
    )
    try:
        out, err = proc.communicate(timeout=JAVA_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Check(
            "JBang",
            FIX,
            f"{ALIAS} did not finish within {JAVA_TIMEOUT_S} s: run `make prefetch`, then `make doctor` again.",
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    took = time.monotonic() - started
    if proc.returncode != 0:
        return Check("JBang", FIX, f"jbang {ALIAS} failed: {jbang.failure_line(err or out)}.")
    data = jbang.parse_result(out)
    clients = ", ".join(f"{k} {v}" for k, v in data.get("clients", {}).items())
    return Check(
        "JBang",
        OK,
        f"{ALIAS} {'compiled and ' if not compiled else ''}ran against it in {took:.1f} s "
        f"(Java {data.get('java_version')}, {clients}; {source})",
    )


def run_toxiproxy(endpoint: Endpoint | None) -> Check:
    """toxiproxy found (never built here), started, a proxy to the doctor's Redis made and PINGed through, stopped."""
    try:
        binary = proxy.find_toxiproxy(build=False)
    except proxy.ToxiproxyUnavailable as err:
        if os.environ.get("PIPELAB_TOXIPROXY"):
            return Check("toxiproxy", SKIP, f"{str(err).rstrip('.')}: until then {NO_PROXY_PARTS}.")
        return Check(
            "toxiproxy", SKIP, f"not installed: {NO_PROXY_PARTS} (`make prefetch` builds it where Go is installed)."
        )
    workdir = tempfile.TemporaryDirectory(prefix="pipelab-doctor-toxiproxy-")
    api_port = free_port()
    # Started as Toxiproxy.start does, but held here so that Ctrl-C during its start stops it too.
    proc = None
    try:
        proc = start_process(
            [binary, "-host", "127.0.0.1", "-port", str(api_port)],
            Path(workdir.name) / "toxiproxy.log",
            cpus=placement.client_cpus(),
        )
        toxiproxy = proxy.Toxiproxy(f"http://127.0.0.1:{api_port}", proc)
        toxiproxy.wait()
        version = toxiproxy.version()
        if version in {"git", "", "undefined"}:  # go install leaves no version stamp
            version = f"{proxy.TOXIPROXY_VERSION} built from the Go module"
        relayed = ""
        if endpoint is not None:
            with toxiproxy.proxy_for(endpoint).client(socket_timeout=5) as client:
                client.ping()
            relayed = ", relayed a PING to Redis"
    except (LabError, OSError, redis.RedisError) as err:
        return Check("toxiproxy", SKIP, f"{binary} did not run ({err}): {NO_PROXY_PARTS}.")
    finally:
        stop_process(proc)
        workdir.cleanup()
    where = "in build/tools" if Path(binary).is_relative_to(tools_dir()) else f"at {binary}"
    text = f"{version} {where}: started{relayed}, stopped"
    if os.environ.get("TOXIPROXY_URL"):
        text += "; TOXIPROXY_URL is set, so the lab will use that one (the doctor leaves it alone)"
    return Check("toxiproxy", OK, text)


def check_disk() -> Check:
    where = build_dir()
    while not where.exists():  # a fresh clone: the disk build/ will be on
        where = where.parent
    prepared = (VENV / ".lab-installed").exists() and (
        shutil.which("jbang") is not None or (tools_dir() / f"jbang-cli-{jbang.JBANG_VERSION}-all.jar").exists()
    )
    return disk_check(shutil.disk_usage(where).free, prepared)


def check_node() -> Check:
    try:
        node_bin, _ = node.require_node()
    except host.Unavailable as err:
        if shutil.which("node") is None:
            return Check(
                "Node",
                SKIP,
                f"not installed: chapter 10's Node parts skip (Node.js {node.MIN_NODE}+ with npm runs them).",
            )
        return Check("Node", SKIP, str(err))
    version = subprocess.run([node_bin, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    return Check("Node", OK, f"Node.js {version} (chapter 10)")


def check_go() -> Check:
    try:
        go = golang.require_go()
    except host.Unavailable as err:
        if shutil.which("go") is None and not os.environ.get(golang.GO_VAR):
            major, minor = golang.required()
            return Check("Go", SKIP, f"not installed: chapter 10's Go parts skip (Go {major}.{minor}+ runs them).")
        return Check("Go", SKIP, str(err))
    major, minor = golang.go_version(go)
    return Check("Go", OK, f"Go {major}.{minor} (chapter 10)")


def _guarded(name: str, check) -> Check:
    """A check's own Check, or its LabError as the one sentence of a FIX line."""
    try:
        return check()
    except LabError as err:
        return Check(name, FIX, str(err))


def run(out=print) -> int:
    """Every check in turn, each line printed as soon as it is known; the exit code (0: ready)."""
    started = time.monotonic()
    checks: list[Check] = []

    def say(check: Check) -> Check:
        checks.append(check)
        out(check.line(), flush=True)
        return check

    say(_guarded("Python", check_python))
    jdk = say(_guarded("JDK", check_jdk))
    ports, port = check_ports()
    say(ports)
    note = "" if str(port) == (os.environ.get("PIPELAB_PORT") or str(DEFAULT_PORT)) else "a free one, not the lab's"
    server, endpoint = None, None
    try:
        try:
            # The lab's choice of server (PIPELAB_SERVER, else Redis 8, else the next) and placement;
            # its note on a fallback is not printed: the Redis line names the server.
            with contextlib.redirect_stderr(io.StringIO()):
                server = EmbeddedRedis(port=port, binary=find_redis_server())
            say(start_redis(server, note))
            endpoint = server.endpoint
        except LabError as err:
            say(Check("Redis", FIX, str(err)))
        if jdk.state != OK or endpoint is None:
            say(Check("JBang", NOT_RUN, f"not run: it needs {'the JDK' if jdk.state != OK else 'Redis'} (above)."))
        else:
            say(_guarded("JBang", lambda: run_java(endpoint)))
        say(_guarded("toxiproxy", lambda: run_toxiproxy(endpoint)))
    finally:
        if server is not None:
            server.stop()
    say(_guarded("disk", check_disk))
    say(_guarded("Node", check_node))
    say(_guarded("Go", check_go))
    last, code = summary(checks, time.monotonic() - started)
    out(last, flush=True)
    return code
