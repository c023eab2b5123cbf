"""What produced a chapter's results, as one key: a chapter is measured again only when its key changes.

The key covers what can change a figure, by meaning rather than by bytes:
- the notebook's code cells (their syntax tree: markdown, outputs, cell ids and formatting do not count),
  and those of any other notebook whose taught cells this chapter's code runs (taught.load);
- every pipelab module the notebook reaches through imports, as a syntax tree without docstrings
  (comments and formatting never reach the tree), except `settings.py`, which only says where the lab
  listens; each Size there as the value the run's mode reads (a quick size never stales a full run);
- the Java sources of every JBang alias the notebook ran (recorded when it runs, not guessed from the
  alias's name), with their //SOURCES, as tokens without comments (JBang's //DEPS-style directives
  count, since they pin the clients);
- the book's own packages in the lock (name and version; the test and lab extras do not count);
- for a chapter whose harness runs Node, Go or Rust examples (node-go-rust-examples/node, go, rust),
  every file there (the examples as tokens without comments, package.json, package-lock.json, go.mod,
  go.sum, Cargo.toml, Cargo.lock) and the versions of node, go and cargo on this machine;
- the server binary, quick or full, and the machine (CPU model and count, OS, Python).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

from .. import host, jbang, taught
from ..paths import REPO, build_dir
from ..programs import OTHER_EXAMPLES_DIR

PACKAGE = REPO / "pipelab"
# Files whose values cannot move a figure (where the lab listens), so no chapter's key holds them.
NOT_INPUTS = ("pipelab/settings.py", "java-examples/common/LabDefaults.java")


def _module_file(name: str) -> Path | None:
    return _module_file_in(REPO, name)


# One notebook's walk asks about the same modules hundreds of times; each walk starts afresh
# (python_parts), so a file added or removed since is seen.
@functools.lru_cache(maxsize=1024)
def _module_file_in(repo: Path, name: str) -> Path | None:
    if name != "pipelab" and not name.startswith("pipelab."):
        return None
    path = repo.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def _package(path: Path) -> str:
    """The package a file's relative imports start from ("pipelab.chapters" for a chapter module)."""
    if not path.is_relative_to(REPO):
        return ""
    parts = path.relative_to(REPO).parts
    return ".".join(parts[:-1])


def _imports(package: str, nodes: list[ast.AST]) -> list[tuple[str, str | None, frozenset[str]]]:
    """What the statements import, as (module, name taken from it or None for the whole module or "*",
    the attributes the code reads of that name): the syntax alone, before asking which are pipelab's."""
    found, every = [], [n for top in nodes for n in ast.walk(top)]
    read: dict[str, set[str]] = {}  # `from . import ch01` ... ch01.sadd_keys: {"ch01": {"sadd_keys"}}
    for n in every:
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            read.setdefault(n.value.id, set()).add(n.attr)

    for node in every:
        if isinstance(node, ast.Import):
            found += [(alias.name, None, frozenset()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(filter(None, [*parts, base]))
            found += [(base, a.name, frozenset(read.get(a.asname or a.name, ()))) for a in node.names]
    return found


def _resolve(imports: list[tuple[str, str | None, frozenset[str]]]) -> dict[str, set[str] | None]:
    """_imports' findings as _uses gives them: which of the modules are pipelab's files (REPO's now)."""
    used = {}

    def want(module: str, names: set[str] | None) -> None:
        if _module_file(module):
            old = used.get(module, set())
            used[module] = None if names is None or old is None else old | names

    for base, name, attributes in imports:
        if name is None or name == "*":
            want(base, None)
        elif _module_file(f"{base}.{name}"):
            want(f"{base}.{name}", set(attributes))
            want(base, set())  # the package's __init__ runs first
        else:
            want(base, {name})
    return used


def _defined(stmt: ast.stmt) -> set[str]:
    """The names a top-level statement binds (empty for one that only does something)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _slice(tree: ast.Module, names: set[str] | None) -> list[ast.stmt]:
    """The top-level statements that `names` need: their definitions, what those use from the same
    module, and every statement that only does something (it runs at import). All, for None."""
    if names is None:
        return tree.body
    keep = {i for i, stmt in enumerate(tree.body) if not _defined(stmt)}
    todo = set(names).union(*({n.id for n in ast.walk(tree.body[i]) if isinstance(n, ast.Name)} for i in keep))
    done: set[str] = set()
    while todo:
        name = todo.pop()
        done.add(name)
        for i, stmt in enumerate(tree.body):
            if i not in keep and name in _defined(stmt):
                keep.add(i)
                todo |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)} - done
    return [stmt for i, stmt in enumerate(tree.body) if i in keep]


def _whole(path: Path, own: str) -> bool:
    """The harness and the chapter's own modules count whole; another chapter's, only what is used."""
    rel = path.relative_to(REPO).parts
    return not (
        rel[:2] == ("pipelab", "chapters")
        and len(rel) > 2
        and rel[2].startswith("ch")
        and not rel[2].startswith(f"ch{own}")
    )


def _notebook_code(notebook: Path) -> str:
    """The notebook's code cells, one after another; IPython's magics and shell lines left out."""
    cells = json.loads(notebook.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))


def _is_input(path: Path) -> bool:
    return not (path.is_relative_to(REPO) and path.relative_to(REPO).as_posix() in NOT_INPUTS)


def python_parts(notebook: Path) -> dict[Path, set[str] | None]:
    """{pipelab file the notebook's code reaches: the names of it that count, None for all of it}.
    Another chapter's module counts only for what this chapter takes from it; settings.py not at all."""
    own = notebook.name[:2]
    _module_file_in.cache_clear()
    todo = list(_uses(notebook, _notebook_code(notebook), None).items())
    parts: dict[Path, set[str] | None] = {}
    while todo:
        name, names = todo.pop()
        path = _module_file(name)
        if _whole(path, own):
            names = None
        old = parts.get(path, set())
        merged = None if names is None or old is None else old | names
        if path in parts and merged == old:
            continue
        parts[path] = merged
        todo.extend(_uses(path, path.read_text(), None if merged is None else frozenset(merged)).items())
        parent = name.rpartition(".")[0]
        if parent:  # importing pipelab.x.y runs pipelab/__init__ and pipelab/x/__init__
            todo.append((parent, set()))
    return {path: names for path, names in sorted(parts.items()) if _is_input(path)}


def _uses(path: Path, text: str, names: frozenset[str] | None) -> dict[str, set[str] | None]:
    """{pipelab module: the names the code takes from it, None for all of it}, for the code that `names`
    need (all of it for None)."""
    return _resolve(_file_imports(_package(path), text, names))


# The chapters reach the same files: each version is parsed once, wherever the repository lies (the
# tests key copies of it). Which modules exist is asked afresh each time (_resolve).
@functools.lru_cache(maxsize=1024)
def _file_imports(package: str, text: str, names: frozenset[str] | None) -> tuple:
    return tuple(_imports(package, _slice(ast.parse(text), names)))


def python_files(notebook: Path) -> list[Path]:
    """Every pipelab file the notebook's code reaches (settings.py aside)."""
    return list(python_parts(notebook))


def java_files(aliases: list[str]) -> list[Path]:
    """The sources of these JBang aliases, with what they pull in by //SOURCES (LabDefaults aside)."""
    known = jbang.catalog_aliases()
    found = {path for alias in aliases if alias in known for path in jbang.alias_sources(alias)}
    return sorted(path for path in found if _is_input(path))


# --------------------------------------------------------------------- what a file means


class _NoDocstrings(ast.NodeTransformer):
    def generic_visit(self, node):
        super().generic_visit(node)
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
        return node


class _OneSize(ast.NodeTransformer):
    """Each Size(full=..., quick=...) as the one value a run in that mode reads (params.Size): a quick
    size is no input of a full run, nor a full size of a quick one."""

    def __init__(self, field: str):
        self.field = field

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        if called != "Size":
            return node
        given = dict(zip(("full", "quick"), node.args)) | {k.arg: k.value for k in node.keywords if k.arg}
        return given.get(self.field, node)


@functools.lru_cache(maxsize=1024)
def _python_meaning(source: str, names: frozenset[str] | None, quick: bool | None) -> str:
    tree = _NoDocstrings().visit(ast.parse(source))
    if quick is not None:  # before the slice: a name only the other mode's size uses is then no input
        tree = _OneSize("quick" if quick else "full").visit(tree)
    return ast.dump(ast.Module(body=_slice(tree, names), type_ignores=[]))


def python_meaning(source: str, names: set[str] | None = None, *, quick: bool | None = None) -> str:
    """The code's syntax tree without docstrings (comments, blank lines and layout never reach it);
    with `names`, only the statements they need (_slice); with `quick`, each Size as that mode's value."""
    return _python_meaning(source, None if names is None else frozenset(names), quick)


# A Java token stream: strings and chars kept whole (a "//" inside one is no comment), comments dropped
# except JBang's directives (//DEPS, //SOURCES, //JAVA_OPTIONS ...), which decide what runs.
JAVA_TOKENS = re.compile(
    r'"""(?:.|\n)*?"""|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
    r"|(?P<directive>^//[A-Z_]+\b.*$)|(?P<comment>//.*$|/\*(?:.|\n)*?\*/)"
    r"|\w+|[^\s\w]",
    re.MULTILINE,
)


@functools.lru_cache(maxsize=1024)
def java_meaning(source: str) -> str:
    """The source's tokens with comments left out: comments and layout never change it."""
    return " ".join(m[0].strip() for m in JAVA_TOKENS.finditer(source) if not m["comment"])


def locked_packages(lock: Path | None = None) -> dict[str, dict]:
    """Every package of the lock, by name."""
    return _packages((lock or REPO / "uv.lock").read_text())


@functools.lru_cache(maxsize=4)
def _packages(text: str) -> dict[str, dict]:
    # Parsing uv.lock takes a quarter of a second, and every chapter's key reads it.
    return {p["name"]: p for p in tomllib.loads(text)["package"]}


def lock_meaning(lock: Path | None = None) -> str:
    """The packages the book itself installs from the lock (its dependencies, followed through
    theirs), as name==version: a tool added to the test or lab extras changes no figure."""
    packages = locked_packages(lock)
    todo = [dep["name"] for dep in packages["pipelab"].get("dependencies", [])]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in seen and name in packages:
            seen.add(name)
            todo.extend(dep["name"] for dep in packages[name].get("dependencies", []))
    return "\n".join(f"{name}=={packages[name].get('version', '?')}" for name in sorted(seen))


def meaning(path: Path) -> str:
    if path.suffix == ".ipynb":
        return python_meaning(_notebook_code(path))
    if path.suffix == ".py":
        return python_meaning(path.read_text())
    if path.suffix == ".java":
        return java_meaning(path.read_text())
    return path.read_text()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _name(path: Path) -> str:
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)


def digests(paths: list[Path]) -> dict[str, str]:
    """{file: digest of its meaning}, so a record says which file changed."""
    return {_name(path): _sha(meaning(path)) for path in paths}


# --------------------------------------------------------------------- a chapter's key


def machine() -> dict:
    try:
        model = host.cpu_model()
    except (OSError, host.Unavailable):
        model = ""
    return {
        "cpu": model or platform.processor(),
        "cpus": os.cpu_count(),
        "os": platform.system(),
        "arch": platform.machine(),
        "python": platform.python_version(),
    }


def server_identity(binary: str) -> str:
    """The server binary by content, so another build of the same version counts as another input."""
    return hashlib.sha256(Path(binary).read_bytes()).hexdigest()


# The examples in other languages, beside a chapter's Java ones: each language's folder and its
# toolchain's version command. The lock files count byte for byte, the sources as tokens.
TOOLCHAINS = {"node": ["node", "--version"], "go": ["go", "version"], "rust": ["cargo", "--version"]}
# pipelab.node, golang and rust read these: "off" hides the toolchain; PIPELAB_GO may also name a go.
TOOLCHAIN_VARS = {"node": "PIPELAB_NODE", "go": "PIPELAB_GO", "rust": "PIPELAB_RUST"}
EXAMPLE_SUFFIXES = (".mjs", ".js", ".go", ".rs")
RUNNERS = {"node": "node.py", "go": "golang.py", "rust": "rust.py"}  # each language's runner in pipelab/


def example_files(notebook: Path, reached: dict[Path, set[str] | None]) -> list[Path]:
    """The Node, Go and Rust files the notebook's chapter runs: every file of a language's folder in
    node-go-rust-examples/ when its harness reaches that language's runner (pipelab/node.py, golang.py,
    rust.py; `reached` is python_parts(notebook)); modules, caches and build output left out; none for
    a chapter without them."""
    folders = [
        REPO / OTHER_EXAMPLES_DIR / lang for lang, runner in RUNNERS.items() if REPO / "pipelab" / runner in reached
    ]
    found = {
        path
        for folder in folders
        for path in folder.rglob("*")
        if path.is_file() and not {"node_modules", "target"} & set(path.parts) and not path.name.startswith(".")
    }
    return sorted(found)


def example_meaning(path: Path) -> str:
    # // and /* */ comments read the same in JavaScript and Go as in Java.
    return java_meaning(path.read_text()) if path.suffix in EXAMPLE_SUFFIXES else path.read_text()


def toolchain_versions(langs) -> dict[str, str]:
    """The version each toolchain prints ("v20.19.5", "go version go1.23.4 linux/amd64"), "absent"
    without one: a chapter measured without node is measured again once node is there."""
    out = {}
    for lang in sorted(langs):
        argv, setting = TOOLCHAINS[lang], os.environ.get(TOOLCHAIN_VARS[lang], "")
        if setting.lower() == "off":
            out[lang] = "off"
            continue
        found = setting if lang == "go" and setting else shutil.which(argv[0])
        try:
            done = subprocess.run([found, *argv[1:]], capture_output=True, text=True, timeout=30) if found else None
        except (OSError, subprocess.TimeoutExpired):
            done = None
        out[lang] = done.stdout.strip() if done and done.returncode == 0 else "absent"
    return out


def sources(notebook: Path, aliases: list[str], *, quick: bool = False) -> dict:
    """The chapter's own inputs by meaning, for a full run or a `quick` one: its notebook, the pipelab
    modules it reaches (with that mode's sizes), the Java sources of the `aliases` it ran, and the lock
    (what the committed reference run, a full one, records, machine and server aside)."""
    parts = python_parts(notebook)
    python = {
        _name(path) + ("" if names is None else " (what this chapter uses)"): _sha(
            python_meaning(path.read_text(), names, quick=quick)
        )
        for path, names in parts.items()
    }
    out = {
        "notebook": _sha(meaning(notebook)),
        "python": python,
        "aliases": sorted(set(aliases)),
        "java": digests(java_files(aliases)),
        "lock": _sha(lock_meaning()),
    }
    texts = [_notebook_code(notebook), *(path.read_text() for path in parts)]
    taken = set().union(*map(taught.loaded_by, texts)) - {notebook.stem}
    if taken:  # another chapter's taught cells, run by this one's harness (taught.load)
        out["taught"] = {
            f"notebooks/{stem}.ipynb": _sha(meaning(taught.notebook_path(stem, REPO))) for stem in sorted(taken)
        }
    examples = example_files(notebook, parts)
    if examples:  # only then: the other chapters' keys stay as they were
        out["examples"] = {_name(path): _sha(example_meaning(path)) for path in examples}
        out["toolchains"] = toolchain_versions(
            {path.relative_to(REPO / OTHER_EXAMPLES_DIR).parts[0] for path in examples}
        )
    return out


def changes(made_from: dict, now: dict) -> list[str]:
    """What differs between two `sources` records, file by file (empty when the chapter is current)."""
    found = [part for part in ("notebook", "lock", "aliases", "toolchains") if made_from.get(part) != now.get(part)]
    for part in ("python", "java", "examples", "taught"):
        old, new = made_from.get(part) or {}, now.get(part) or {}
        if not isinstance(old, dict):  # a record from before files were named one by one
            found.append(part)
            continue
        found += sorted(name for name in old.keys() | new.keys() if old.get(name) != new.get(name))
    return found


def chapter_key(notebook: Path, *, quick: bool, server: str, aliases: list[str]) -> dict:
    parts = sources(notebook, aliases, quick=quick) | {"server": server, "quick": quick, "machine": machine()}
    parts["key"] = _sha(json.dumps(parts, sort_keys=True))
    return parts


def stamp_path(notebook: Path) -> Path:
    return build_dir() / "inputs" / f"{notebook.stem}.json"  # beside results/, whose files are all results


def runs_log(notebook: Path) -> Path:
    """Where the chapter's kernel notes each JBang alias it runs (jbang.RUNS_LOG_VAR)."""
    return build_dir() / "inputs" / f"{notebook.stem}.java-runs.txt"


def last_run(notebook: Path) -> dict | None:
    """The key the chapter's last run recorded, or None."""
    try:
        return json.loads(stamp_path(notebook).read_text())
    except (OSError, ValueError):
        return None


def unchanged(notebook: Path, key: dict) -> bool:
    """True when the chapter's last run had this key and its executed notebook is still there."""
    last = last_run(notebook)
    return last is not None and last.get("key") == key["key"] and (build_dir() / "notebooks" / notebook.name).exists()


def record(notebook: Path, key: dict) -> None:
    stamp = stamp_path(notebook)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(key, indent=1, sort_keys=True))
