"""Running the Node.js examples: find node and npm, install their lock into build/tools, run one, read its JSON line.

The examples (node-go-rust-examples/node/) print the same `PIPELAB-RESULT {json}` line as
the Java ones, so a run comes back as a jbang.JavaRun. Their packages are installed by `npm ci` from
the committed package-lock.json (integrity hashes checked) into build/tools/node/<name>/, again only
when the lock, package.json or Node's major version changed; the examples are copied beside them,
since Node resolves an `import` from the importing file's directory. Nothing is installed globally.
The process runs where the lab placed this one (placement.pin_clients: children inherit the mask).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from . import host, placement
from .errors import LabError
from .jbang import JavaRun, failure_line
from .paths import tools_dir
from .programs import OTHER_EXAMPLES, run_printing
from .server import PREFIX, Endpoint

EXAMPLES = OTHER_EXAMPLES / "node"
MIN_NODE = 20  # ioredis 6 and node-redis 6 declare engines node >= 20
OFF_VAR = "PIPELAB_NODE"  # "off": behave as on a machine without Node (the tests of the missing case)
INSTALL_TIMEOUT_S = 600
STAMP = ".pipelab-installed"  # in the install dir: the digest of what was installed
NO_NODE = (
    f"Node.js {MIN_NODE}+ with npm is not installed here, so the Node examples are skipped: "
    "install it (e.g. apt-get install nodejs npm, or from nodejs.org) and run the chapter again."
)


def node_major(node: str) -> int:
    """The major version `node --version` prints (v20.11.1 is 20), 0 if it prints none."""
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    match = re.match(r"v(\d+)\.", out.strip())
    return int(match.group(1)) if match else 0


def require_node() -> tuple[str, str]:
    """The node and npm executables, or Unavailable with one sentence on what to install."""
    if os.environ.get(OFF_VAR, "").lower() == "off":
        raise host.Unavailable(f"Node.js is switched off here ({OFF_VAR}=off), so the Node examples are skipped.")
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        raise host.Unavailable(NO_NODE)
    found = node_major(node)
    if found < MIN_NODE:
        raise host.Unavailable(
            f"Node.js {found or 'of unknown version'} is at {node}, but the Node examples need {MIN_NODE} or newer: "
            "install a newer one (e.g. from nodejs.org) and run the chapter again."
        )
    return node, npm


def install_dir(name: str = "ch10") -> Path:
    return tools_dir() / "node" / name


def install_key(source: Path, node: str) -> str:
    """What decides node_modules: the lock, package.json and Node's major version."""
    digest = hashlib.sha256(f"node {node_major(node)}\n".encode())
    for part in ("package.json", "package-lock.json"):
        digest.update((source / part).read_bytes())
    return digest.hexdigest()


def install(source: Path | None = None, name: str = "ch10") -> Path:
    """`npm ci` of `source`'s lock (the chapter's examples by default) into build/tools/node/<name> when it
    changed; the examples copied beside it."""
    node, npm = require_node()
    source = source or EXAMPLES
    target = install_dir(name)
    key = install_key(source, node)
    stamp = target / STAMP
    if not (stamp.exists() and stamp.read_text() == key and (target / "node_modules").is_dir()):
        target.mkdir(parents=True, exist_ok=True)
        for part in ("package.json", "package-lock.json"):
            shutil.copyfile(source / part, target / part)
        stamp.unlink(missing_ok=True)
        print(f"pipelab: npm ci of the Node examples' lock into {target} ...", flush=True)
        # --ignore-scripts: no package runs code at install (GLIDE's native core comes prebuilt).
        argv = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
        try:
            done = subprocess.run(argv, cwd=target, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise LabError(
                f"npm ci took over {INSTALL_TIMEOUT_S} s in {target}; check the network and try again."
            ) from None
        if done.returncode != 0:
            raise LabError(
                f"npm ci failed in {target} ({failure_line(done.stderr or done.stdout)}); "
                "check that the npm registry is reachable."
            )
        stamp.write_text(key)
    for script in source.glob("*.mjs"):
        shutil.copyfile(script, target / script.name)
    return target


def node_env(target: Endpoint, cluster: Endpoint | None = None) -> dict:
    """User, password, database and TLS by environment (a command line is visible to `ps`), as for JBang."""
    env = dict(os.environ, PIPELAB_PREFIX=PREFIX, REDIS_URL=target.url)
    env.pop("REDIS_CLUSTER_URL", None)
    if cluster is not None:
        env["REDIS_CLUSTER_URL"] = cluster.url
    return env


def run_example(script: str, target: Endpoint, *args, cluster: Endpoint | None = None) -> JavaRun:
    """Run `script` (e.g. "explicit.mjs") against `target` (host and port its first arguments), with the
    rest of `args`; stream its lines, return its result as a JavaRun named "node <script>"."""
    node, _ = require_node()
    where = install()
    if not (where / script).exists():
        raise LabError(f"No Node example {script} in {EXAMPLES}.")
    argv = [node, script, target.host, str(target.port), *map(str, args)]
    run = run_printing(f"node {script}", f"node {script}", argv, where, node_env(target, cluster))
    run.data["placement"] = placement.describe()  # the CPUs this process, and so the example, could use
    return run


def unavailable() -> str | None:
    """Why the Node examples cannot run here, in one sentence; None when they can."""
    try:
        require_node()
    except host.Unavailable as err:
        return str(err)
    return None
