"""Running the Rust examples: find cargo, build the crate into build/tools once per change, run a binary, read its line.

The examples live in node-go-rust-examples/rust, one crate (Cargo.toml, the committed Cargo.lock) with
a binary per example in src/bin and the shared plumbing in src/lib.rs and its modules. Each is built with
`cargo build --release --locked --offline --bin NAME`; only when that finds a crate missing is `cargo fetch
--locked` run first (the lock's checksums still hold), so after the first fetch nothing is fetched.
Cargo's own registry cache is used, as go's and npm's are; the build output goes to build/tools/rust.
A build is kept while the crate's files, cargo's version and the binary itself are the same (a stamp
holds their digest and the binary's time and size).

The binaries print the Java examples' PIPELAB-RESULT line, so a run comes back as a jbang.JavaRun.
PIPELAB_RUST=off makes the lab act as if there were no cargo (tests); a path names the cargo to use.
The examples speak plain TCP: against a TLS Redis they are left out, in one sentence.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

from . import jbang
from .errors import LabError
from .host import Unavailable
from .jbang import JavaRun
from .paths import tools_dir
from .programs import OTHER_EXAMPLES, run_printing
from .server import Endpoint

RUST_VAR = "PIPELAB_RUST"
CRATE_DIR = OTHER_EXAMPLES / "rust"
CLIENT_CRATES = {"redis-rs": "redis", "fred": "fred"}  # each client as the book names it, and its crate
INSTALL_HINT = "install Rust with cargo (https://rustup.rs) and put cargo on PATH"
BUILD_TIMEOUT_S = 1_800  # a first build compiles every dependency: minutes on a 2-core machine


def require_cargo() -> str:
    """The cargo executable, or Unavailable with one sentence on what to install."""
    setting = os.environ.get(RUST_VAR, "")
    if setting == "off":
        raise Unavailable(
            f"Rust is switched off ({RUST_VAR}=off); unset it and {INSTALL_HINT} to run the Rust examples."
        )
    cargo = setting or shutil.which("cargo")
    if not cargo or not os.access(cargo, os.X_OK) or cargo_version(cargo) is None:
        raise Unavailable(f"No Rust toolchain found: {INSTALL_HINT} to run the Rust examples.")
    return cargo


def available() -> str | None:
    """Why the Rust examples cannot run here (one sentence), or None when they can."""
    try:
        require_cargo()
    except Unavailable as why:
        return str(why)
    return None


def cargo_version(cargo: str) -> str | None:
    try:
        done = subprocess.run([cargo, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.startswith("cargo ") else None


def crate_sources() -> list[Path]:
    """What a build depends on in the repository: Cargo.toml, Cargo.lock and every .rs file."""
    return [CRATE_DIR / "Cargo.toml", CRATE_DIR / "Cargo.lock", *sorted((CRATE_DIR / "src").rglob("*.rs"))]


def build_key(cargo: str) -> str:
    digest = hashlib.sha256(f"{cargo} {cargo_version(cargo)}".encode())
    for path in crate_sources():
        digest.update(path.relative_to(CRATE_DIR).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def target_dir() -> Path:
    return tools_dir() / "rust" / "target"


def cargo_env() -> dict:
    """cargo's environment: the user's registry cache (CARGO_HOME under build/tools only where the user
    has no home), the build output under build/tools."""
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir()), CARGO_TERM_COLOR="never")
    if not env.get("HOME") and not env.get("CARGO_HOME"):
        env["CARGO_HOME"] = str(tools_dir() / "rust" / "cargo")
    return env


def _cargo(cargo: str, *argv: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            [cargo, *argv],
            cwd=CRATE_DIR,
            env=cargo_env(),
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise LabError(
            f"cargo {argv[0]} took over {BUILD_TIMEOUT_S // 60} minutes; run it by hand in {CRATE_DIR}."
        ) from None


def build(name: str) -> Path:
    """Example `name`'s binary, built now if a source, the lock or cargo changed since its last build
    (one binary at a time: a learner's broken edit of one example leaves the others running)."""
    cargo = require_cargo()
    key = build_key(cargo)
    program, stamp = target_dir() / "release" / name, target_dir() / f"pipelab-{name}.key"
    if program.exists() and stamp.exists() and stamp.read_text() == f"{key} {_made(program)}":
        return program
    print(
        f"pipelab: building the Rust example {name} (cargo build --locked --offline, once per change) ...", flush=True
    )
    argv = ("build", "--release", "--locked", "--offline", "--bin", name)
    done = _cargo(cargo, *argv)
    if done.returncode != 0 and "offline" in done.stderr:
        fetched = _cargo(cargo, "fetch", "--locked")  # crates not yet in cargo's cache: once, the lock checked
        if fetched.returncode != 0:  # no network (an offline room): the chapter goes on without Rust
            raise Unavailable(
                f"cargo could not fetch the crates Cargo.lock names ({jbang.failure_line(fetched.stderr)}); "
                "run the chapter once where crates.io is reachable."
            )
        done = _cargo(cargo, *argv)
    if done.returncode != 0:
        raise LabError(f"cargo build failed in {CRATE_DIR} ({jbang.failure_line(done.stderr or done.stdout)}).")
    stamp.write_text(f"{key} {_made(program)}")
    return program


def _made(program: Path) -> str:
    """When and how big the binary was made: a cargo run by hand into the same folder (another
    version of the source) changes it, and the next build replaces it again."""
    st = program.stat()
    return f"{st.st_mtime_ns}:{st.st_size}"


def clients() -> dict[str, str]:
    """{client: version} as Cargo.lock pins them: what the examples were built with."""
    lock = tomllib.loads((CRATE_DIR / "Cargo.lock").read_text())
    versions = {p["name"]: p["version"] for p in lock.get("package", [])}
    return {client: versions.get(crate, "unknown") for client, crate in CLIENT_CRATES.items()}


def run_example(name: str, target: Endpoint, *args, cluster: Endpoint | None = None) -> JavaRun:
    """Build (if needed) and run Rust example `name` against `target` (host and port as its first
    arguments, the rest of the URL in REDIS_URL, a cluster's in REDIS_CLUSTER_URL); return its result
    with the clients' versions from Cargo.lock."""
    if not re.fullmatch(r"[a-z_]+", name) or not (CRATE_DIR / "src" / "bin" / f"{name}.rs").is_file():
        raise LabError(f"No Rust example {name!r} in {CRATE_DIR / 'src' / 'bin'}.")
    if target.tls or (cluster and cluster.tls):
        raise Unavailable("The Rust examples speak plain TCP, and this Redis wants TLS, so the Rust rows are left out.")
    program = build(name)
    run = run_printing(
        f"rust:{name}",
        f"The Rust example {name}",
        [str(program), target.host, str(target.port), *map(str, args)],
        CRATE_DIR,
        jbang.jbang_env(target, cluster),  # REDIS_URL, REDIS_CLUSTER_URL and the key prefix, as Java's
    )
    run.data.setdefault("clients", clients())
    return run
