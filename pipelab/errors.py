"""One kind of error the reader sees: a sentence that says what to do, never a traceback."""

from __future__ import annotations

import functools
import sys

from redis.exceptions import NoPermissionError


class LabError(Exception):
    """A problem the reader can fix; str(err) is the one sentence we print."""


def not_permitted(reply: str) -> str:
    """The sentence for an ACL refusal, from the server's NOPERM reply (redis-py's NoPermissionError)."""
    return (
        f"The Redis user in REDIS_URL may not run a command the lab needs ({reply.strip().rstrip('.')}); "
        "give that user the README's ACL line, or use a user that has it."
    )


def friendly(main):
    """Wrap a CLI entry point: LabError and Ctrl-C become one line and a non-zero exit."""

    @functools.wraps(main)
    def wrapper(*args, **kwargs):
        try:
            return main(*args, **kwargs)
        except LabError as err:
            print(f"pipelab: {err}", file=sys.stderr)
            return 2
        except NoPermissionError as err:
            print(f"pipelab: {not_permitted(str(err))}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("pipelab: interrupted; every process the lab started has been stopped.", file=sys.stderr)
            return 130

    return wrapper
