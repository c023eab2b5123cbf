"""REDIS_URL as the reader sets it: a password with reserved characters reaches the server decoded,
a wrong one is one sentence, rediss:// asks for TLS, an ACL user and TLS with the reader's CA reach
every client, Python and Java, and a refused command is one sentence. Against servers the tests
start themselves: a password-protected one, and one with TLS (a CA made for the test) and an ACL user."""

from __future__ import annotations

import dataclasses
from urllib.parse import quote

import pytest
import redis

from pipelab.errors import LabError
from pipelab.lab import Session
from pipelab.server import EmbeddedRedis, free_port, parse_url
from tests.conftest import run_cli, unavailable
from tests.secured_book import BOOK_BUILD

pytestmark = pytest.mark.redis  # starts real servers (or the lab) without the session's fixtures

PASSWORD = "p@ss:w/rd%#?"  # every character a URL reserves


@pytest.fixture(scope="module")
def protected():
    with EmbeddedRedis(port=free_port(), password=PASSWORD) as server:
        yield server


def url(server: EmbeddedRedis, password: str, scheme: str = "redis") -> str:
    return f"{scheme}://:{quote(password, safe='')}@127.0.0.1:{server.port}/0"


def test_a_percent_encoded_password_reaches_the_server_decoded(protected, monkeypatch):
    monkeypatch.setenv("REDIS_URL", url(protected, PASSWORD))
    with Session(with_proxy=False) as session:
        assert session.endpoint.password == PASSWORD
        with session.endpoint.client() as client:
            assert client.ping() is True
            assert client.acl_whoami() == "default"


def test_a_wrong_password_is_one_sentence(protected):
    done = run_cli("book", "--no-site", env={"REDIS_URL": url(protected, "wrong")})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "refused the user and password in REDIS_URL" in done.stderr


def test_rediss_asks_for_tls_and_says_so_when_the_server_has_none(protected, monkeypatch):
    monkeypatch.setenv("REDIS_URL", url(protected, PASSWORD, "rediss"))
    with pytest.raises(LabError, match="No TLS connection to Redis at 127.0.0.1"):
        Session(with_proxy=False).start()


USER, USER_PASSWORD = "pipelab", "tls p@ss:/x+%"


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """A TLS server (Debian's Redis 7.0, the build here with TLS) whose default user has a password,
    with the README's ACL user; yields (server, that user's rediss:// URL with the CA)."""
    from pipelab import tls
    from tests.secured_book import readme_acl

    try:
        binary = tls.tls_server_binary()
    except LabError as err:
        unavailable(str(err))
    files = tls.make_ca(tmp_path_factory.mktemp("tls"))
    with EmbeddedRedis(port=free_port(), binary=binary, password=PASSWORD, tls=files, cpus=set()) as server:
        with server.endpoint.client() as admin:
            admin.execute_command(*readme_acl(USER, USER_PASSWORD))
        yield (
            server,
            f"rediss://{USER}:{quote(USER_PASSWORD, safe='')}@127.0.0.1:{server.tls_port}/0?ssl_ca_certs={files.ca}",
        )


def test_every_python_client_reaches_an_acl_user_over_tls(secured):
    from pipelab import resp
    from pipelab.chapters.ch07.common import LoopThread
    from pipelab.chapters.ch07.glide import glide_client

    endpoint = parse_url(secured[1])
    with endpoint.client() as client:
        assert client.acl_whoami() == USER and client.connection_pool.connection_class.__name__ == "SSLConnection"
        client.set("pipelab:url-test", "sync")
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.set("not-the-labs", "1")  # ~pipelab:* holds

    async def asyncio_and_glide():
        r = endpoint.async_client()
        await r.set("pipelab:url-test", "asyncio")
        whoami = await r.acl_whoami()
        await r.aclose()
        glide = await glide_client(endpoint)
        got = await glide.get("pipelab:url-test")
        await glide.close()
        return whoami, got

    with LoopThread() as loop:
        assert loop.run(asyncio_and_glide()) == (USER, b"asyncio")
    with resp.connect(endpoint) as sock:  # the chapters' raw sockets log in too
        sock.sendall(resp.encode("ACL", "WHOAMI"))
        assert resp.read_replies(sock, 2) == [f"${len(USER)}".encode(), USER.encode()]


def test_a_ca_that_did_not_sign_the_servers_certificate_is_one_sentence(secured, tmp_path):
    from pipelab import tls

    other = tls.make_ca(tmp_path / "other", name="another")
    wrong = secured[1].split("?")[0] + f"?ssl_ca_certs={other.ca}"
    done = run_cli("book", "--no-site", "--quick", "--only", "01", env={"REDIS_URL": wrong})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "TLS certificate of Redis at 127.0.0.1" in done.stderr and "is not trusted" in done.stderr
    assert USER_PASSWORD not in done.stderr + done.stdout


def test_a_command_the_acl_user_may_not_run_is_one_sentence(secured):
    server, _ = secured
    with server.endpoint.client() as admin:
        admin.execute_command("ACL", "SETUSER", "noscan", "on", ">x", "~pipelab:*", "+@all", "-scan")
    url = f"rediss://noscan:x@127.0.0.1:{server.tls_port}/0?ssl_ca_certs={server.tls.ca}"
    done = run_cli("book", "--no-site", "--quick", "--only", "01", env={"REDIS_URL": url})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "may not run a command the lab needs" in done.stderr and "'scan'" in done.stderr


@pytest.mark.times_nothing  # connects and fails to connect: 23 s of JVMs, beside the work before the notebooks
def test_every_java_client_reaches_an_acl_user_over_tls_and_says_why_not_in_one_sentence(secured, jdk, tmp_path):
    from pipelab import jbang, tls

    server, good = secured
    endpoint = parse_url(good)
    run = jbang.run_example("lab-connect", endpoint)
    assert {name: run.facts[name] for name in JAVA_CLIENTS} == dict.fromkeys(JAVA_CLIENTS, "ok"), run.facts
    other = tls.make_ca(tmp_path / "other", name="another")
    for bad, says in (
        (dataclasses.replace(endpoint, ca_file=str(other.ca)), "TLS"),
        (dataclasses.replace(endpoint, password="not-" + USER_PASSWORD), "password"),
    ):
        with pytest.raises(LabError) as failed:
            jbang.run_example("lab-connect", bad)
        assert "exited with 4" in str(failed.value) and says in str(failed.value), str(failed.value)
        assert USER_PASSWORD not in str(failed.value)


JAVA_CLIENTS = ("jedis", "lettuce", "redisson", "spring", "glide")


def test_a_quick_chapter_on_an_acl_user_over_tls_passes_and_leaves_the_password_nowhere(secured_run):
    """Python and Java, the notebook executed and the site built; then every file under the build
    directory (results, inputs, notebooks, the site, logs) searched for the password, plain and
    percent-encoded, and every command line seen on the machine while it ran."""
    report, made = secured_run
    assert report["code"] == 0, report["output"]
    assert "Redis at rediss://pipelab:***@127.0.0.1:" in report["output"]
    assert "claims:" in report["output"]  # it got to the end: the site built
    build = made / BOOK_BUILD
    searched, found = 0, []
    for path in build.rglob("*"):
        if path.is_file():
            searched += 1
            data = path.read_bytes()
            found += [f"{path.relative_to(build)}: {s!r}" for s in report["secrets"] if s.encode() in data]
    assert searched > 50 and (build / "site" / "index.html").exists() and (build / "results" / "ch01").is_dir()
    assert not found, found
    assert not any(s in report["output"] for s in report["secrets"])
    assert report["in_ps"] == [], "a command line showed the password"
    assert report["keys_left"] == [], "the chapter left keys behind"
