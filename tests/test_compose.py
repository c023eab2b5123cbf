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
    assert services()["redis"]["image"].startswith("redis:8."), "the book's default server's major version"
    assert services()["valkey"]["image"].startswith("valkey/valkey:9.")


def test_valkey_is_opt_in_and_keeps_nothing_on_disk():
    valkey = services()["valkey"]
    assert valkey["profiles"] == ["valkey"]
    command = valkey["command"]
    assert command[command.index("--save") + 1] == "" and command[command.index("--appendonly") + 1] == "no"


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


CLUSTER_NODES = {"cluster-1": 17000, "cluster-2": 17001, "cluster-3": 17002}


def option(command: list, name: str) -> str:
    return command[command.index(name) + 1]


def test_the_cluster_profile_is_opt_in_and_leaves_the_default_services_alone():
    profiled = {name for name, svc in services().items() if "cluster" in svc.get("profiles", [])}
    assert profiled == set(CLUSTER_NODES) | {"cluster-init"}
    assert all("profiles" not in services()[name] for name in ("redis", "toxiproxy"))
    assert "cluster" not in services()["valkey"]["profiles"]


def test_cluster_nodes_announce_host_reachable_addresses_and_keep_nothing():
    for name, port in CLUSTER_NODES.items():
        svc = services()[name]
        command = svc["command"]
        assert svc["image"] == services()["redis"]["image"]
        assert option(command, "--cluster-enabled") == "yes"
        assert option(command, "--save") == "" and option(command, "--appendonly") == "no"
        assert option(command, "--cluster-config-file").startswith("/tmp/")  # not the image's /data volume
        # MOVED/ASK must name an address the host can dial: 127.0.0.1 and the published port.
        assert option(command, "--cluster-announce-hostname") == "127.0.0.1"
        assert option(command, "--cluster-preferred-endpoint-type") == "hostname"
        assert "--cluster-announce-ip" not in command  # it would point the bus at each container itself
        assert int(option(command, "--port")) == port
        assert svc["ports"] == [f"127.0.0.1:{port}:{port}"]  # client port only; the bus stays inside


def test_cluster_init_forms_all_three_nodes_once():
    init = services()["cluster-init"]
    script = init["command"][0]
    assert set(init["depends_on"]) == set(CLUSTER_NODES) and init["restart"] == "no"
    assert "--cluster create" in script and "--cluster-yes" in script
    assert all(f"{name}:{port}" in script for name, port in CLUSTER_NODES.items())
    assert "cluster_state:ok" in script  # a second `up` must not try to form it again
    assert "$" not in script.replace("$$", ""), "compose would interpolate a bare $ in the init script"


def test_docker_compose_config_accepts_the_cluster_profile():
    tool = shutil.which("docker-compose")
    if not tool:
        pytest.skip("docker-compose (v1, Debian's package) is not installed; `make test` installs it as root")
    done = subprocess.run(
        [tool, "-f", str(COMPOSE), "--profile", "cluster", "config", "--services"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    # v1 lists every service whatever the profile; the profiles themselves are checked above.
    assert set(done.stdout.split()) == {"redis", "valkey", "toxiproxy", *CLUSTER_NODES, "cluster-init"}
