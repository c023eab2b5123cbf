"""One kind of error the reader sees: a sentence that says what to do, never a traceback."""

from __future__ import annotations

import functools
import sys


class LabError(Exception):
    """A problem the reader can fix; str(err) is the one sentence we print."""


def friendly(main):
    """Wrap a CLI entry point: LabError and Ctrl-C become one line and a non-zero exit."""

    @functools.wraps(main)
    def wrapper(*args, **kwargs):
        try:
            return main(*args, **kwargs)
        except LabError as err:
            print(f"pipelab: {err}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("pipelab: interrupted; every process the lab started has been stopped.", file=sys.stderr)
            return 130

    return wrapper
