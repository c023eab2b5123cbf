"""Running an example written in another language (Node, Go, Rust) that prints the Java
examples' result line: its output read line by line, stderr drained beside it (so a chatty example
cannot fill the pipe and stall), and one sentence when it fails."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from .errors import LabError
from .jbang import RESULT_MARK, JavaRun, failure_line, parse_result
from .paths import REPO

# The examples in languages other than Java (java-examples/ holds the Java): node/, go/ and rust/.
OTHER_EXAMPLES_DIR = "node-go-rust-examples"
OTHER_EXAMPLES = REPO / OTHER_EXAMPLES_DIR


def run_printing(alias: str, what: str, argv: list[str], cwd: Path, env: dict) -> JavaRun:
    """Run `argv`; its result as a JavaRun named `alias`. `what` names it in an error ("node x.mjs")."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    err_chunks: list[str] = []
    drain = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()), daemon=True)
    drain.start()
    lines = [line.rstrip("\n") for line in proc.stdout]
    proc.wait()
    drain.join()
    if proc.returncode != 0:
        raise LabError(
            f"{what} exited with {proc.returncode}: {failure_line(''.join(err_chunks) or chr(10).join(lines))}"
        )
    try:
        data = parse_result("\n".join(lines))
    except (LabError, ValueError):
        raise LabError(f"{what} printed no single result line; run it by hand to see why.") from None
    return JavaRun(alias, data, [line for line in lines if not line.startswith(RESULT_MARK)])
