"""pipelab: the lab every notebook of the book imports (see CONTRIBUTING.md, "How the repository is built").

The notebooks' API is this module and its chapter's module (pipelab.chapters.chNN); the book build
(pipelab.book) and the course (pipelab.course) stand beside it.
"""

from .errors import LabError
from .lab import Lab, Link, Session, open_lab
from .measure import Measurement, measure
from .params import Size
from .results import md_table, measurements_frame, quantity, results_frame, summarize

__all__ = [
    "Lab",
    "LabError",
    "Link",
    "Measurement",
    "Session",
    "Size",
    "md_table",
    "measure",
    "measurements_frame",
    "open_lab",
    "quantity",
    "results_frame",
    "summarize",
]
