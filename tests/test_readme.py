"""The README's module map names every module of the harness, and nothing that is not there."""

from __future__ import annotations

import re

from pipelab.paths import REPO


def test_the_module_map_lists_every_module_and_only_those():
    readme = (REPO / "README.md").read_text()
    listed = set(re.findall(r"^\| `(pipelab/[\w/]+\.py)` \|", readme, re.M))
    present = {p.relative_to(REPO).as_posix() for p in (REPO / "pipelab").rglob("*.py")}
    assert listed, "the README has no module map"
    assert not present - listed, f"modules missing from the README's map: {sorted(present - listed)}"
    assert not listed - present, f"the README's map names modules that do not exist: {sorted(listed - present)}"
