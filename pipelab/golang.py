"""Running the Go examples: find go, build each example into build/tools once per change, run it, read its line.

The examples live in node-go-rust-examples/go, one module (go.mod, go.sum) with a main
package per example. Each is built with `go build` into tools_dir()/go/bin, with GOFLAGS=-mod=readonly,
so go.sum is enforced, and go's own module and build caches (go_env). A build is kept while the
example's sources, go.mod, go.sum and go's version are the same (a stamp beside the binary holds their
digest): a second run starts at once.

The examples print the Java examples' PIPELAB-RESULT line, so jbang.parse_result reads it and a
jbang.JavaRun carries it. PIPELAB_GO=off makes the lab act as if there were no Go (tests), a path
names the go to use; without it, go on PATH.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from . import jbang
from .errors import LabError
from .host import Unavailable
from .jbang import JavaRun
from .paths import tools_dir
from .programs import OTHER_EXAMPLES, run_printing
from .server import Endpoint

GO_VAR = "PIPELAB_GO"
MODULE_DIR = OTHER_EXAMPLES / "go"
SHARED = ("lab",)  # packages every example imports


def required() -> tuple[int, int]:
    """The oldest go the module builds with: go.mod's `go` line."""
    found = re.search(r"^go (\d+)\.(\d+)", (MODULE_DIR / "go.mod").read_text(), re.MULTILINE)
    return (int(found.group(1)), int(found.group(2))) if found else (1, 0)


def _install_hint() -> str:
    major, minor = required()
    return f"install Go {major}.{minor} or newer (https://go.dev/dl/) and put go on PATH"


def go_version(go: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.match(r"go(\d+)\.(\d+)", out.strip())
    return (int(found.group(1)), int(found.group(2))) if found else None


def require_go() -> str:
    """The go executable, or Unavailable with one sentence on what to install."""
    setting = os.environ.get(GO_VAR, "")
    if setting == "off":
        raise Unavailable(f"Go is switched off ({GO_VAR}=off); unset it and {_install_hint()} to run the Go examples.")
    go = setting or shutil.which("go")
    if not go or not os.access(go, os.X_OK):
        raise Unavailable(f"No Go toolchain found: {_install_hint()} to run the Go examples.")
    found = go_version(go)
    if found is None or found < required():
        shown = "an unknown version" if found is None else f"Go {found[0]}.{found[1]}"
        raise Unavailable(f"{go} is {shown}, too old for the Go examples: {_install_hint()}.")
    return go


def available() -> str | None:
    """Why the Go examples cannot run here (one sentence), or None when they can."""
    try:
        require_go()
    except Unavailable as why:
        return str(why)
    return None


def go_env() -> dict:
    """go's environment: go.sum enforced, no toolchain download, no workspace; go's own module and build
    caches, as toxiproxy's build, JBang's Maven and npm use theirs (a fresh clone then builds in seconds,
    not in a minute of both cores), and under build/tools only where the user has none."""
    env = dict(
        os.environ,
        GOFLAGS="-mod=readonly -modcacherw",  # -modcacherw: a module cache stays removable with rm -rf
        GOTOOLCHAIN="local",
        GOWORK="off",
        CGO_ENABLED="0",
    )
    if not (env.get("HOME") or env.get("XDG_CACHE_HOME")):  # go would refuse to guess where its caches go
        root = tools_dir() / "go"
        env |= {"GOMODCACHE": str(root / "mod"), "GOCACHE": str(root / "cache")}
    return env


def example_sources(name: str) -> list[Path]:
    """What a build of example `name` depends on in the repository: go.mod, go.sum and its packages' files."""
    dirs = [MODULE_DIR / name, *(MODULE_DIR / pkg for pkg in SHARED)]
    return [MODULE_DIR / "go.mod", MODULE_DIR / "go.sum", *sorted(p for d in dirs for p in d.glob("*.go"))]


def build_key(name: str, go: str) -> str:
    digest = hashlib.sha256(f"{name} {go} {go_version(go)}".encode())
    for path in example_sources(name):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def binary(name: str) -> Path:
    return tools_dir() / "go" / "bin" / name


def build(name: str) -> Path:
    """Example `name`'s binary, built now if its sources, go.sum or go changed since the last build."""
    if not (MODULE_DIR / name).is_dir():
        raise LabError(f"No Go example {name!r} beside go.mod in {MODULE_DIR}.")
    go = require_go()
    out, key = binary(name), build_key(name, go)
    stamp = out.with_suffix(".key")
    if out.exists() and stamp.exists() and stamp.read_text() == key:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"pipelab: building the Go example {name} (go build, once per change) ...", flush=True)
    done = subprocess.run(
        [go, "build", "-trimpath", "-o", str(out), f"./{name}"],
        cwd=MODULE_DIR,
        env=go_env(),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise LabError(
            f"go build ./{name} failed ({jbang.failure_line(done.stderr or done.stdout)}); check that the Go module "
            "proxy is reachable (the first build downloads the modules go.sum names)."
        )
    stamp.write_text(key)
    return out


def run_example(name: str, target: Endpoint, *args, cluster: Endpoint | None = None) -> JavaRun:
    """Build (if needed) and run Go example `name` against `target` (host and port as its first
    arguments, the rest of the URL in REDIS_URL, a cluster's in REDIS_CLUSTER_URL); return its result."""
    program = build(name)
    return run_printing(
        f"go:{name}",
        f"The Go example {name}",
        [str(program), target.host, str(target.port), *map(str, args)],
        MODULE_DIR,
        jbang.jbang_env(target, cluster),  # REDIS_URL, REDIS_CLUSTER_URL and the key prefix, as Java's
    )
