"""Every chapter's Sources list: each internals claim marked in the prose has an entry, and each entry
points at upstream source at the version the lab pins, or names the server command that shows it."""

from __future__ import annotations

import importlib.metadata
import json
import re

import pytest

from pipelab.book import citations
from pipelab.paths import REPO
from pipelab.programs import OTHER_EXAMPLES_DIR

PAGES = citations.chapter_pages()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_every_marked_claim_has_a_pinned_source(page):
    assert citations.problems(page) == []


def test_the_chapters_on_internals_cite_their_claims():
    # chapters 6-8 were checked claim by claim against the pinned sources (issue 27)
    for page in PAGES:
        if page.name[:2] in ("06", "07", "08"):
            used, defined, _ = citations.footnotes(page.read_text())
            assert len(defined) >= 8, f"{page.name} has only {len(defined)} sources"


def test_the_pins_are_the_ones_the_lab_installs():
    tags = citations.pinned_tags()
    assert tags["redis/redis-py"] == {f"v{importlib.metadata.version('redis')}"}
    jedis = {
        m
        for path in (REPO / "java-examples").rglob("*.java")
        for m in re.findall(r"^//DEPS redis\.clients:jedis:(\S+)", path.read_text(), re.M)
    }
    assert len(jedis) == 1, f"the examples pin one Jedis, not {jedis}"
    assert tags["redis/jedis"] == {f"v{v}" for v in jedis}
    assert any(tag.startswith("8.") for tag in tags["redis/redis"]), tags["redis/redis"]
    assert len(tags["valkey-io/valkey-glide"]) == 3, "the Python, Java and Node GLIDE are different releases"


def test_node_go_and_rust_pins_come_from_their_lock_files(tmp_path, monkeypatch):
    node, go = tmp_path / OTHER_EXAMPLES_DIR / "node", tmp_path / OTHER_EXAMPLES_DIR / "go"
    node.mkdir(parents=True)
    go.mkdir(parents=True)
    (node / "package-lock.json").write_text(
        json.dumps(
            {
                "packages": {
                    "": {"dependencies": {"ioredis": "6.0.0"}},
                    "node_modules/ioredis": {"version": "6.0.0"},
                    "node_modules/redis": {"version": "6.3.1"},
                    "node_modules/@valkey/valkey-glide": {"version": "2.5.2"},
                    "node_modules/x/node_modules/ioredis": {"version": "4.0.0"},  # nested: not what the book runs
                }
            }
        )
    )
    (go / "go.mod").write_text(
        "module example.com/lab\n\ngo 1.22\n\nrequire (\n\tgithub.com/redis/go-redis/v9 v9.7.0\n"
        "\tgithub.com/redis/rueidis v1.0.50\n)\n\nrequire github.com/valkey-io/valkey-go v1.0.60 // indirect\n"
    )
    crate = tmp_path / OTHER_EXAMPLES_DIR / "rust"
    crate.mkdir()
    (crate / "Cargo.lock").write_text(
        'version = 4\n\n[[package]]\nname = "redis"\nversion = "1.8.1"\n\n[[package]]\nname = "fred"\nversion = "10.1.0"\n'
    )
    monkeypatch.setattr(citations.paths, "REPO", tmp_path)
    tags = citations.pinned_tags()
    assert tags["redis-rs/redis-rs"] == {"redis-1.8.1"} and tags["aembke/fred.rs"] == {"v10.1.0"}
    assert tags["redis/ioredis"] == {"v6.0.0"}
    assert tags["redis/node-redis"] == {"redis@6.3.1"}
    assert "v2.5.2" in tags["valkey-io/valkey-glide"]
    assert tags["redis/go-redis"] == {"v9.7.0"}
    assert tags["redis/rueidis"] == {"v1.0.50"}
    assert tags["valkey-io/valkey-go"] == {"v1.0.60"}
    page = tmp_path / "10-x.md"
    page.write_text(
        "# A page\n\nrueidis pipelines.[^a] ioredis queues.[^b]\n\n## Sources\n\n"
        "[^a]: [pipe.go](https://github.com/redis/rueidis/blob/v1.0.50/pipe.go#L1).\n\n"
        "[^b]: [autoPipelining.ts](https://github.com/redis/ioredis/blob/v5.4.0/lib/autoPipelining.ts#L1).\n"
    )
    assert citations.problems(page, tags) == [
        "10-x.md: [^b] links redis/ioredis at v5.4.0, not at the pinned v6.0.0",
        "10-x.md: [^b] names neither source at a pinned tag nor a server command that shows it",
    ]


CHAPTER = """# A chapter

Jedis flushes a full buffer.[^flush] Lettuce queues.[^queue] A server counts it.[^counter]
A claim with no entry.[^missing]

## Sources

[^flush]: `RedisOutputStream.flushBuffer` in
    [RedisOutputStream.java](https://github.com/redis/jedis/blob/v1.0.0/src/main/java/RedisOutputStream.java#L10).

[^queue]: a sentence with no link and no command.

[^counter]: on the server: `INFO stats`.

[^unused]: [redis.c](https://github.com/someone/else/blob/main/redis.c).
"""


def test_the_check_names_each_kind_of_gap(tmp_path):
    page = tmp_path / "09-made-up.md"
    page.write_text(CHAPTER)
    tags = {"redis/jedis": {"v8.0.2"}}
    found = citations.problems(page, tags)
    assert any("[^missing] has no entry" in p for p in found), found
    assert any("[^flush] links redis/jedis at v1.0.0, not at the pinned v8.0.2" in p for p in found), found
    assert any("[^queue] names neither" in p for p in found), found
    assert any("[^unused] is cited by no claim" in p for p in found), found
    assert any("someone/else, which the book does not pin" in p for p in found), found
    assert not any("[^counter]" in p for p in found), "a server command is a source"
    page.write_text(CHAPTER.replace("## Sources", "## Sources\n\n## After"))
    assert any("must end with a '## Sources' section" in p for p in citations.problems(page, tags))


def test_the_entries_come_in_the_order_of_their_claims(tmp_path):
    page = tmp_path / "09-made-up.md"
    page.write_text("# A\n\nFirst.[^b] Second.[^a]\n\n## Sources\n\n[^a]: `INFO stats`.\n\n[^b]: `INFO server`.\n")
    assert citations.problems(page, {}) == [
        "09-made-up.md: the Sources entries are not in the order their claims come (first: b)"
    ]
