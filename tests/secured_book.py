"""A reader's secured Redis, end to end: `python -m tests.secured_book DIR` starts a TLS server (a CA
made for the run, a password on the default user) with the README's ACL user, runs a quick chapter 1
against it through `pipelab book` (Python and Java, the site built), watches every command line on
the machine meanwhile, and writes DIR/secured.json for tests/test_redis_url.py to read. The build
goes to DIR/build, which the test then searches for the password."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

from pipelab import tls
from pipelab.paths import REPO
from pipelab.server import EmbeddedRedis, free_port

USER = "pipelab"
PASSWORD = "s3cret p@ss:/w+%rd"  # reserved characters: its percent-encoded form differs from it
ADMIN_PASSWORD = "admin-" + PASSWORD
CHAPTER = "01"
BOOK_BUILD = "build"  # the book's build, in DIR


def readme_acl(user: str, password: str) -> list[str]:
    """The README's minimal ACL line as the arguments of one command, for `user` and `password`."""
    line = re.search(r"^\s*(ACL SETUSER pipelab on >\S+ .*)$", (REPO / "README.md").read_text(), re.MULTILINE)
    assert line, "the README shows no ACL SETUSER line for the lab's user"
    words = shlex.split(line.group(1))
    return [w if i != 2 else user for i, w in enumerate(words[:3])] + [
        ">" + password if w.startswith(">") else w for w in words[3:]
    ]


def command_lines() -> list[str]:
    lines = []
    for proc in Path("/proc").iterdir():
        try:
            lines.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return lines


def main(base: Path) -> int:
    base.mkdir(parents=True, exist_ok=True)
    files = tls.make_ca(base / "tls")
    secrets = [PASSWORD, quote(PASSWORD, safe="")]
    with EmbeddedRedis(port=free_port(), binary=tls.tls_server_binary(), password=ADMIN_PASSWORD, tls=files) as server:
        with server.endpoint.client() as admin:
            admin.execute_command(*readme_acl(USER, PASSWORD))
        url = f"rediss://{USER}:{quote(PASSWORD, safe='')}@127.0.0.1:{server.tls_port}/0?ssl_ca_certs={files.ca}"
        env = dict(os.environ, REDIS_URL=url, PIPELAB_BUILD=str(base / BOOK_BUILD), PIPELAB_QUICK="1")
        with open(base / "book.log", "w") as log:
            book = subprocess.Popen(
                [sys.executable, "-m", "pipelab", "book", "--quick", "--only", CHAPTER],
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            in_ps: set[str] = set()
            while book.poll() is None:
                in_ps |= {line[:200] for line in command_lines() if any(s in line for s in secrets)}
                time.sleep(0.1)
        with server.endpoint.client() as admin:
            left = [k.decode() for k in admin.scan_iter(count=1000)]
    (base / "secured.json").write_text(
        json.dumps(
            {
                "code": book.returncode,
                "output": (base / "book.log").read_text()[-4000:],
                "secrets": secrets,
                "in_ps": sorted(in_ps),
                "keys_left": left,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
