"""The chapters' Sources lists: every internals claim carries a footnote, and every footnote points at
upstream source at the version the book pins (or names the server command that shows it).

A link into a repository must use the tag of the version the lab installs: the lock for Python
packages, the //DEPS lines for Java, the package-lock.json files for Node, the go.mod files for Go, Cargo.lock for Rust,
and the servers the reference run measured. A newer pin then
fails this check until someone re-reads the cited line, which is how a Sources list stays true.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..programs import OTHER_EXAMPLES_DIR
from ..proxy import TOXIPROXY_VERSION
from . import inputs

HEADING = "## Sources"
_REFERENCE = re.compile(r"\[\^([A-Za-z0-9_-]+)\](?!:)")
_DEFINITION = re.compile(r"^\[\^([A-Za-z0-9_-]+)\]:\s*(.*)$")
_GITHUB = re.compile(r"https://github\.com/([\w.-]+/[\w.-]+)/(blob|tree|pull|issues|commit)/([^/\s)#]+)")
# A definition without a pinned link must name the command that shows the fact on a server.
_SERVER_COMMAND = re.compile(r"`(INFO|CONFIG GET|CONFIG SET|CLIENT|DEBUG|OBJECT|MEMORY|COMMAND|HELLO|ACL)\b[^`]*`")

# repository -> (where its pin comes from, the package there, how its tags are spelled)
_TAGS = {
    "redis/redis-py": [("lock", "redis", "v{}")],
    "redis/hiredis-py": [("lock", "hiredis", "v{}")],
    "valkey-io/valkey-glide": [
        ("lock", "valkey-glide", "v{}"),
        ("deps", "io.valkey:valkey-glide", "v{}"),
        ("npm", "@valkey/valkey-glide", "v{}"),
    ],
    "redis/ioredis": [("npm", "ioredis", "v{}")],
    "redis/node-redis": [("npm", "redis", "redis@{}")],  # one tag per release of the monorepo's packages
    "redis/go-redis": [("go", "github.com/redis/go-redis/v9", "v{}")],
    "redis/rueidis": [("go", "github.com/redis/rueidis", "v{}")],
    "valkey-io/valkey-go": [("go", "github.com/valkey-io/valkey-go", "v{}")],
    "redis/jedis": [("deps", "redis.clients:jedis", "v{}")],
    "redis/lettuce": [("deps", "io.lettuce:lettuce-core", "{}")],
    "redisson/redisson": [("deps", "org.redisson:redisson", "redisson-{}")],
    "spring-projects/spring-data-redis": [("deps", "org.springframework.data:spring-data-redis", "{}")],
    "apache/commons-pool": [("deps", "org.apache.commons:commons-pool2", "rel/commons-pool-{}")],
    "redis/redis": [("server", "redis", "{}")],
    "valkey-io/valkey": [("server", "valkey", "{}")],
    "Shopify/toxiproxy": [("toxiproxy", "", "{}")],
    "redis-rs/redis-rs": [("cargo", "redis", "redis-{}")],
    "aembke/fred.rs": [("cargo", "fred", "v{}")],
}


def _locked() -> dict[str, str]:
    return {name: p["version"] for name, p in inputs.locked_packages().items() if "version" in p}


def java_deps() -> dict[str, set[str]]:
    """group:artifact -> its versions, from every //DEPS line of the Java examples."""
    found: dict[str, set[str]] = {}
    for path in (paths.REPO / "java-examples").rglob("*.java"):
        for group, artifact, version in re.findall(r"^//DEPS\s+([\w.-]+):([\w.-]+):([\w.-]+)", path.read_text(), re.M):
            found.setdefault(f"{group}:{artifact}", set()).add(version)
    return found


def _npm() -> dict[str, set[str]]:
    """npm package -> its versions, from the top-level packages of every package-lock.json of the examples."""
    found: dict[str, set[str]] = {}
    for path in (paths.REPO / OTHER_EXAMPLES_DIR).rglob("package-lock.json"):
        if "node_modules" in path.parts:
            continue
        for where, package in json.loads(path.read_text()).get("packages", {}).items():
            name = where.removeprefix("node_modules/")
            if where.startswith("node_modules/") and "/node_modules/" not in where and "version" in package:
                found.setdefault(name, set()).add(package["version"])
    return found


_GO_REQUIRE = re.compile(r"^\s*(?:require\s+)?([\w./-]+\.[\w./-]+)\s+v([\w.+-]+)", re.M)


def _go_modules() -> dict[str, set[str]]:
    """Go module -> its versions (without the v), from the require lines of every go.mod of the examples."""
    found: dict[str, set[str]] = {}
    for path in (paths.REPO / OTHER_EXAMPLES_DIR).rglob("go.mod"):
        for module, version in _GO_REQUIRE.findall(path.read_text()):
            found.setdefault(module, set()).add(version)
    return found


def _crates() -> dict[str, set[str]]:
    """Crate -> its versions, from every Cargo.lock of the examples."""
    found: dict[str, set[str]] = {}
    for path in (paths.REPO / OTHER_EXAMPLES_DIR).rglob("Cargo.lock"):
        for package in tomllib.loads(path.read_text()).get("package", []):
            found.setdefault(package["name"], set()).add(package["version"])
    return found


def _servers() -> dict[str, set[str]]:
    """Server family -> the versions the reference run measured (chapter 6 starts every build)."""
    ceiling = paths.reference_dir() / "ch06" / "ceiling.json"
    servers = json.loads(ceiling.read_text())["params"]["servers"] if ceiling.exists() else {}
    found: dict[str, set[str]] = {}
    for name, facts in servers.items():
        found.setdefault("valkey" if name.startswith("valkey") else "redis", set()).add(facts["version"])
    return found


def pinned_tags() -> dict[str, set[str]]:
    """Repository -> the tags a Sources link into it may use."""
    locked, deps, servers = _locked(), java_deps(), _servers()
    npm, go, crates = _npm(), _go_modules(), _crates()
    tags: dict[str, set[str]] = {}
    for repo, pins in _TAGS.items():
        for where, name, spelling in pins:
            if where == "lock":
                versions = {locked[name]} if name in locked else set()
            elif where == "deps":
                versions = deps.get(name, set())
            elif where == "server":
                versions = servers.get(name, set())
            elif where == "npm":
                versions = npm.get(name, set())
            elif where == "go":
                versions = go.get(name, set())
            elif where == "cargo":
                versions = crates.get(name, set())
            else:
                versions = {TOXIPROXY_VERSION}
            tags.setdefault(repo, set()).update(spelling.format(v) for v in versions)
    return tags


@dataclass(frozen=True)
class Footnote:
    name: str
    text: str


def footnotes(markdown: str) -> tuple[list[str], list[Footnote], list[str]]:
    """The footnote names the prose uses (in order), the definitions, and the headings of level 2."""
    used: list[str] = []
    defined: list[Footnote] = []
    headings: list[str] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            headings.append(line.strip())
        match = _DEFINITION.match(line)
        if match:
            text = [match.group(2)]
            while i + 1 < len(lines) and lines[i + 1].startswith("    "):
                i += 1
                text.append(lines[i].strip())
            defined.append(Footnote(match.group(1), " ".join(text)))
        else:
            used.extend(_REFERENCE.findall(line))
        i += 1
    return used, defined, headings


def problems(path: Path, tags: dict[str, set[str]] | None = None) -> list[str]:
    """What is wrong with one chapter's Sources, one sentence each ("file: what")."""
    tags = pinned_tags() if tags is None else tags
    used, defined, headings = footnotes(path.read_text())
    name = path.name
    found: list[str] = []
    if not headings or headings[-1] != HEADING:
        found.append(f"{name}: the chapter must end with a '{HEADING}' section")
    names = [f.name for f in defined]
    found += [f"{name}: [^{n}] is defined twice" for n in sorted({n for n in names if names.count(n) > 1})]
    found += [
        f"{name}: the claim marked [^{n}] has no entry under Sources" for n in dict.fromkeys(used) if n not in names
    ]
    found += [f"{name}: the Sources entry [^{n}] is cited by no claim" for n in names if n not in used]
    first = [n for n in dict.fromkeys(used) if n in names]
    if not found and names != first:  # Markdown numbers notes as they are listed
        found.append(f"{name}: the Sources entries are not in the order their claims come (first: {first[0]})")
    for note in defined:
        links = _GITHUB.findall(note.text)
        pinned = False
        for repo, kind, ref in links:
            if kind not in ("blob", "tree"):
                continue
            if repo not in tags:
                found.append(f"{name}: [^{note.name}] links into {repo}, which the book does not pin")
            elif not any(f"/{kind}/{tag}/" in note.text for tag in tags[repo]):
                found.append(
                    f"{name}: [^{note.name}] links {repo} at {ref}, not at the pinned {', '.join(sorted(tags[repo]))}"
                )
            else:
                pinned = True
        if not pinned and not _SERVER_COMMAND.search(note.text):
            found.append(
                f"{name}: [^{note.name}] names neither source at a pinned tag nor a server command that shows it"
            )
    return found


def chapter_pages() -> list[Path]:
    return sorted((paths.REPO / "site" / "chapters").glob("[0-9][0-9]-*.md"))
