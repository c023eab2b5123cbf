"""The offline room (pipelab.book.bundle) without the network: bundles packed from small parts (and the
JBang jar this machine has), unpacked as `make offline` does; a bundle for another platform, of another
lock, missing, damaged or reaching outside its parts is one sentence; the env file works in make; JBang
and uv take "offline" from what it sets. The whole room, made and installed for real, is proved by hand:
`make bundle`, then `make offline BUNDLE=...` in a clone with no network (CONTRIBUTING.md)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib

import pytest

from pipelab import jbang, paths
from pipelab.book import bundle, cli
from tests.conftest import executable

SCRIPT = paths.REPO / "pipelab" / "book" / "bundle.py"
REAL_JAR = paths.tools_dir() / f"jbang-cli-{jbang.JBANG_VERSION}-all.jar"  # read before a test moves the tools


@pytest.fixture
def stage(tmp_path):
    """Small parts as make bundle lays them out: a wheel, a uv cache whose wheel entry links to its
    archive (as uv's does), a Maven jar, npm's cache, a toxiproxy stand-in."""
    stage = tmp_path / "stage"
    (stage / "uv").mkdir(parents=True)
    (stage / "uv" / "uv-0.0.0-py3-none-any.whl").write_bytes(b"wheel")
    archive = stage / "python" / "archive-v0" / "abc"
    archive.mkdir(parents=True)
    (archive / "module.py").write_text("x = 1\n")
    (stage / "python" / "wheels-v8" / "pypi" / "demo").mkdir(parents=True)
    (stage / "python" / "wheels-v8" / "pypi" / "demo" / "1.0-py3-none-any").symlink_to("../../../archive-v0/abc")
    (stage / "maven" / "org" / "demo").mkdir(parents=True)
    (stage / "maven" / "org" / "demo" / "demo-1.0.jar").write_bytes(b"jar")
    (stage / "npm" / "_cacache").mkdir(parents=True)
    (stage / "npm" / "_cacache" / "index").write_text("{}")
    (stage / "toxiproxy").mkdir()
    executable(stage / "toxiproxy" / "toxiproxy-server", "#!/bin/sh\necho toxiproxy\n")
    return stage


@pytest.fixture
def lock():
    """This clone's lock, which `make offline` (the script) compares a bundle's with."""
    return paths.REPO / "uv.lock"


def packed(stage, lock, out, **changes):
    manifest = bundle.describe(stage, uv_lock=bundle.sha256(lock), commit="abc1234", skipped={}) | changes
    bundle.pack(stage, manifest, out)
    return out


def unpack_script(path, build) -> subprocess.CompletedProcess:
    """What `make offline` runs first: this file with a bare Python (-P: nothing beside it importable)."""
    return subprocess.run(
        [sys.executable, "-P", str(SCRIPT), "unpack", str(path), str(build)], capture_output=True, text=True
    )


def one_sentence(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.startswith("pipelab: ")
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr


def test_the_platform_says_system_processor_and_python():
    tag = bundle.platform_tag()
    assert re.fullmatch(r"[a-z]+(-musl)?-[a-z0-9_]+(-(glibc|macos)[\d.]*)?-[a-z]+\d{2,}", tag), tag
    assert tag.endswith(f"{sys.version_info[0]}{sys.version_info[1]}")
    assert bundle.bundle_name(tag) == f"pipelab-bundle-{tag}.tar.gz"


WHEELS = """
a = "https://x/numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
b = "https://x/numpy-2.4.6-cp311-cp311-manylinux2014_x86_64.whl"
c = "https://x/debugpy-1.8.22-cp311-cp311-manylinux_2_34_x86_64.whl"
d = "https://x/debugpy-1.8.22-cp312-cp312-manylinux_2_35_x86_64.whl"
e = "https://x/other-1.0-cp311-cp311-manylinux_2_31_aarch64.whl"
f = "https://x/numpy-2.4.6-cp311-cp311-macosx_14_0_arm64.whl"
g = "https://x/numpy-2.4.6-cp311-cp311-macosx_11_0_arm64.whl"
"""


@pytest.mark.parametrize(
    "system, machine, version, stretch",
    [
        ("linux", "x86_64", "2.36", "glibc2.34"),  # Debian 12: the newest wheel it can take asks for 2.34
        ("linux", "x86_64", "2.35", "glibc2.34"),  # Ubuntu 22.04: the same wheels
        ("linux", "x86_64", "2.31", "glibc2.27"),  # Ubuntu 20.04: debugpy's older wheel, so another bundle
        ("linux", "x86_64", "2.17", "glibc2.17"),
        ("linux", "aarch64", "2.36", "glibc2.31"),
        ("macos", "arm64", "15.3", "macos14.0"),
        ("macos", "arm64", "13.6", "macos11.0"),
    ],
)
def test_machines_that_take_the_same_wheels_share_a_platform(system, machine, version, stretch, monkeypatch):
    monkeypatch.setattr(bundle.platform, "libc_ver", lambda: ("glibc", version))
    monkeypatch.setattr(bundle.platform, "mac_ver", lambda: (version, ("", "", ""), machine))
    assert bundle.os_stretch(WHEELS, system, machine, "cp311") == stretch


def test_each_stretch_of_patch_releases_the_lock_tells_apart_gets_its_wheels():
    lock = "marker = \"python_full_version < '3.11.5'\"\nmarker = \"python_full_version >= '3.12.1'\""
    assert bundle.patch_releases(lock, (3, 11)) == ["3.11.0", "3.11.5", "3.11.6"]
    assert bundle.patch_releases(lock, (3, 13)) == ["3.13.0"]
    # the book's own lock parts 3.11 below 3.11.5 (soupsieve, among others), where Debian 12's 3.11.2 sits
    real = bundle.patch_releases((paths.REPO / "uv.lock").read_text(), (3, 11))
    assert {"3.11.0", "3.11.5"} <= set(real)


def test_a_bundle_unpacks_into_build_offline_with_an_env_file_make_and_pipelab_read(stage, lock, tmp_path):
    build = tmp_path / "build"
    path = packed(stage, lock, tmp_path / "b.tar.gz")
    with tarfile.open(path, "r:gz") as tar:
        assert tar.next().name == bundle.MANIFEST, "the manifest comes first, read before anything is unpacked"
    done = unpack_script(path, build)
    assert done.returncode == 0, done.stderr
    assert "made for " + bundle.platform_tag() in done.stdout and "maven" in done.stdout
    offline = build / "offline"
    assert (offline / "python" / "wheels-v8" / "pypi" / "demo" / "1.0-py3-none-any" / "module.py").read_text()
    assert os.access(offline / "toxiproxy" / "toxiproxy-server", os.X_OK)
    assert (offline / bundle.JBANG_CONFIG).read_text().splitlines()[-1] == "offline=true"
    env = bundle.load_env(build)
    assert env["UV_OFFLINE"] == "1" and env["UV_CACHE_DIR"] == str(offline.resolve() / "python")
    assert env["PIP_NO_INDEX"] == "1" and env["PIP_FIND_LINKS"] == str(offline.resolve() / "uv")
    assert env["JBANG_REPO"] == str(offline.resolve() / "maven") and env["npm_config_offline"] == "true"
    assert "GOPROXY" not in env, "no go part, so go is left as it was"
    # make: the Makefile's `-include build/offline.mk` exports them to every recipe
    makefile = tmp_path / "Makefile"
    makefile.write_text(
        f"-include {build}/offline.mk\nshow:\n\t@echo $$UV_CACHE_DIR $$JBANG_CONFIG $$npm_config_cache\n"
    )
    shown = subprocess.run(["make", "-s", "-f", str(makefile), "show"], capture_output=True, text=True, env={})
    assert shown.stdout.split() == [env["UV_CACHE_DIR"], env["JBANG_CONFIG"], env["npm_config_cache"]], shown.stderr
    # a shell sources the same file
    script = f". {build}/offline.mk && echo $UV_CACHE_DIR $JBANG_CONFIG $npm_config_cache"
    sourced = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env={})
    assert sourced.stdout == shown.stdout, sourced.stderr
    # unpacking again replaces what was there
    assert unpack_script(path, build).returncode == 0 and not (build / "offline.next").exists()


def test_a_rust_part_sends_cargo_to_the_vendored_crates_through_a_cargo_home_of_its_own(stage, lock, tmp_path):
    (stage / "rust" / "fred-10.1.0").mkdir(parents=True)
    (stage / "rust" / "fred-10.1.0" / "Cargo.toml").write_text('[package]\nname = "fred"\n')
    build = tmp_path / "build"
    assert unpack_script(packed(stage, lock, tmp_path / "b.tar.gz"), build).returncode == 0
    offline = (build / "offline").resolve()
    env = bundle.load_env(build)
    assert env["CARGO_HOME"] == str(offline / bundle.CARGO_HOME)
    config = tomllib.loads((offline / bundle.CARGO_HOME / "config.toml").read_text())
    assert config["source"]["crates-io"]["replace-with"] == "bundle"
    assert config["source"]["bundle"]["directory"] == str(offline / "rust")
    assert (offline / "rust" / "fred-10.1.0" / "Cargo.toml").exists()


def test_pipelab_reads_the_env_file_as_it_starts(stage, lock, tmp_path, monkeypatch):
    build = tmp_path / "build"
    bundle.unpack(packed(stage, lock, tmp_path / "b.tar.gz"), build, lock)
    monkeypatch.setattr(bundle, "BUILD", build)
    for name in bundle.load_env(build):
        monkeypatch.setenv(name, "as before")  # and put back as it was after the test
    seen = {}
    monkeypatch.setattr(cli, "cmd_offline", lambda args: seen.update(os.environ) or 0)
    assert cli.main(["offline"]) == 0
    assert seen["UV_OFFLINE"] == "1" and seen["JBANG_REPO"].endswith("maven")


def test_pipelab_offline_places_jbang_and_toxiproxy_and_names_what_the_room_lacks(
    stage, lock, tmp_path, monkeypatch, capsys
):
    if not REAL_JAR.exists():
        pytest.skip(f"no {REAL_JAR} here to bundle (make tools fetches it)")
    (stage / "jbang").mkdir()
    (stage / "jbang" / REAL_JAR.name).write_bytes(REAL_JAR.read_bytes())
    (stage / "go").mkdir()
    (stage / "go" / "list").write_text("")
    (stage / "rust").mkdir()
    (stage / "rust" / "list").write_text("")
    shutil.rmtree(stage / "maven")  # its check starts a JVM per dependency set: proved by hand
    build, tools = tmp_path / "build", tmp_path / "tools"
    bundle.unpack(packed(stage, lock, tmp_path / "b.tar.gz", skipped={"maven": "no JDK"}), build, lock)
    monkeypatch.setenv("PIPELAB_TOOLS", str(tools))
    monkeypatch.setenv("PIPELAB_NODE", "off")
    monkeypatch.setenv("PIPELAB_GO", "off")
    monkeypatch.setenv("PIPELAB_RUST", "off")
    monkeypatch.delenv("PIPELAB_TOXIPROXY", raising=False)
    bundle.install(build)
    out = capsys.readouterr().out
    assert (tools / REAL_JAR.name).read_bytes() == REAL_JAR.read_bytes()
    assert os.access(tools / "toxiproxy-v2.5.0" / "server", os.X_OK)
    assert "not in this room: Node.js" in out and "not in this room: Go" in out and "maven (no JDK)" in out
    assert "not in this room: Rust" in out
    assert "ready offline" in out


def test_a_jbang_jar_that_is_not_the_pinned_one_is_refused(stage, lock, tmp_path, monkeypatch):
    (stage / "jbang").mkdir()
    (stage / "jbang" / f"jbang-cli-{jbang.JBANG_VERSION}-all.jar").write_bytes(b"not jbang")
    build = tmp_path / "build"
    bundle.unpack(packed(stage, lock, tmp_path / "b.tar.gz"), build, lock)
    monkeypatch.setenv("PIPELAB_TOOLS", str(tmp_path / "tools"))
    with pytest.raises(bundle.BundleError, match="does not match its pinned checksum"):
        bundle.install(build)
    assert not (tmp_path / "tools").exists()


def test_a_bundle_for_another_platform_is_refused_in_one_sentence(stage, lock, tmp_path):
    path = packed(stage, lock, tmp_path / "b.tar.gz", platform="macos-aarch64-cp399")
    said = one_sentence(unpack_script(path, tmp_path / "build"))
    assert "was made for macos-aarch64-cp399, but this machine is " + bundle.platform_tag() in said
    assert "make bundle" in said and not (tmp_path / "build" / "offline").exists()


def test_a_bundle_of_another_lock_is_refused(stage, tmp_path):
    made_from = tmp_path / "uv.lock"
    made_from.write_text("version = 1\n")
    path = packed(stage, made_from, tmp_path / "b.tar.gz")
    made_from.write_text("version = 2\n")
    with pytest.raises(bundle.BundleError, match=r"another uv\.lock than this clone's.*abc1234"):
        bundle.unpack(path, tmp_path / "build", made_from)


@pytest.mark.parametrize("kind", ["missing", "not gzip", "cut short", "no manifest", "another format"])
def test_a_missing_or_damaged_bundle_is_one_sentence_and_leaves_build_offline_alone(kind, stage, lock, tmp_path):
    build, path = tmp_path / "build", tmp_path / "b.tar.gz"
    (build / "offline").mkdir(parents=True)
    (build / "offline" / "kept").write_text("from the last bundle")
    if kind == "not gzip":
        path.write_bytes(os.urandom(4096))
    elif kind == "cut short":
        whole = packed(stage, lock, tmp_path / "whole.tar.gz").read_bytes()
        path.write_bytes(whole[: len(whole) // 2])
    elif kind == "no manifest":
        with tarfile.open(path, "w:gz") as tar:
            tar.add(stage / "uv", arcname="uv")
    elif kind == "another format":
        packed(stage, lock, path, format=bundle.FORMAT + 1)
    said = one_sentence(unpack_script(path, build))
    expected = {
        "missing": "No bundle at",
        "not gzip": "is damaged or not a pipelab bundle",
        "cut short": "is damaged or not a pipelab bundle",
        "no manifest": "is not a pipelab bundle",
        "another format": "another version of pipelab",
    }[kind]
    assert expected in said
    assert (build / "offline" / "kept").exists() and not (build / "offline.next").exists()


@pytest.mark.parametrize("name", ["../outside", "uv/../../outside", "elsewhere/file", "python/link"])
def test_a_bundle_may_write_only_inside_its_parts(name, stage, lock, tmp_path):
    path = tmp_path / "b.tar.gz"
    manifest = bundle.describe(stage, uv_lock=bundle.sha256(lock))
    with tarfile.open(path, "w:gz") as tar:
        data = json.dumps(manifest).encode()
        info = tarfile.TarInfo(bundle.MANIFEST)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo(name)
        if name == "python/link":
            info.type, info.linkname = tarfile.SYMTYPE, "../../../etc/passwd"
        tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(bundle.BundleError, match="no part of a pipelab bundle"):
        bundle.unpack(path, tmp_path / "build", lock)
    assert not (tmp_path / "outside").exists() and not (tmp_path / "build" / "offline").exists()


def test_a_clone_whose_path_the_env_file_cannot_write_is_one_sentence(stage, lock, tmp_path):
    build = tmp_path / "my build$dir"
    with pytest.raises(bundle.BundleError, match=r"cannot name .*my build\$dir.*plainer path"):
        bundle.unpack(packed(stage, lock, tmp_path / "b.tar.gz"), build, lock)
    assert not build.exists()


def test_a_part_that_lost_files_is_incomplete(stage, lock, tmp_path):
    path = tmp_path / "b.tar.gz"
    manifest = bundle.describe(stage, uv_lock=bundle.sha256(lock))
    manifest["parts"]["maven"]["files"] += 1
    bundle.pack(stage, manifest, path)
    with pytest.raises(bundle.BundleError, match=r"incomplete \(maven lacks files\)"):
        bundle.unpack(path, tmp_path / "build", lock)


def test_pipelab_offline_before_make_offline_says_what_to_run(tmp_path, capsys, monkeypatch):
    real = bundle.install
    monkeypatch.setattr(bundle, "install", lambda: real(tmp_path))
    assert cli.main(["offline"]) == 2
    assert "run `make offline BUNDLE=<file>`" in capsys.readouterr().err


def test_one_alias_per_dependency_set_resolves_every_jar_the_examples_use():
    sets = bundle.dep_sets()
    for alias in jbang.catalog_aliases():
        lines = {line.strip() for p in jbang.alias_sources(alias) for line in bundle.DEPS_LINE.findall(p.read_text())}
        assert tuple(sorted(lines)) in sets, alias
    assert len(sets) < len(jbang.catalog_aliases())
    assert any("valkey-glide" in line for deps in sets for line in deps), "GLIDE's native jar: by platform"
    assert {"ex01", "ex01-solution"} <= set(jbang.catalog_aliases())


def test_the_makefile_includes_the_env_file_and_names_both_targets():
    makefile = (paths.REPO / "Makefile").read_text()
    assert "\n-include build/offline.mk\n" in makefile
    phony = re.search(r"^\.PHONY: (.+)$", makefile, re.M).group(1).split()
    assert {"bundle", "offline"} <= set(phony)
    header = makefile.split("SHELL :=")[0]
    assert "#   make bundle" in header and "#   make offline BUNDLE=" in header
    assert "-P pipelab/book/bundle.py unpack" in makefile, "run before the venv, with nothing beside it importable"


def test_uv_takes_offline_from_the_env_file(tmp_path):
    uv = paths.REPO / "build" / "uv" / "bin" / "uv"
    if not uv.exists():
        pytest.skip("no build/uv yet (the first make installs it)")
    offline = bundle.offline_env(tmp_path / "offline", ["python"])
    env = dict(os.environ, **offline, UV_PROJECT_ENVIRONMENT=str(tmp_path / "venv"))
    done = subprocess.run(
        [str(uv), "sync", "--frozen", "--extra", "test", "--python", sys.executable],
        cwd=paths.REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "Network connectivity is disabled" in done.stderr, done.stderr


@pytest.mark.times_nothing  # one JVM start that fails at once: no clock involved
def test_jbang_takes_offline_from_the_bundles_config(jdk, tmp_path):
    (tmp_path / bundle.JBANG_CONFIG).write_text("offline=true\n")
    env = jbang.jbang_env() | bundle.offline_env(tmp_path, ["maven"])
    env |= {"JBANG_REPO": str(tmp_path / "empty-repo"), "JBANG_DIR": str(tmp_path / "jbang")}
    env.pop("JBANG_CACHE_DIR", None)
    done = subprocess.run(
        [jdk, "-classpath", str(jbang.jbang_jar()), "dev.jbang.Main", "--verbose", "info", "classpath", "ch01-ping"],
        cwd=paths.REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "in offline mode" in done.stderr, jbang.failure_line(done.stderr)
