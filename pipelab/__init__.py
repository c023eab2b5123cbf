"""pipelab: the harness every notebook of the book imports (see README.md)."""
from .errors import LabError
from .lab import Lab, Link, Session, open_lab
from .measure import Measurement, measure
from .results import figure

__all__ = ["Lab", "LabError", "Link", "Measurement", "Session", "figure", "measure", "open_lab"]
