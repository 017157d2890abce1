"""The secrets of a throw-away API server: a service-account key pair, a serving certificate, a token file.

Made fresh per control plane with the `openssl` command (Debian's, always there): an EC P-256
key that signs service-account tokens, a self-signed certificate for 127.0.0.1 and localhost
that the API server serves and clients trust as their CA, a static token file whose admin tokens
are in the `system:masters` group (every request allowed, and exempt from API priority and
fairness, so the benchmarks measure schedulers, not throttling; the second token lets a test
rotate a token file), and a client CA with one admin client certificate (also `system:masters`),
for clients that authenticate with a certificate, as kubeadm's and kind's kubeconfigs do.
Files are written 0600 into the directory given, which the caller removes.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ADMIN_USER = "caldera-admin"


class PkiError(Exception):
    """openssl is missing or refused to make a key or certificate."""


@dataclass(frozen=True, slots=True)
class Pki:
    """Paths of the files an API server and its clients need, and the admin token."""

    service_account_key: Path
    service_account_public_key: Path
    serving_cert: Path
    serving_key: Path
    token_file: Path
    admin_token: str
    second_token: str
    client_ca: Path
    client_cert: Path
    client_key: Path


def make_pki(directory: Path) -> Pki:
    """Generate every file into `directory` (created if needed)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise PkiError("no openssl command: install Debian's openssl")
    directory.mkdir(parents=True, exist_ok=True)
    sa_key, sa_pub = directory / "sa.key", directory / "sa.pub"
    cert, key = directory / "serving.crt", directory / "serving.key"
    _run([openssl, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(sa_key)])
    _run([openssl, "pkey", "-in", str(sa_key), "-pubout", "-out", str(sa_pub)])
    request = [
        openssl, "req", "-x509", "-nodes", "-days", "7",
        "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-keyout", str(key), "-out", str(cert),
        "-subj", "/CN=caldera-test-apiserver",
        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,digitalSignature,keyCertSign",
        "-addext", "extendedKeyUsage=serverAuth",
    ]  # fmt: skip
    _run(request)
    ca, ca_key = directory / "client-ca.crt", directory / "client-ca.key"
    client, client_key, csr = directory / "client.crt", directory / "client.key", directory / "client.csr"
    _run([openssl, "req", "-x509", "-nodes", "-days", "7", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
          "-keyout", str(ca_key), "-out", str(ca), "-subj", "/CN=caldera-test-client-ca"])  # fmt: skip
    _run([openssl, "req", "-new", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
          "-keyout", str(client_key), "-out", str(csr), "-subj", f"/O=system:masters/CN={ADMIN_USER}-cert"])  # fmt: skip
    _run([openssl, "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
          "-days", "7", "-out", str(client)])  # fmt: skip
    token, second = secrets.token_hex(24), secrets.token_hex(24)
    tokens = directory / "tokens.csv"
    tokens.write_text(
        f'{token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n{second},{ADMIN_USER}-2,{ADMIN_USER}-2,"system:masters"\n'
    )
    for file in (sa_key, key, tokens, ca_key, client_key):
        file.chmod(0o600)
    return Pki(sa_key, sa_pub, cert, key, tokens, token, second, ca, client, client_key)


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PkiError(f"{' '.join(command[:3])} failed: {done.stderr.strip()[-500:]}")
