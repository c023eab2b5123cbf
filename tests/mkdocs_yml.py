"""mkdocs.yml as the tests read it: YAML with MkDocs' `!ENV` tag read as the variable's value or None."""

from __future__ import annotations

import os

import yaml

from pipelab.paths import REPO


class _Loader(yaml.SafeLoader):
    pass


def _env(loader: yaml.SafeLoader, node: yaml.Node):
    names = loader.construct_sequence(node) if isinstance(node, yaml.SequenceNode) else [loader.construct_scalar(node)]
    return next((os.environ[name] for name in names if name in os.environ), None)


_Loader.add_constructor("!ENV", _env)


def load() -> dict:
    return yaml.load((REPO / "mkdocs.yml").read_text(), Loader=_Loader)  # a SafeLoader with !ENV


def pages(nav: list) -> list[tuple[str, str]]:
    """The nav flattened, in the order "Next" follows: (title, page)."""
    found = []
    for entry in nav:
        for title, target in entry.items() if isinstance(entry, dict) else [(entry, entry)]:
            found.extend(pages(target) if isinstance(target, list) else [(title, target)])
    return found
