"""What produced a chapter's results, as one key: a chapter is measured again only when its key changes.

The key covers the notebook, every pipelab module it imports (followed through the package's own
imports), the Java sources of the chapter's JBang aliases (with their //SOURCES), the lock, the
server binary, the sizes (quick or full) and the machine (CPU model and count, OS, Python).
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import platform
import re
from pathlib import Path

from ..paths import REPO, build_dir

PACKAGE = REPO / "pipelab"
SOURCES_LINE = re.compile(r"^//SOURCES\s+(\S+)", re.MULTILINE)


def _module_file(name: str) -> Path | None:
    if name != "pipelab" and not name.startswith("pipelab."):
        return None
    path = REPO.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def _imports(path: Path, source: str | None = None) -> set[str]:
    """The pipelab modules a file imports, as dotted names (relative imports resolved)."""
    tree = ast.parse(source if source is not None else path.read_text())
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1]) if path.is_relative_to(REPO) else ""
    if path.name == "__init__.py":
        package = ".".join(path.relative_to(REPO).parent.parts)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(filter(None, [*parts, base]))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # `from pkg import module`
    return {name for name in found if _module_file(name)}


def python_files(notebook: Path) -> list[Path]:
    """Every pipelab file the notebook's code reaches."""
    cells = json.loads(notebook.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
    todo, seen = list(_imports(notebook, code)), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        file = _module_file(name)
        todo.extend(_imports(file) - seen)
        parent = name.rpartition(".")[0]
        if parent and parent not in seen:  # importing pipelab.x.y runs pipelab/__init__ and pipelab/x/__init__
            todo.append(parent)
    return sorted({_module_file(name) for name in seen})


def java_files(chapter: str) -> list[Path]:
    """The sources of the chapter's JBang aliases (chNN-...), with what they pull in by //SOURCES."""
    aliases = json.loads((REPO / "jbang-catalog.json").read_text())["aliases"]
    todo = [REPO / a["script-ref"] for name, a in aliases.items() if name.startswith(f"ch{chapter}-")]
    seen: set[Path] = set()
    while todo:
        path = todo.pop().resolve()
        if path in seen or not path.exists():
            continue
        seen.add(path)
        todo.extend(path.parent / ref for ref in SOURCES_LINE.findall(path.read_text()))
    return sorted(seen)


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(str(path.relative_to(REPO) if path.is_relative_to(REPO) else path).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def machine() -> dict:
    model = ""
    try:
        model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), "")
    except OSError:
        pass
    return {"cpu": model or platform.processor(), "cpus": os.cpu_count(), "os": platform.system(),
            "arch": platform.machine(), "python": platform.python_version()}


def server_identity(binary: str) -> str:
    """The server binary by content, so another build of the same version counts as another input."""
    return hashlib.sha256(Path(binary).read_bytes()).hexdigest()


def sources(notebook: Path, py: list[Path] | None = None, java: list[Path] | None = None) -> dict:
    """The chapter's own inputs, by content: its notebook, the pipelab modules and Java sources it
    uses (`py`, `java`: found here when not given), and the lock (what the committed reference run
    records, machine and server aside)."""
    py = python_files(notebook) if py is None else py
    java = java_files(notebook.stem[:2]) if java is None else java
    return {"notebook": _digest([notebook]), "python": _digest(py), "java": _digest(java),
            "lock": _digest([REPO / "uv.lock"])}


def chapter_key(notebook: Path, *, quick: bool, server: str) -> dict:
    py, java = python_files(notebook), java_files(notebook.stem[:2])
    parts = sources(notebook, py, java) | {"server": server, "quick": quick, "machine": machine()}
    parts["key"] = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
    parts["files"] = [str(p.relative_to(REPO)) for p in [notebook, *py, *java]]
    return parts


def stamp_path(notebook: Path) -> Path:
    return build_dir() / "inputs" / f"{notebook.stem}.json"  # beside results/, whose files are all results


def unchanged(notebook: Path, key: dict) -> bool:
    """True when the chapter's last run had this key and its executed notebook is still there."""
    stamp = stamp_path(notebook)
    if not stamp.exists() or not (build_dir() / "notebooks" / notebook.name).exists():
        return False
    try:
        return json.loads(stamp.read_text()).get("key") == key["key"]
    except (OSError, ValueError):
        return False


def record(notebook: Path, key: dict) -> None:
    stamp = stamp_path(notebook)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(key, indent=1, sort_keys=True))
