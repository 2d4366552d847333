"""Certificates for TLS tests, made by `openssl` as an operator would: a CA, a server certificate it
signed (for 127.0.0.1 and localhost), a client certificate it signed, and a second CA that signed
nothing of the server's (the "wrong CA" a user may give by mistake). And a throwaway server that
takes TLS connections only."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench_dsl.server.embedded import EmbeddedServer

DAYS = "2"  # the certificates outlive the test run, not much more


@dataclass(frozen=True)
class Certificates:
    directory: Path  # mode 0700: it holds private keys
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path  # signed nothing here: a server checked against it fails verification

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def _openssl(*args: str, cwd: Path) -> None:
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {r.stderr.strip()[-800:]}")


def _ca(d: Path, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", DAYS, "-subj", f"/CN={name}",
             "-keyout", f"{name}.key", "-out", f"{name}.pem",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             cwd=d)


def _signed(d: Path, name: str, ca: str, subject: str, extensions: str) -> None:
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
             "-keyout", f"{name}-key.pem", "-out", f"{name}.csr", cwd=d)
    (d / f"{name}.ext").write_text(extensions)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-days", DAYS, "-extfile", f"{name}.ext", "-out", f"{name}-cert.pem", cwd=d)


def make_certificates(parent: str | None = None) -> Certificates:
    """A fresh set in a new directory of mode 0700 (mkdtemp); the caller removes it (`remove()`)."""
    d = Path(tempfile.mkdtemp(prefix="bench-dsl-tls-", dir=parent))
    try:
        _ca(d, "ca")
        _ca(d, "other-ca")
        _signed(d, "server", "ca", "/CN=bench-dsl test server",
                "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
        _signed(d, "client", "ca", "/CN=root",
                "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n")
        for key in ("ca.key", "other-ca.key"):
            (d / key).unlink()  # nothing signs anything more: the CAs' keys need not stay on disk
    except BaseException:
        shutil.rmtree(d, ignore_errors=True)
        raise
    return Certificates(d, d / "ca.pem", d / "server-cert.pem", d / "server-key.pem",
                        d / "client-cert.pem", d / "client-key.pem", d / "other-ca.pem")


def tls_only_server(certs: Certificates) -> EmbeddedServer:
    """A throwaway server (not started) with the certificate and `require_secure_transport=ON`: TCP
    clients must use TLS; its Unix socket, which bench-dsl uses to set it up, counts as secure."""
    return EmbeddedServer(max_connections=100, extra_args=[
        f"--ssl-ca={certs.ca}", f"--ssl-cert={certs.server_cert}", f"--ssl-key={certs.server_key}",
        "--require-secure-transport=ON"])
