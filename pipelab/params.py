"""A chapter's parameters: each declared once, in its chapter module, with its full and quick value."""

from __future__ import annotations

from typing import NamedTuple


class Size(NamedTuple):
    """A parameter's value in the book (full) and in the tests' quick run, declared once per chapter."""

    full: object
    quick: object
