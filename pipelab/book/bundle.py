"""The offline room: `make bundle` packs everything a laptop fetches into one file, and `make offline
BUNDLE=<file>` installs from that file alone, with no network, on a laptop of the same platform.

The bundle, build/pipelab-bundle-<platform>.tar.gz, is manifest.json followed by one folder per part
(PARTS). `make offline` first runs this file with the reader's Python, before there is a venv (so what
that runs imports the standard library only): it checks the platform and the lock, unpacks the parts
into build/offline/ and writes build/offline.mk. The Makefile includes that file and `pipelab` reads it
(load_env), so pip, uv, JBang, npm, go and cargo take what they fetch from build/offline: make installs uv
from its wheel and syncs the venv from uv's cache (hashes checked against uv.lock as usual), then
`pipelab offline` (install) puts JBang and toxiproxy in build/tools, runs chapter 10's npm ci and go mod
download, and resolves every Java dependency set offline; cargo takes chapter 11's crates from the
bundle's vendored copy through a cargo home of its own. Deleting build/offline.mk goes back online.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # as pipelab.paths.REPO, which this file cannot import (see above)
BUILD = REPO / "build"  # where the Makefile keeps the venv and includes offline.mk from
FORMAT = 1
MANIFEST = "manifest.json"
ENV_FILE = "offline.mk"
JBANG_CONFIG = "jbang.properties"
PARTS = {
    "uv": "the pinned uv, as a wheel",
    "python": "uv's cache: every wheel uv.lock installs (test and lab extras)",
    "jbang": "JBang's jar",
    "maven": "every Maven jar of the Java examples, exercises and solutions",
    "toxiproxy": "toxiproxy-server",
    "npm": "npm's cache for chapter 10's Node lock",
    "go": "chapter 10's Go modules, as a module proxy",
    "rust": "chapter 11's crates, vendored (cargo vendor)",
}
CARGO_HOME = "cargo"  # in build/offline: a cargo home whose config sends crates.io to the vendored crates
CHECKED = ("uv", "jbang", "toxiproxy")  # parts of a few files, each checked by its digest at unpack
DEPS_LINE = re.compile(r"^//(?:DEPS|REPOS)\s+(.+)$", re.MULTILINE)


class BundleError(Exception):
    """What is wrong with a bundle or its unpacking, in one sentence."""


def platform_tag(lock: str | None = None) -> str:
    """What a bundle's binaries and wheels are made for: system, processor, the stretch of C library or
    macOS versions that picks the same wheels of the lock, and Python (e.g. linux-x86_64-glibc2.34-cp311)."""
    system = {"darwin": "macos"}.get(platform.system().lower(), platform.system().lower())
    if system == "linux" and platform.libc_ver()[0] != "glibc":  # musl takes other wheels and binaries
        system = "linux-musl"
    machine = platform.machine().lower()
    named = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    stretch = os_stretch((REPO / "uv.lock").read_text() if lock is None else lock, system, machine)
    impl = "cp" if sys.implementation.name == "cpython" else sys.implementation.name
    return "-".join(filter(None, [system, named, stretch, f"{impl}{sys.version_info[0]}{sys.version_info[1]}"]))


WHEEL = re.compile(r'/([^/"\s]+)\.whl"')  # name-version[-build]-python-abi-platform, in a lock's URLs
LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def os_stretch(lock: str, system: str, machine: str, python: str = "") -> str:
    """The newest glibc (or macOS) version that a wheel of the lock for this Python and processor asks
    for and this machine has: two machines with the same one install the same wheels (glibc 2.36 and
    2.39 both take a manylinux_2_34 wheel; 2.31 takes the older one a bundle made on 2.36 lacks)."""
    if system == "linux":
        family, mine = "glibc", platform.libc_ver()[1]
        level = re.compile(rf"^(?:manylinux_(\d+)_(\d+)|(manylinux\w+?))_{machine}$")
    elif system == "macos":
        family, mine = "macos", platform.mac_ver()[0]
        level = re.compile(r"^macosx_(\d+)_(\d+)_\w+()$")
    else:
        return ""
    have = tuple(int(part) for part in re.findall(r"\d+", mine)[:2])
    python = python or f"cp{sys.version_info[0]}{sys.version_info[1]}"
    needed = set()
    for py, abi, plat in (name.split("-")[-3:] for name in WHEEL.findall(lock)):
        if not (python in py.split(".") or abi == "abi3" or py.startswith("py")):
            continue  # another Python's wheel
        asks = []
        for tag in plat.split("."):
            if found := level.match(tag):
                major, minor, legacy = found.groups()
                asks.append(LEGACY.get(legacy) if legacy else (int(major), int(minor)))
        if asks := [a for a in asks if a]:
            needed.add(min(asks))  # a wheel of several tags installs where its oldest one does
    newest = max((n for n in needed if n <= have), default=None)
    return f"{family}{newest[0]}.{newest[1]}" if newest else family


def human(size: float) -> str:
    return f"{size / 1e6:.1f} MB"  # every part is a few MB or more


def tree(path: Path) -> tuple[int, int]:
    """Bytes and entries (files and links) under `path`."""
    size = count = 0
    for root, dirs, files in os.walk(path):  # a link to a folder is listed with the folders, not followed
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            count += 1
            size += os.lstat(os.path.join(root, name)).st_size
    return size, count


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def describe(stage: Path, **facts) -> dict:
    """The manifest of the parts in `stage`: each one's size and entries, the digests of CHECKED parts."""
    parts, digests = {}, {}
    for name in PARTS:
        if (stage / name).is_dir():
            size, count = tree(stage / name)
            parts[name] = {"bytes": size, "files": count, "what": PARTS[name]}
            if name in CHECKED:
                for path in sorted(p for p in (stage / name).rglob("*") if p.is_file()):
                    digests[path.relative_to(stage).as_posix()] = sha256(path)
    return {"format": FORMAT, "platform": platform_tag(), "parts": parts, "sha256": digests, **facts}


def bundle_name(tag: str) -> str:
    return f"pipelab-bundle-{tag}.tar.gz"


def pack(stage: Path, manifest: dict, out: Path) -> dict[str, int]:
    """Write the bundle, the manifest first (unpack reads it before anything else); each part's packed
    bytes (close to exact: the compressor holds a little back between parts)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".part")
    packed = {}
    # Level 1: a third of the size of the caches for a fraction of level 6's time.
    with open(partial, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz", compresslevel=1) as tar:
        data = json.dumps(manifest, indent=1).encode()
        info = tarfile.TarInfo(MANIFEST)
        info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
        tar.addfile(info, io.BytesIO(data))
        for name in manifest["parts"]:
            start = raw.tell()
            tar.add(stage / name, arcname=name, filter=_anonymous)
            packed[name] = raw.tell() - start
    partial.replace(out)
    return packed


def _anonymous(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def unpack(bundle: Path, build: Path = BUILD, lock: Path = REPO / "uv.lock") -> dict:
    """Check `bundle` (a pipelab bundle, this platform, this clone's lock), unpack its parts into
    build/offline and write build/offline.mk; its manifest."""
    if not bundle.is_file():
        raise BundleError(f"No bundle at {bundle}: make one with `make bundle` on a machine with the network.")
    fresh, offline = build / "offline.next", build / "offline"
    shutil.rmtree(fresh, ignore_errors=True)
    try:
        with tarfile.open(bundle, "r:gz") as tar:
            first = tar.next()
            if first is None or first.name != MANIFEST:
                raise BundleError(f"{bundle} is not a pipelab bundle (it has no {MANIFEST} first).")
            manifest = json.load(tar.extractfile(first))
            _suits(manifest, bundle, lock)
            settings(build, manifest["parts"])  # before anything is unpacked
            for member in tar:
                if member.name != MANIFEST:
                    _extract(tar, member, fresh, bundle)
        _complete(fresh, manifest, bundle)
    except BaseException as err:  # Ctrl-C too: build/offline stays as it was, and nothing half unpacked
        shutil.rmtree(fresh, ignore_errors=True)
        if isinstance(err, (tarfile.TarError, EOFError, OSError, ValueError, KeyError, zlib.error)):
            raise BundleError(
                f"{bundle} is damaged or not a pipelab bundle ({str(err) or type(err).__name__}); "
                "copy it again, or make it again with `make bundle`."
            ) from None
        raise
    (fresh / MANIFEST).write_text(json.dumps(manifest, indent=1))
    shutil.rmtree(offline, ignore_errors=True)
    fresh.rename(offline)
    write_env(build, manifest, bundle.name)
    return manifest


def _suits(manifest: dict, bundle: Path, lock: Path) -> None:
    if manifest.get("format") != FORMAT:
        raise BundleError(f"{bundle} was made by another version of pipelab; make it again with `make bundle`.")
    if lock.exists() and manifest.get("uv_lock") not in (None, sha256(lock)):
        raise BundleError(
            f"{bundle.name} holds the packages of another uv.lock than this clone's: make it from this "
            f"clone's commit, or check out the one it was made from ({manifest.get('commit') or 'unknown'})."
        )
    made_for, here = manifest.get("platform"), platform_tag(lock.read_text() if lock.exists() else "")
    if made_for != here:
        raise BundleError(
            f"{bundle.name} was made for {made_for}, but this machine is {here}: make the bundle with `make "
            f"bundle` on a {here} machine (system, processor, the C library's or macOS's version as far as "
            "the lock's wheels tell them apart, and Python 3.x)."
        )


def _extract(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path, bundle: Path) -> None:
    """Only a part's files, and links that stay inside it (uv's cache links its wheels to its archives)."""
    parts = Path(member.name).parts
    inside = parts and parts[0] in PARTS and ".." not in parts and not Path(member.name).is_absolute()
    if member.issym():
        target = os.path.normpath(os.path.join(os.path.dirname(member.name), member.linkname))
        inside = inside and not os.path.isabs(member.linkname) and target.split(os.sep)[0] == parts[0]
    if not inside or not (member.isfile() or member.isdir() or member.issym()):
        raise BundleError(
            f"{bundle} holds {member.name!r}, which is no part of a pipelab bundle; nothing was unpacked."
        )
    if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later, and the distributions' backports
        tar.extract(member, dest, filter="data")
    else:
        tar.extract(member, dest)


def _complete(fresh: Path, manifest: dict, bundle: Path) -> None:
    for name, part in manifest["parts"].items():
        if tree(fresh / name)[1] != part["files"]:
            raise BundleError(f"{bundle} is incomplete ({name} lacks files); copy it again.")
    for rel, digest in manifest.get("sha256", {}).items():
        if sha256(fresh / rel) != digest:
            raise BundleError(f"{bundle} is damaged ({rel} does not match its digest); copy it again.")


def offline_env(offline: Path, parts) -> dict[str, str]:
    """What sends each tool to build/offline instead of the network, for the parts there are."""
    env = {}
    if "uv" in parts:  # the Makefile's `pip install uv==...`
        env |= {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(offline / "uv")}
    if "python" in parts:
        env |= {"UV_CACHE_DIR": str(offline / "python"), "UV_OFFLINE": "1", "UV_PYTHON_DOWNLOADS": "never"}
    if "maven" in parts:  # JBang reads offline=true from JBANG_CONFIG as if -o were given
        env |= {"JBANG_REPO": str(offline / "maven"), "JBANG_CONFIG": str(offline / JBANG_CONFIG)}
    if "npm" in parts:
        env |= {"npm_config_cache": str(offline / "npm"), "npm_config_offline": "true"}
    if "go" in parts:  # go.sum still checks every module; GOSUMDB=off only stops the lookups of new ones
        env |= {"GOPROXY": (offline / "go").as_uri(), "GOSUMDB": "off"}
    if "rust" in parts:  # cargo reads source replacement from a config file, not from the environment
        env |= {"CARGO_HOME": str(offline / CARGO_HOME)}
    return env


def vendored(crates: Path) -> str:
    """A cargo config that takes every crates.io crate from `crates` (Cargo.lock's checksums still hold)."""
    return f'[source.crates-io]\nreplace-with = "bundle"\n\n[source.bundle]\ndirectory = {json.dumps(str(crates))}\n'


def write_env(build: Path, manifest: dict, source: str) -> Path:
    """build/offline.mk: `export NAME=value` lines, which make includes and a shell sources alike."""
    offline = build / "offline"
    env = settings(build, manifest["parts"])
    if "maven" in manifest["parts"]:
        (offline / JBANG_CONFIG).write_text("# pipelab offline: Maven's local repository only\noffline=true\n")
    if "rust" in manifest["parts"]:
        (offline / CARGO_HOME).mkdir(exist_ok=True)
        (offline / CARGO_HOME / "config.toml").write_text(vendored((offline / "rust").resolve()))
    lines = [
        f"# Written by `make offline` from {source}: pip, uv, JBang, npm, go and cargo fetch from build/offline only.",
        "# The Makefile includes it and `pipelab` reads it (a shell can source it); delete it to go online.",
        *(f"export {k}={v}" for k, v in env.items()),
    ]
    path = build / ENV_FILE
    path.write_text("\n".join(lines) + "\n")
    return path


def settings(build: Path, parts) -> dict[str, str]:
    """offline_env for build/offline, if each value reads the same to make and to a shell."""
    env = offline_env((build / "offline").resolve(), parts)
    if odd := [v for v in env.values() if not SAFE_VALUE.fullmatch(v)]:
        raise BundleError(f"The offline settings cannot name {odd[0]}: clone the repository to a plainer path.")
    return env


SAFE_VALUE = re.compile(r"[\w@%+=:,./~-]+")  # the same to make and to sh: no space, quote, $ or #
ENV_LINE = re.compile(r"^export (\w+)=(.*)$", re.MULTILINE)


def load_env(build: Path | None = None) -> dict[str, str]:
    """build/offline.mk's settings, for `pipelab` started outside make; none before `make offline`."""
    try:
        text = ((build or BUILD) / ENV_FILE).read_text()
    except OSError:
        return {}
    return dict(ENV_LINE.findall(text))


def main(argv: list[str]) -> int:
    """`python pipelab/book/bundle.py unpack FILE [BUILD]`: the Makefile's first step of `make offline`."""
    if len(argv) not in (2, 3) or argv[0] != "unpack":
        print("usage: python pipelab/book/bundle.py unpack BUNDLE [BUILD_DIR]", file=sys.stderr)
        return 2
    try:
        manifest = unpack(Path(argv[1]), *map(Path, argv[2:]))
    except BundleError as err:
        print(f"pipelab: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pipelab: interrupted; build/offline is as it was.", file=sys.stderr)
        return 130
    print(f"pipelab: {argv[1]}: made for {manifest['platform']} from commit {manifest.get('commit') or '?'}")
    for name, part in manifest["parts"].items():
        print(f"pipelab:   {name:<9} {human(part['bytes']):>9}  {part['what']}")
    print(f"pipelab: unpacked into build/offline; build/{ENV_FILE} sends every download there", flush=True)
    return 0


# Below: what runs with the venv (`pipelab bundle`, `pipelab offline`); pipelab's modules are imported
# inside each function, since the part above runs before there is a venv.


def dep_sets() -> dict[tuple[str, ...], str]:
    """Each distinct set of //DEPS (and //REPOS) lines among the catalog's aliases, //SOURCES followed,
    with the first alias that has it: resolving one alias per set fetches every jar the examples use."""
    from .. import jbang  # noqa: PLC0415

    sets: dict[tuple[str, ...], str] = {}
    for alias in jbang.catalog_aliases():
        lines = {line.strip() for path in jbang.alias_sources(alias) for line in DEPS_LINE.findall(path.read_text())}
        sets.setdefault(tuple(sorted(lines)), alias)
    return sets


def _run(argv: list, what: str, **kwargs) -> subprocess.CompletedProcess:
    from ..errors import LabError  # noqa: PLC0415
    from ..jbang import failure_line  # noqa: PLC0415

    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise LabError(f"{what} failed ({failure_line(done.stderr or done.stdout)}).")
    return done


def build_bundle(uv: Path, uv_version: str, out: Path | None = None) -> Path:
    """Fetch every part into a scratch folder under build/, check the Java, Node and Go parts offline, pack."""
    from .. import jbang  # noqa: PLC0415
    from ..paths import build_dir  # noqa: PLC0415
    from . import bundle_toolchains as toolchains  # noqa: PLC0415

    for key, value in load_env().items():  # a machine installed offline itself still fetches afresh here
        if os.environ.get(key) == value:
            del os.environ[key]
    java = jbang.require_jdk()
    out = out or build_dir() / bundle_name(platform_tag())
    build_dir().mkdir(parents=True, exist_ok=True)
    skipped: dict[str, str] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bundle-", dir=build_dir()) as scratch:
        stage, work = Path(scratch) / "stage", Path(scratch) / "work"
        work.mkdir(parents=True)
        steps = [
            ("uv", lambda d: _fill_uv(d, uv, uv_version)),
            ("python", lambda d: _fill_python(d, uv, work)),
            ("jbang", _fill_jbang),
            ("maven", lambda d: _fill_maven(d, java, work)),
            ("toxiproxy", _fill_toxiproxy),
            ("npm", lambda d: toolchains.fill_npm(d, work)),
            ("go", lambda d: toolchains.fill_go(d, work)),
            ("rust", lambda d: toolchains.fill_rust(d, work)),
        ]
        for name, fill in steps:
            print(f"pipelab: bundle: {name}: {PARTS[name]} ...", flush=True)
            (stage / name).mkdir(parents=True)
            why = fill(stage / name)
            if why:  # e.g. no Node here: the laptops' chapter 10 then needs the network for it
                shutil.rmtree(stage / name)
                skipped[name] = why
                print(f"pipelab: bundle: no {name} part: {why}", flush=True)
        manifest = describe(
            stage,
            made=time.strftime("%Y-%m-%d %H:%M"),
            commit=_commit(),
            python=platform.python_version(),
            uv_lock=sha256(REPO / "uv.lock"),
            uv_version=uv_version,
            jbang_version=jbang.JBANG_VERSION,
            java=[{"alias": alias, "deps": list(deps)} for deps, alias in dep_sets().items()],
            skipped=skipped,
        )
        print(f"pipelab: bundle: packing {out.name} ...", flush=True)
        packed = pack(stage, manifest, out)
    _report(out, manifest, packed, time.monotonic() - started)
    return out


def _report(out: Path, manifest: dict, packed: dict[str, int], seconds: float) -> None:
    print(f"pipelab: bundle for {manifest['platform']} in {seconds:.0f} s: {out}")
    print(f"pipelab:   {'part':<9} {'unpacked':>9} {'packed':>9}  what")
    for name, part in manifest["parts"].items():
        print(f"pipelab:   {name:<9} {human(part['bytes']):>9} {human(packed[name]):>9}  {part['what']}")
    unpacked = sum(part["bytes"] for part in manifest["parts"].values())
    print(f"pipelab:   {'total':<9} {human(unpacked):>9} {human(out.stat().st_size):>9}  the file")
    for name, why in manifest["skipped"].items():
        print(f"pipelab: without {name}: {why}")
    print(f"pipelab: on each {manifest['platform']} laptop, with no network: make offline BUNDLE=<this file>")


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else ""


def _fill_uv(dest: Path, uv: Path, version: str) -> None:
    # The Python that runs uv has pip (the Makefile made it with venv); the wheel for this platform.
    pip = [uv.parent / "python", "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    _run([*pip, "--no-deps", "--only-binary=:all:", "--dest", dest, f"uv=={version}"], f"pip download uv=={version}")


def _fill_python(dest: Path, uv: Path, work: Path) -> None:
    """A sync of the lock into a throwaway venv with an empty cache: the cache then holds what `make`
    installs here, setuptools for building pipelab itself included. The lock picks some packages by
    Python's patch release (below 3.11.5, say), so the lock is also installed for one release of each
    stretch between its markers: a laptop's Python 3.x.y finds its own wheels too."""
    env = dict(os.environ, UV_CACHE_DIR=str(dest), UV_PROJECT_ENVIRONMENT=str(work / "venv"))
    env["UV_PYTHON_DOWNLOADS"] = "never"
    python = getattr(sys, "_base_executable", sys.executable)  # the venv's own Python, not the venv
    extras = ["--extra", "test", "--extra", "lab"]
    _run([uv, "sync", "--frozen", "--quiet", *extras, "--python", python], "uv sync", cwd=REPO, env=env)
    wanted = work / "requirements.txt"  # the lock as pinned requirements, with their hashes and markers
    export = [uv, "export", "--frozen", "--quiet", *extras, "--no-emit-project", "--format", "requirements-txt"]
    _run([*export, "--output-file", wanted], "uv export", cwd=REPO, env=env)
    for version in patch_releases((REPO / "uv.lock").read_text()):
        pinned = ["--python-version", version, "--python", python, "--no-deps", "--require-hashes", "-r", wanted]
        target = ["--target", work / f"python-{version}"]
        _run([uv, "pip", "install", "--quiet", *target, *pinned], f"uv pip install for Python {version}", env=env)
    for path in dest.glob("interpreter-v*"):  # what uv learned of this machine's Pythons
        shutil.rmtree(path)


FULL_VERSION = re.compile(r"python_full_version\s*[<>=!~]+\s*'(\d+)\.(\d+)\.(\d+)'")


def patch_releases(lock: str, minor: tuple[int, int] | None = None) -> list[str]:
    """A release of this Python 3.x in each stretch the lock's python_full_version markers part."""
    major, minor_ = minor or sys.version_info[:2]
    patches = {0}
    for found in FULL_VERSION.findall(lock):
        if (int(found[0]), int(found[1])) == (major, minor_):
            patches |= {int(found[2]), int(found[2]) + 1}  # both sides, whichever way it compares
    return [f"{major}.{minor_}.{patch}" for patch in sorted(patches)]


def _fill_jbang(dest: Path) -> None:
    from .. import jbang  # noqa: PLC0415

    shutil.copy2(jbang.jbang_jar(), dest)  # fetched and checked against its pinned SHA-1


def _fill_maven(dest: Path, java: str, work: Path) -> None:
    """Each dependency set resolved by JBang into `dest` as the Maven local repository, then resolved
    again offline from it alone, each time with a JBang cache of its own (so none is read from yours)."""
    from .. import jbang  # noqa: PLC0415

    jar = jbang.jbang_jar()
    (work / JBANG_CONFIG).write_text("offline=true\n")
    for round_, extra in (("online", {}), ("offline", {"JBANG_CONFIG": str(work / JBANG_CONFIG)})):
        env = jbang.jbang_env() | {"JBANG_REPO": str(dest), "JBANG_DIR": str(work / f"jbang-{round_}")} | extra
        env.pop("JBANG_CACHE_DIR", None)
        if not extra:
            env.pop("JBANG_CONFIG", None)
        for deps, alias in dep_sets().items():
            what = f"jbang info classpath {alias} ({round_}, {len(deps)} //DEPS lines)"
            _run([java, "-classpath", jar, "dev.jbang.Main", "info", "classpath", alias], what, cwd=REPO, env=env)


def _fill_toxiproxy(dest: Path) -> str | None:
    from .. import proxy  # noqa: PLC0415

    try:
        binary = proxy.find_toxiproxy()
    except proxy.ToxiproxyUnavailable as err:
        return f"{err} The laptops then skip the RTT experiments unless they have toxiproxy."
    shutil.copy2(binary, dest / "toxiproxy-server")
    return None


def install(build: Path = BUILD) -> None:
    """After make has the venv: JBang and toxiproxy into build/tools, the Node packages, Go modules and
    Rust crates from the bundle (bundle_toolchains), and every Java dependency set resolved offline."""
    from .. import jbang, proxy  # noqa: PLC0415
    from ..paths import tools_dir  # noqa: PLC0415
    from . import bundle_toolchains as toolchains  # noqa: PLC0415

    offline = build / "offline"
    try:
        manifest = json.loads((offline / MANIFEST).read_text())
    except (OSError, ValueError):
        raise BundleError("No bundle is unpacked here: run `make offline BUNDLE=<file>`.") from None
    parts = manifest["parts"]
    if not load_env(build):  # `pipelab` loaded it into os.environ as it started (cli.main)
        raise BundleError(f"build/{ENV_FILE} is missing: run `make offline BUNDLE=<file>` again.")
    lacking = [f"{name} ({manifest['skipped'][name]})" for name in manifest.get("skipped", {})]
    if "jbang" in parts:
        jar = offline / "jbang" / f"jbang-cli-{jbang.JBANG_VERSION}-all.jar"
        if not jar.exists():
            raise BundleError(
                f"The bundle holds JBang {manifest.get('jbang_version')}, but this clone pins "
                f"{jbang.JBANG_VERSION}: make the bundle from this clone's commit."
            )
        if hashlib.sha1(jar.read_bytes()).hexdigest() != jbang.JBANG_SHA1:
            raise BundleError("The bundle's JBang jar does not match its pinned checksum; make the bundle again.")
        _place(jar, tools_dir() / jar.name)
    if "toxiproxy" in parts:
        server = tools_dir() / f"toxiproxy-{proxy.TOXIPROXY_VERSION}" / "server"  # where find_toxiproxy looks
        _place(offline / "toxiproxy" / "toxiproxy-server", server)
        print(f"pipelab: toxiproxy ready ({proxy.find_toxiproxy(build=False)})", flush=True)
    lacking += toolchains.install(parts)
    if "maven" in parts:
        _check_java(manifest)
    for what in lacking:
        print(f"pipelab: not in this room: {what}")
    print(f"pipelab: ready offline: make and pipelab fetch from the bundle only (rm build/{ENV_FILE} to go online).")


def _place(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    shutil.copy2(source, partial)
    partial.replace(target)


def _check_java(manifest: dict) -> None:
    """Every dependency set this clone's aliases use is one the bundle resolved, and resolves offline here."""
    from .. import jbang  # noqa: PLC0415
    from ..errors import LabError  # noqa: PLC0415

    jbang.require_jdk()
    held = {tuple(entry["deps"]) for entry in manifest.get("java", [])}
    for deps, alias in dep_sets().items():
        if deps not in held:
            raise BundleError(
                f"The bundle lacks the Java dependencies of `jbang {alias}` (its //DEPS changed since): "
                "make the bundle from this clone's commit."
            )
        try:
            jbang.jbang_output(["info", "classpath", alias])
        except LabError as err:
            raise BundleError(f"The bundle cannot resolve `jbang {alias}` offline: {err}") from None
    print(f"pipelab: every Java dependency set ({len(held)}) resolves offline from the bundle", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
