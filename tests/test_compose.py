"""docker-compose.yml checked without a Docker daemon."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml

from pipelab.paths import REPO
from pipelab.proxy import PROXY_NAME

COMPOSE = REPO / "docker-compose.yml"


def services():
    return yaml.safe_load(COMPOSE.read_text())["services"]


def test_every_port_is_published_on_loopback_only():
    for name, svc in services().items():
        for port in svc.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"


def test_images_are_pinned():
    for name, svc in services().items():
        image = svc["image"]
        tag = image.rsplit(":", 1)[-1] if ":" in image.split("/")[-1] else ""
        assert tag and tag != "latest", f"{name} uses an unpinned image {image}"
    assert services()["redis"]["image"].startswith("redis:7.")


def test_redis_keeps_nothing_on_disk():
    command = services()["redis"]["command"]
    assert command[command.index("--save") + 1] == "" and command[command.index("--appendonly") + 1] == "no"


def test_the_toxiproxy_config_names_the_proxy_the_harness_uses_and_publishes_it():
    (proxy,) = json.loads((REPO / "docker" / "toxiproxy.json").read_text())
    assert proxy["name"] == PROXY_NAME and proxy["upstream"] == "redis:6379"
    listen_port = proxy["listen"].rsplit(":", 1)[1]
    assert f"127.0.0.1:{listen_port}:{listen_port}" in services()["toxiproxy"]["ports"]


def test_docker_compose_config_accepts_the_file():
    tool = shutil.which("docker-compose")
    if not tool:
        pytest.skip("docker-compose (v1, Debian's package) is not installed; `make test` installs it as root")
    done = subprocess.run([tool, "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
