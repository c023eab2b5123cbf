"""Running the JBang examples: find a JDK, find or fetch JBang, run an alias, read its JSON line."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import threading
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from tqdm.auto import tqdm

from . import results
from .errors import LabError
from .measure import Measurement, repeat_rule, show_progress, stop_reason
from .paths import REPO, build_dir, tools_dir
from .server import PREFIX, Endpoint

JBANG_VERSION = "0.132.1"
JBANG_SHA1 = "719c67526660a0122a126c0c99207724564968db"  # of jbang-cli-0.132.1-all.jar on Maven Central
JBANG_URL = f"https://repo1.maven.org/maven2/dev/jbang/jbang-cli/{JBANG_VERSION}/jbang-cli-{JBANG_VERSION}-all.jar"
RESULT_MARK = "PIPELAB-RESULT "
RUNS_LOG_VAR = "PIPELAB_JAVA_RUNS"  # files (os.pathsep between) each run_example appends its alias to
NO_JDK = (
    "No JDK 17+ found: install one (e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME; "
    "the Java examples need java and javac."
)


def java_home_bin(tool: str) -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(Path(home) / "bin" / tool, os.X_OK):
        return str(Path(home) / "bin" / tool)
    return shutil.which(tool)


def java_version(java: str) -> int:
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        return 0
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8" is Java 8


def require_jdk() -> str:
    """The java executable of a JDK 17+, or one sentence on what to install."""
    java, javac = java_home_bin("java"), java_home_bin("javac")
    if not java or not javac:
        raise LabError(NO_JDK)
    found = java_version(java)
    if found < 17:
        raise LabError(f"Java {found} found at {java}, but the examples need 17 or newer; " + NO_JDK.split(": ", 1)[1])
    return java


def jbang_jar() -> Path:
    """JBang's self-contained jar from Maven Central, fetched once into build/tools and checked."""
    jar = tools_dir() / f"jbang-cli-{JBANG_VERSION}-all.jar"
    if jar.exists():
        return jar
    jar.parent.mkdir(parents=True, exist_ok=True)
    print(f"pipelab: fetching JBang {JBANG_VERSION} from Maven Central (once) ...", flush=True)
    try:
        with urllib.request.urlopen(JBANG_URL, timeout=120) as resp:
            data = resp.read()
    except OSError as err:
        raise LabError(
            f"Could not fetch JBang from Maven Central ({err}); check the network, or install jbang and put it on PATH."
        ) from None
    if hashlib.sha1(data).hexdigest() != JBANG_SHA1:
        raise LabError("The JBang jar fetched from Maven Central does not match its pinned checksum; try again.")
    tmp = jar.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(jar)
    return jar


def jbang_env(target: Endpoint | None = None, cluster: Endpoint | None = None) -> dict:
    # The examples' key prefix, and when they take more rounds than asked (LabTiming.RepeatRule).
    env = dict(os.environ, JBANG_NO_VERSION_CHECK="true", PIPELAB_PREFIX=PREFIX, PIPELAB_REPEAT_RULE=repeat_rule())
    # User, password, database and TLS go by environment: a command line is visible to `ps`. A run
    # that also reaches a cluster learns the cluster's own (LabConnection.cluster()).
    env.pop("REDIS_CLUSTER_URL", None)
    if target is not None:
        env["REDIS_URL"] = target.url
    if cluster is not None:
        env["REDIS_CLUSTER_URL"] = cluster.url
    return env


def jbang_argv(args: list[str]) -> list[str]:
    """The command that runs `jbang ARGS`: a jbang on PATH wins, else the jar's two-step protocol.

    Run from its jar, dev.jbang.Main prints the java command line and exits 255; the official
    launcher then executes what it printed, and so do we (through bash, which reads its quoting).
    For a catalog alias the printed command is remembered (launch).
    """
    on_path = shutil.which("jbang")
    if on_path:
        return [on_path, *args]
    if args and args[0] in catalog_aliases():
        return ["bash", "-c", f"exec {launch(args[0])['command']} {shlex.join(args[1:])}"]
    first = _from_jar(args)
    if first.returncode == 255:
        return ["bash", "-c", "exec " + first.stdout.strip()]
    # e.g. `jbang build`: the work is done and nothing is left to run
    return ["true"]


@contextlib.contextmanager
def compiling():
    """Held while JBang may compile: two JBangs building one script into the same cache at once
    fail with "Error creating/updating jar" (a fresh cache, the notebooks and the course at once)."""
    lock_path = cache_dir() / "pipelab-compile.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _from_jar(args: list[str]) -> subprocess.CompletedProcess:
    with compiling():
        first = subprocess.run(
            [require_jdk(), "-classpath", str(jbang_jar()), "dev.jbang.Main", *args],
            cwd=REPO,
            env=jbang_env(),
            capture_output=True,
            text=True,
        )
    if first.returncode not in (0, 255):
        raise LabError(f"jbang {' '.join(args)} failed: {failure_line(first.stderr or first.stdout)}")
    return first


ARGS_MARK = "PIPELAB_ARGS"  # stands for the arguments in the command JBang prints for an alias
# {launch_key: {"command": ..., "jars": [...]}}, beside the compiled jars the commands name: a new
# clone of the same sources finds them, and an entry goes when its jars do.
LAUNCHES = "pipelab-launches.json"


SOURCES_LINE = re.compile(r"^//SOURCES\s+(\S+)", re.MULTILINE)


def alias_sources(alias: str) -> list[Path]:
    """A catalog alias's script and every file it pulls in by //SOURCES, followed through theirs."""
    todo, seen = [REPO / catalog_aliases()[alias]["script-ref"]], set()
    while todo:
        path = todo.pop().resolve()
        if path not in seen and path.exists():
            seen.add(path)
            todo.extend(path.parent / ref for ref in SOURCES_LINE.findall(path.read_text()))
    return sorted(seen)


def launch_key(alias: str) -> str:
    """What decides the java command JBang prints for an alias: JBang's and the JDK's versions, the
    catalog entry and every source file's bytes (LabDefaults too: its constants are compiled in)."""
    digest = hashlib.sha256(f"{JBANG_VERSION} {require_jdk()} {json.dumps(catalog_aliases()[alias])}".encode())
    for path in alias_sources(alias):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_dir() -> Path:
    """JBang's cache, where it keeps the jars it compiled: JBANG_CACHE_DIR, else JBANG_DIR/cache."""
    if os.environ.get("JBANG_CACHE_DIR"):
        return Path(os.environ["JBANG_CACHE_DIR"])
    return Path(os.environ.get("JBANG_DIR") or Path.home() / ".jbang") / "cache"


def launch(alias: str) -> dict:
    """The java command line JBang runs for a catalog alias, without the arguments, and the jars it
    names. JBang's own launcher is a JVM start of about a second per run, so both are kept in JBang's
    cache and asked for again only when launch_key changes or a jar they name is gone."""
    store, key = cache_dir() / LAUNCHES, launch_key(alias)
    if key in (known := _launches(store)):
        return known[key]
    printed = _from_jar([alias, ARGS_MARK]).stdout.strip()
    if not printed.endswith(" " + ARGS_MARK):
        raise LabError(f"jbang {alias} printed no java command to run: {failure_line(printed)}")
    command = printed.removesuffix(" " + ARGS_MARK)
    words = shlex.split(command)
    jars = [j for i, w in enumerate(words[:-1]) if w in ("-classpath", "-cp") for j in words[i + 1].split(os.pathsep)]
    learned = {"command": command, "jars": jars}
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        # Notebooks, the course and the tests learn launches at once: each adds its own to what the
        # store holds by then, one at a time, so that none is lost.
        with open(store.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            part = store.with_suffix(f".{os.getpid()}.part")
            part.write_text(json.dumps(_launches(store) | {key: learned}, indent=1))
            part.replace(store)
    except OSError:  # a cache that cannot be written costs a JVM start next time, nothing else
        pass
    return learned


def _launches(store: Path) -> dict:
    """The launches the store keeps whose jars are all still there."""
    try:
        known = json.loads(store.read_text())
    except (OSError, ValueError):  # none yet, or cut short
        return {}
    return {k: v for k, v in known.items() if all(Path(jar).exists() for jar in v.get("jars", []))}


def ready() -> str:
    """What runs JBang, with nothing started: jbang on PATH, else its jar (fetched now, once)."""
    return shutil.which("jbang") or str(jbang_jar())


def jbang_output(args: list[str]) -> str:
    """What a jbang command that only reports prints, e.g. `info classpath ALIAS`."""
    on_path = shutil.which("jbang")
    done = (
        subprocess.run([on_path, *args], cwd=REPO, env=jbang_env(), capture_output=True, text=True)
        if on_path
        else _from_jar(args)
    )
    if done.returncode != 0:
        raise LabError(f"jbang {' '.join(args)} failed: {failure_line(done.stderr or done.stdout)}")
    return done.stdout


STACK_FRAME = re.compile(r"^\s+at |^\s*\.\.\. \d+ (more|common frames omitted)$")


JBANG_HINT = "[jbang] Run with --verbose"  # follows JBang's own error line, which says more


def failure_line(text: str) -> str:
    """The line that says why a program failed: the last one it printed that is not a stack frame (of a
    Java exception, its deepest "Caused by:"), or "no output"."""
    lines = [
        line.strip()
        for line in text.strip().splitlines()
        if line.strip() and not STACK_FRAME.match(line) and not line.startswith(JBANG_HINT)
    ]
    return lines[-1] if lines else "no output"


def jbang(args: list[str], *, quiet: bool = False) -> subprocess.CompletedProcess:
    """Run jbang with `args` from the repo root (where jbang-catalog.json is); raise on failure."""
    require_jdk()
    argv = jbang_argv(args)
    with compiling() if args[:1] == ["build"] else contextlib.nullcontext():
        done = subprocess.run(argv, cwd=REPO, env=jbang_env(), capture_output=True, text=True)
    if done.returncode != 0:
        raise LabError(f"jbang {' '.join(args)} failed: {failure_line(done.stderr or done.stdout)}")
    if not quiet and done.stdout:
        print(done.stdout, end="")
    return done


def catalog_aliases() -> dict[str, dict]:
    return json.loads((REPO / "jbang-catalog.json").read_text())["aliases"]


@dataclass
class JavaRun:
    alias: str
    data: dict
    lines: list[str] = field(default_factory=list)

    @property
    def clients(self) -> dict:
        return self.data.get("clients", {})

    @property
    def facts(self) -> dict:
        """Observations that are not timings (an exception's class, a count read on the server)."""
        return self.data.get("facts", {})

    @property
    def fields(self) -> dict[str, dict]:
        """Per mode, what it is (e.g. {"depth": 256, "command": "SET", "mode": "pipelined"}), where the
        example says: read these, never the mode's name."""
        return self.data.get("fields", {})

    @property
    def wire(self) -> dict[str, dict[str, int]]:
        """Per mode, the commands the server executed (INFO commandstats deltas taken by the example)."""
        return self.data.get("wire", {})

    def measurements(self) -> dict[str, Measurement]:
        """One Measurement per mode; `ops` (commands per sample) may differ by mode, `cpu_s` is the JVM's CPU."""
        ops = self.data.get("ops", {})
        cpu = self.data.get("cpu_s", {})
        warmup = self.data.get("warmup_s", {})
        paired = self.data.get("paired", {})  # modes measured in the same rounds (LabSupport.interleaved)
        stopped = self.data.get("stopped", {})  # what ended each measured mode's rounds short of the target
        collected = self.data.get("collected", {})  # recorded samples a garbage collection fell inside
        return {
            mode: Measurement(
                mode,
                int(ops.get(mode, self.data["size"])),
                [float(s) for s in samples],
                {
                    "alias": self.alias,
                    "client_cpu_s": cpu.get(mode),
                    **({"collected_samples": collected[mode]} if mode in collected else {}),
                    **self.fields.get(mode, {}),
                },
                list(warmup.get(mode, [])),
                paired_with=f"{self.alias}: {paired[mode]}" if mode in paired else "",
                stopped=stop_reason(samples, stopped[mode]) if mode in stopped else "",
            )
            for mode, samples in self.data["modes"].items()
        }


def fact(run: JavaRun | None, name: str, unit: str = "count") -> dict:
    """A figure for the prose from a Java example's facts: a number as it is, a text as text."""
    value = run.facts.get(name) if run else None
    return results.quantity(0, "count", value) if isinstance(value, str) else results.quantity(value, unit)


def keep_failure(alias: str, target: Endpoint, stderr: str, stdout: list[str]) -> Path:
    """All a run that died of an exception printed, in build/logs/jbang-<alias>.log with the password
    masked: the error names one line, and a rare failure inside a client library needs its stack."""
    log = build_dir() / "logs" / f"jbang-{alias}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    text = f"== stderr\n{stderr}\n== stdout\n" + "\n".join(stdout) + "\n"
    if target.password:
        text = text.replace(target.password, "***").replace(quote(target.password, safe=""), "***")
    log.write_text(text)
    return log


def parse_result(stdout: str) -> dict:
    lines = [line for line in stdout.splitlines() if line.startswith(RESULT_MARK)]
    if len(lines) != 1:
        raise LabError(f"A Java example printed {len(lines)} result lines instead of one; run it by hand to see why.")
    return json.loads(lines[0][len(RESULT_MARK) :])


def run_example(alias: str, target: Endpoint, *args, cluster: Endpoint | None = None) -> JavaRun:
    """Run a catalog alias against `target` (host and port as its first arguments, the rest of the URL
    in REDIS_URL) with positional args, and `cluster`'s node settings in REDIS_CLUSTER_URL when the
    run reaches a cluster too; stream its lines, return its result."""
    if alias not in catalog_aliases():
        raise LabError(f"No JBang alias {alias!r} in jbang-catalog.json.")
    require_jdk()
    # The book build keys a chapter on the examples it ran, and the tests ask which ran: one or more logs.
    for runs_log in filter(None, os.environ.get(RUNS_LOG_VAR, "").split(os.pathsep)):
        with open(runs_log, "a") as log:
            log.write(alias + "\n")
    argv = jbang_argv([alias, target.host, str(target.port), *map(str, args)])
    lines: list[str] = []
    bar = None
    if show_progress():
        bar = tqdm(desc=f"jbang {alias}", unit=" lines", leave=False)
    proc = subprocess.Popen(
        argv, cwd=REPO, env=jbang_env(target, cluster), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stderr is not None
    # stderr is drained beside stdout: an example that logs a lot would otherwise fill the pipe and stall.
    err_chunks: list[str] = []
    drain = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()), daemon=True)
    drain.start()
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if bar is not None:
            bar.update(1)
    proc.wait()
    drain.join()
    stderr = "".join(err_chunks)
    if bar is not None:
        bar.close()
    if proc.returncode != 0:
        why = failure_line(stderr or chr(10).join(lines))
        if any(STACK_FRAME.match(line) for line in stderr.splitlines()):
            why += f" (the whole stack is in {keep_failure(alias, target, stderr, lines)})"
        raise LabError(f"jbang {alias} exited with {proc.returncode}: {why}")
    return JavaRun(alias, parse_result("\n".join(lines)), [line for line in lines if not line.startswith(RESULT_MARK)])
