"""The oldest Python the book runs on is said once per place that checks it, and they agree: pyproject's
requires-python, the lock's, the Makefile's check (and its sentence) and the README. Debian 12's own
Python (3.11.2) passes the Makefile's check, and uv would install the whole lock for it."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from pipelab.paths import REPO

FLOOR = (3, 11)
FLOOR_TEXT = "3.11"
DEBIAN_PYTHON = Path("/usr/bin/python3")  # Debian 12: 3.11.2, below the 3.11.5 that pymdown-extensions 13 needs
UV = REPO / "build" / "uv" / "bin" / "uv"  # where the Makefile installs its pinned uv
MAKEFILE = (REPO / "Makefile").read_text()
MAKE_CHECK = re.compile(r"sys\.exit\(sys\.version_info < \(([\d, ]+)\)\)")


def test_pyproject_the_lock_the_makefile_and_the_readme_name_the_same_floor():
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    locked = tomllib.loads((REPO / "uv.lock").read_text())["requires-python"]
    assert declared == locked == f">={FLOOR_TEXT}", "run `make lock` after changing requires-python"
    checks = MAKE_CHECK.findall(MAKEFILE)
    assert len(checks) == 1 and tuple(int(part) for part in checks[0].split(",")) == FLOOR
    assert f"needs Python {FLOOR_TEXT} or newer" in MAKEFILE
    assert f"Python {FLOOR_TEXT}.0+" in (REPO / "README.md").read_text()


def debian_python() -> str:
    """/usr/bin/python3 when it is a 3.11 older than 3.11.5 (what the old floor refused), else a skip."""
    if not DEBIAN_PYTHON.exists():
        pytest.skip(f"no {DEBIAN_PYTHON} here to try the floor with")
    done = subprocess.run(
        [str(DEBIAN_PYTHON), "-c", "import sys; print(*sys.version_info[:3], sep='.')"],
        capture_output=True,
        text=True,
    )
    version = tuple(int(part) for part in done.stdout.split(".")) if done.returncode == 0 else ()
    if not (FLOOR <= version < (3, 11, 5)):
        pytest.skip(f"{DEBIAN_PYTHON} is Python {done.stdout.strip() or '?'}, not a 3.11 older than 3.11.5")
    return str(DEBIAN_PYTHON)


def test_debian_python_passes_the_makefiles_check():
    python = debian_python()
    script = MAKE_CHECK.search(MAKEFILE).group(0)
    assert subprocess.run([python, "-c", f"import sys; {script}"]).returncode == 0


def test_uv_would_install_the_whole_lock_for_debian_python(tmp_path):
    python = debian_python()
    if not UV.exists():
        pytest.skip(f"no {UV.relative_to(REPO)} yet (the first make installs it)")
    # The Makefile's own sync, as a dry run: the lock's wheels for this interpreter, nothing written.
    done = subprocess.run(
        [str(UV), "sync", "--frozen", "--dry-run", "--python", python, "--extra", "test", "--extra", "lab"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=dict(os.environ, UV_PROJECT_ENVIRONMENT=str(tmp_path / "venv"), UV_PYTHON_DOWNLOADS="never"),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "pymdown-extensions" in done.stderr and "Would install" in done.stderr
