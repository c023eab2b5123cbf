"""The trainer's live demos: one Java example per chapter that has a quick one, run as a trainer runs it
in front of the room (`pipelab jbang ALIAS`, the lab's Redis, the example's own defaults). `pipelab
course` keeps what each printed (`course/demos`), so the trainer's page shows the output before anyone
runs anything: the reader's own after `make course`, else the reference machine's."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass

from .. import jbang, results
from ..paths import REPO
from ..server import Endpoint

DEMOS_RESULT = "course/demos"
KEEP_LINES = 14  # what a room reads from the projector; the rest is in the example's own output


@dataclass(frozen=True)
class Demo:
    chapter: int
    alias: str
    shows: str
    sizes: tuple[int, ...] = ()  # size, repeat, warmup: smaller than the example's own, to fit a demo

    @property
    def command(self) -> str:
        where = " HOST PORT" if self.sizes else ""  # the example's defaults are the lab's; sizes come after them
        return f"build/venv/bin/pipelab jbang {self.alias}{where}{''.join(f' {n}' for n in self.sizes)}"

    def argv(self, server: Endpoint) -> list[str]:
        return [self.alias, server.host, str(server.port), *map(str, self.sizes)]


DEMOS = [
    Demo(1, "ch01-ping", "10,000 PINGs through Jedis, one by one and then pipelined, and the speed-up"),
    Demo(3, "ch03-lettuce", "Lettuce's SADDs one by one, flushed per command, and flushed once", (10_000, 2, 1)),
    Demo(4, "ch04-errors", "one WRONGTYPE in a pipeline: what each Java client gives for it and for the rest"),
    Demo(6, "ch06-push", "a RESP3 push among a pipeline's replies, and where each client puts it"),
    Demo(8, "ch08-spring", "a RedisCallback that escapes executePipelined, and the fix", (2_000, 2, 1)),
]


def trimmed(stdout: str) -> str:
    """What the room sees: the readable lines, without the line the harness reads, cut to KEEP_LINES."""
    lines = [line.rstrip() for line in stdout.splitlines() if not line.startswith(jbang.RESULT_MARK)]
    lines = [line for line in lines if line.strip()]
    if len(lines) > KEEP_LINES:
        lines = [*lines[:KEEP_LINES], f"… ({len(lines) - KEEP_LINES} more lines)"]
    return "\n".join(lines)


def run(server: Endpoint) -> dict:
    """Each demo once against `server` with the example's defaults: its trimmed output and its time."""
    summary = {}
    for demo in DEMOS:
        print(f"pipelab: live demo {demo.alias}", flush=True)
        start = time.perf_counter()
        done = subprocess.run(
            jbang.jbang_argv(demo.argv(server)),
            cwd=REPO,
            env=jbang.jbang_env(server),
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - start
        output = trimmed(done.stdout) if done.returncode == 0 else jbang.failure_line(done.stderr or done.stdout)
        summary[f"{demo.alias}_output"] = results.quantity(done.returncode, "count", output)
        took = round(seconds)  # whole seconds: a plan for the trainer, not a claim
        summary[f"{demo.alias}_s"] = results.quantity(took, "s", f"about {took} s")
    return summary


def section(doc: dict | None, from_reference: bool) -> str:
    """The trainer's page: a table of the demos (command, what it shows, how long it runs), then what each
    printed when last run."""

    def value(key: str) -> dict | None:
        return doc["summary"].get(key) if doc else None

    rows = [[str(d.chapter), f"`{d.command}`", d.shows, (value(f"{d.alias}_s") or {}).get("text", "–")] for d in DEMOS]
    parts = [
        results.md_table(["Chapter", "Command", "What it shows", "Runs for"], rows),
        "",
        "HOST and PORT are the ones `make lab` prints (`pipelab: Redis at …`).",
        "",
    ]
    if doc and from_reference:
        parts += ["_Printed on the reference machine: `make course` runs the demos on yours._", ""]
    for demo in DEMOS:
        printed = value(f"{demo.alias}_output")
        parts.append(f"**Chapter {demo.chapter}**, `{demo.command}`:")
        parts.append("")
        parts.append(
            f"```text\n{printed['text']}\n```" if printed else "_`make course` runs it and shows its output here._"
        )
        parts.append("")
    return "\n".join(parts)
