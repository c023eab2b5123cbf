"""Which of the functions the site shows did the notebooks call? An IPython startup file for the
kernels the tests run (tests/test_sections.py).

It wraps only the functions and classes that the site's sections show, wherever the harness holds a
reference to them (module globals, `from ... import` bindings, module-level dicts, static methods),
and appends a line to
$PIPELAB_SECTION_LOG the first time each one runs. A line tracer such as coverage.py would slow every
call of every library; these wrappers cost nothing the measurements can see.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import inspect
import json
import os
import sys
import threading

TARGETS_VAR = "PIPELAB_SECTION_TARGETS"  # {"pipelab.chapters.ch01": ["ping_pipelined", ...], ...}
LOG_VAR = "PIPELAB_SECTION_LOG"


def _recorder(log_path: str):
    seen: set[str] = set()
    lock = threading.Lock()

    def record(key: str) -> None:
        if key in seen:
            return
        with lock:
            if key not in seen:
                seen.add(key)
                with open(log_path, "a") as log:
                    log.write(key + "\n")

    return record


def _wrap(fn, key: str, record):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        record(key)
        return fn(*args, **kwargs)

    return wrapper


def _replace_everywhere(original, replacement) -> None:
    """Point every reference the harness holds to `original` at `replacement`."""
    for name, module in list(sys.modules.items()):
        if not (name == "pipelab" or name.startswith("pipelab.")):
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                setattr(module, attr, replacement)
            elif isinstance(value, dict):  # a table of workloads, e.g. {"mode": function}
                value.update({k: replacement for k, v in value.items() if v is original})
            elif isinstance(value, type) and value.__module__.startswith("pipelab"):
                for cattr, cvalue in list(vars(value).items()):
                    if isinstance(cvalue, staticmethod) and cvalue.__func__ is original:
                        setattr(value, cattr, staticmethod(replacement))


def _wrap_module(module_name: str, names: list[str], record) -> None:
    module = sys.modules[module_name]
    for name in names:
        target = getattr(module, name)
        key = f"{module_name}:{name}"
        if isinstance(target, type):  # a class runs when any method it defines runs
            for attr, value in list(vars(target).items()):
                if inspect.isfunction(value):  # methods; static methods and properties stay as they are
                    setattr(target, attr, _wrap(value, key, record))
        else:
            _replace_everywhere(target, _wrap(target, key, record))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Wraps a module's targets as soon as it has run, before whoever imports it binds their names, so
    that a kernel imports only what its own notebook needs (importing every chapter cost seconds each)."""

    def __init__(self, pending: dict[str, list[str]], record):
        self.pending, self.record = pending, record

    def find_spec(self, name, path, target=None):
        if name not in self.pending:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def run_then_wrap(module):
            run(module)
            _wrap_module(name, self.pending.pop(name), self.record)

        spec.loader.exec_module = run_then_wrap
        return spec


def install(targets: dict[str, list[str]], log_path: str) -> None:
    record = _recorder(log_path)
    for module_name in [m for m in targets if m in sys.modules]:
        _wrap_module(module_name, targets[module_name], record)
    sys.meta_path.insert(0, _AfterImport({m: n for m, n in targets.items() if m not in sys.modules}, record))


if os.environ.get(TARGETS_VAR) and os.environ.get(LOG_VAR):
    install(json.loads(os.environ[TARGETS_VAR]), os.environ[LOG_VAR])
