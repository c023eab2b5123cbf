"""REDIS_URL as redis-py reads it: a password with reserved characters reaches the server decoded,
a wrong one is one sentence, and rediss:// asks for TLS. Against a password-protected server the
test starts itself."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from pipelab.errors import LabError
from pipelab.lab import Session
from pipelab.server import EmbeddedRedis, free_port
from tests.conftest import run_cli

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
    assert "refused the password in REDIS_URL" in done.stderr


def test_rediss_asks_for_tls_and_says_so_when_the_server_has_none(protected, monkeypatch):
    monkeypatch.setenv("REDIS_URL", url(protected, PASSWORD, "rediss"))
    with pytest.raises(LabError, match="No TLS connection to Redis at 127.0.0.1"):
        Session(with_proxy=False).start()
