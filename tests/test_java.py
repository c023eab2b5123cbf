"""Every JBang catalog entry builds; each example runs in quick mode and its JSON tells the truth."""
from __future__ import annotations

import pytest

from pipelab import jbang
from pipelab.errors import LabError

ALIASES = sorted(jbang.catalog_aliases())
QUICK_ARGS = {"ch01-ping": (300, 3), "ch01-sadd": (300, 2), "ch02-depth": (2000, 2)}


def pipelining_wins(alias: str, measurements: dict) -> None:
    """The direction each example exists to show, with tolerant bounds."""
    if alias.startswith("ch01"):
        one = measurements["jedis_one_by_one"]
        for mode, m in measurements.items():
            if mode not in ("jedis_one_by_one", "redisson_rbatch"):  # a cold Redisson needs chapter 3's warm-up
                assert m.ops_per_s > one.ops_per_s, f"{mode} {m} vs one by one {one}"
    elif alias == "ch02-depth":
        depth1 = measurements["depth_1"]
        deepest = measurements[max(measurements, key=lambda mode: int(mode.split("_")[1]))]
        assert deepest.ops_per_s >= 3 * depth1.ops_per_s, f"{deepest} vs {depth1}"
    else:
        raise AssertionError(f"no direction check for {alias}: add one")


@pytest.mark.parametrize("alias", ALIASES)
def test_catalog_entry_builds(alias, jdk):
    jbang.jbang(["build", alias], quiet=True)


def test_every_alias_has_a_quick_run():
    assert set(QUICK_ARGS) == set(ALIASES)


@pytest.mark.parametrize("alias", ALIASES)
def test_example_runs_quick_and_pipelining_wins(alias, jdk, lab):
    size, repeat = QUICK_ARGS[alias]
    run = lab.java(alias, size, repeat)
    assert run.data["example"] == alias and run.data["size"] == size
    assert run.clients.get("jedis")
    measurements = run.measurements()
    assert all(len(m.samples) == repeat for m in measurements.values())
    pipelining_wins(alias, measurements)
    with lab.client() as client:
        assert client.dbsize() == 0, "the example left keys behind"


def test_example_refuses_a_database_with_foreign_keys(jdk, lab):
    with lab.client() as client:
        client.set("not-ours", "1")
        try:
            with pytest.raises(LabError, match="not the lab's"):
                lab.java("ch01-sadd", 10, 1)
            assert client.get("not-ours") == b"1"
        finally:
            client.delete("not-ours")  # the test's own key, made above
