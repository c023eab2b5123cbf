"""Chapter 11's runs of the Rust examples (node-go-rust-examples/rust, built and run by pipelab.rust).

Rust is optional, as Node and Go are: without cargo, or against a TLS Redis (the examples speak plain
TCP), every run gives None and rust_note() says why in one sentence; the rest of the chapter runs."""

from __future__ import annotations

import textwrap

from ... import rust
from ...host import Unavailable
from ...jbang import JavaRun
from ...paths import REPO
from ...server import PREFIX as LAB_PREFIX
from ...server import Endpoint

PREFIX = LAB_PREFIX + "ch11:"  # the examples' lib.rs builds the same from PIPELAB_PREFIX
TLS_NOTE = "The Rust examples speak plain TCP, and this Redis wants TLS, so the Rust rows are left out."


def rust_note(lab) -> str:
    """One sentence on why the Rust rows are missing here; empty when they run."""
    if why := rust.available():
        return f"Rust rows not measured: {why}"
    return f"Rust rows not measured: {TLS_NOTE}" if lab.endpoint.tls else ""


def run(lab, name: str, target: Endpoint, *args, cluster: Endpoint | None = None) -> JavaRun | None:
    """Rust example `name`'s run against `target`, or None where Rust cannot run here (rust_note)."""
    if rust_note(lab):
        return None
    try:
        return rust.run_example(name, target, *args, cluster=cluster)
    except Unavailable as why:  # e.g. the crates cannot be fetched here: said once, where it happened
        print(f"Rust rows not measured: {why}")
        return None


def rust_clients() -> str:
    """The clients' versions as the lock pins them, for the chapter's banner."""
    return ", ".join(f"{client} {version}" for client, version in rust.clients().items())


def rust_code(example: str, *regions: str) -> str:
    """The regions of a Rust example the site shows (its `// --8<-- [start:NAME]` lines), as Markdown:
    the code the section is about, to read here and change in its file (the next run rebuilds it)."""
    path = rust.CRATE_DIR / "src" / "bin" / f"{example}.rs"
    lines = [line.rstrip() for line in path.read_text().splitlines()]
    marks = [line.strip() for line in lines]
    blocks = [f"`{path.relative_to(REPO).as_posix()}`"]
    for region in regions:
        start = marks.index(f"// --8<-- [start:{region}]")
        end = marks.index(f"// --8<-- [end:{region}]", start)
        code = textwrap.dedent("\n".join(lines[start + 1 : end])).strip("\n")
        blocks.append(f"```rust\n{code}\n```")
    return "\n\n".join(blocks)
