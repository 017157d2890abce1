"""How the client proves who it is and whom it trusts: the TLS context and the bearer token of a KubeConfig.

A token file is read again whenever it changes on disk (kubelet rotates service-account tokens by
renaming a new file into place); a client certificate given as data is written to a private
temporary directory only for the moment ssl loads it.
"""

from __future__ import annotations

import os
import ssl
import tempfile
import threading
from pathlib import Path

from caldera.backends.kube.errors import KubeError
from caldera.backends.kube.kubeconfig import KubeConfig


class BearerToken:
    """The bearer token to send: fixed, or read from a file again whenever the file changes."""

    def __init__(self, config: KubeConfig) -> None:
        self._fixed = config.token
        self._file = config.token_file
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._value: str | None = None

    def headers(self) -> dict[str, str]:
        token = self._fixed or self._from_file()
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _from_file(self) -> str | None:
        if self._file is None:
            return None
        try:
            st = self._file.stat()
            stamp = (st.st_mtime_ns, st.st_size)
            with self._lock:
                if stamp != self._stamp:
                    self._value = self._file.read_text().strip()
                    self._stamp = stamp
                return self._value
        except OSError as e:
            raise KubeError(f"cannot read the token file {self._file}: {e.strerror or e}") from None


def ssl_context(config: KubeConfig) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if config.insecure_skip_tls_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif config.ca_pem is not None:
        context = ssl.create_default_context(cadata=config.ca_pem.decode())
    if config.client_cert_pem is not None:
        if config.client_key_pem is None:
            raise KubeError(f"{config.source}: a client certificate needs its key (client-key)")
        _load_cert_chain(context, config.client_cert_pem, config.client_key_pem)
    return context


def _load_cert_chain(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """ssl loads a key pair only from files: write them to a private directory for the call, then remove it."""
    with tempfile.TemporaryDirectory(prefix="caldera-kube-") as directory:
        cert, key = Path(directory, "client.crt"), Path(directory, "client.key")
        for file, data in ((cert, cert_pem), (key, key_pem)):
            fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
        try:
            context.load_cert_chain(cert, key)
        except ssl.SSLError as e:
            raise KubeError(f"the client certificate or key is not usable: {e}") from None
