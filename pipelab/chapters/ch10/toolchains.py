"""Optional toolchains: which of Node and Go this machine lacks, in one sentence each."""

from __future__ import annotations

import importlib

from ...errors import LabError

# The runner module of each toolchain and the function that finds it (raising one sentence if absent).
RUNNERS = {"Node.js": ("pipelab.node", "require_node"), "Go": ("pipelab.golang", "require_go")}


def missing_toolchains() -> dict[str, str]:
    """{toolchain: the sentence saying what to install} for each toolchain this machine lacks."""
    out = {}
    for name, (module, function) in RUNNERS.items():
        try:
            getattr(importlib.import_module(module), function)()
        except (ImportError, AttributeError):
            out[name] = f"The {name} runner ({module}) is not part of this checkout; the {name} rows are left out."
        except LabError as err:
            out[name] = str(err)
    return out


def toolchain_note() -> str:
    """One sentence per missing toolchain, saying the chapter measured the rest; empty if none is missing."""
    missing = missing_toolchains()
    return "\n".join(f"{name} rows not measured: {why}" for name, why in missing.items())
