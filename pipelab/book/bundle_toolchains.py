"""The offline room's parts for the examples in other languages (bundle.py holds the rest): at `make
bundle`, chapter 10's Node lock through npm's cache, the Go modules as a module proxy and chapter 11's
crates vendored, each checked offline; at `make offline`, what each toolchain on the laptop takes from
them. A machine without a toolchain leaves its part out, in one sentence."""

from __future__ import annotations

import shutil
from pathlib import Path

from .. import golang, node, rust
from .bundle import _run, vendored


def fill_npm(dest: Path, work: Path) -> str | None:
    """npm ci of the lock with `dest` as npm's cache, then again offline from it alone."""
    if why := node.unavailable():
        return why
    _, npm = node.require_node()
    for round_, extra in (("online", []), ("offline", ["--offline"])):
        src = work / f"npm-{round_}"
        src.mkdir()
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(node.EXAMPLES / name, src / name)
        argv = [npm, "ci", *extra, "--cache", dest, "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
        _run(argv, f"npm ci ({round_}) of chapter 10's Node lock", cwd=src)
        shutil.rmtree(dest / "_logs", ignore_errors=True)  # npm's run logs, not what it installs from
        (dest / "_update-notifier-last-checked").unlink(missing_ok=True)
    return None


def fill_go(dest: Path, work: Path) -> str | None:
    """go mod download into a module cache of its own, whose download folder is a module proxy; then
    every package the examples import listed with that proxy alone."""
    if why := golang.available():
        return why
    go = golang.require_go()
    fetched, at = work / "gomod", golang.MODULE_DIR
    _run([go, "mod", "download"], "go mod download", cwd=at, env=golang.go_env() | {"GOMODCACHE": str(fetched)})
    shutil.rmtree(dest)
    shutil.copytree(fetched / "cache" / "download", dest, ignore=shutil.ignore_patterns("sumdb", "*.lock"))
    env = golang.go_env() | {"GOMODCACHE": str(work / "gomod-check"), "GOPROXY": dest.as_uri(), "GOSUMDB": "off"}
    _run([go, "list", "-deps", "./..."], "go list -deps (offline)", cwd=at, env=env)
    return None


def fill_rust(dest: Path, work: Path) -> str | None:
    """cargo vendor of the lock into `dest`; then the crate resolved offline from it alone."""
    if why := rust.available():
        return why
    cargo = rust.require_cargo()
    _run(
        [cargo, "vendor", "--locked", "--versioned-dirs", dest],
        "cargo vendor",
        cwd=rust.CRATE_DIR,
        env=rust.cargo_env(),
    )
    home = work / "cargo-check"
    home.mkdir()
    (home / "config.toml").write_text(vendored(dest.resolve()))
    check = [cargo, "metadata", "--locked", "--offline", "--format-version", "1"]
    _run(check, "cargo metadata (offline)", cwd=rust.CRATE_DIR, env=rust.cargo_env() | {"CARGO_HOME": str(home)})
    return None


def install(parts) -> list[str]:
    """The Node, Go and Rust parts readied on this laptop; what it lacks for them, one entry each."""
    lacking = []
    if "npm" in parts:
        if why := node.unavailable():
            lacking.append(f"Node.js ({why})")
        else:
            print(f"pipelab: chapter 10's Node packages installed from the bundle in {node.install()}", flush=True)
    if "go" in parts:
        if why := golang.available():
            lacking.append(f"Go ({why})")
        else:
            go = golang.require_go()
            _run([go, "mod", "download"], "go mod download from the bundle", cwd=golang.MODULE_DIR, env=golang.go_env())
            print("pipelab: chapter 10's Go modules unpacked from the bundle", flush=True)
    if "rust" in parts:
        if why := rust.available():
            lacking.append(f"Rust ({why})")
        else:
            print("pipelab: chapter 11's crates ready in the bundle (cargo builds from them offline)", flush=True)
    return lacking
