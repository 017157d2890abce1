"""Where a Kubernetes API server is and how to prove who we are to it: kubeconfig files and in-cluster.

`load_kubeconfig(path, context=None)` reads a kubeconfig as kubectl does for one file (its
current context, or the one named): the cluster's `server`, CA (`certificate-authority` file or
`-data`), `insecure-skip-tls-verify`, `tls-server-name`; the user's client certificate and key
(files or `-data`), `token` or `tokenFile`. Relative file paths are relative to the kubeconfig's
directory, as kubectl resolves them. `$KUBECONFIG` (first existing file of the list) or
`~/.kube/config` when no path is given. `in_cluster()` is the pod's service account: the API at
`KUBERNETES_SERVICE_HOST:PORT`, its CA, and a token file that kubelet rotates (so it is read again
by the client, never cached for good).

Invariant: a `KubeConfig` is complete or not made at all. A broken file gets one `KubeconfigError`
naming the file, the field path and the rule (exec plugins, auth providers and basic auth are
refused by name: caldera does not run programs from a kubeconfig).
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import yaml

from caldera.core.errors import CalderaError

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeconfigError(CalderaError):
    """A kubeconfig (or in-cluster setting) that cannot be used: names the file, field path and rule."""


@dataclass(frozen=True, slots=True)
class KubeConfig:
    """One context, resolved: where the API server is, how to trust it, and who we are.

    Certificates and keys are PEM bytes (read from files or `-data` fields); `token_file` is
    read again by the client when it changes (rotated service-account tokens)."""

    server: str
    ca_pem: bytes | None = None
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None
    token: str | None = None
    token_file: Path | None = None
    namespace: str = "default"
    source: str = ""


def load_kubeconfig(path: str | Path | None = None, context: str | None = None) -> KubeConfig:
    """The named (else current) context of the kubeconfig at `path` ($KUBECONFIG, else ~/.kube/config)."""
    file = Path(path) if path is not None else _default_path()
    try:
        text = file.read_text()
    except OSError as e:
        raise KubeconfigError(f"{file}: cannot read the kubeconfig: {e.strerror or e}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise KubeconfigError(f"{file}: not YAML: {str(e).splitlines()[0]}") from None
    return _Reader(file, doc).config(context)


def in_cluster(directory: Path = SERVICE_ACCOUNT_DIR) -> KubeConfig:
    """The pod's own service account, as client-go's rest.InClusterConfig."""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeconfigError("not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set")
    token_file, ca_file = directory / "token", directory / "ca.crt"
    if not token_file.is_file():
        raise KubeconfigError(f"{token_file}: no service-account token (automountServiceAccountToken off?)")
    namespace_file = directory / "namespace"
    namespace = namespace_file.read_text().strip() if namespace_file.is_file() else "default"
    server_host = f"[{host}]" if ":" in host else host
    return KubeConfig(
        server=f"https://{server_host}:{port}",
        ca_pem=_read_file(ca_file, str(ca_file)) if ca_file.is_file() else None,
        token_file=token_file,
        namespace=namespace or "default",
        source="in-cluster service account",
    )


def _default_path() -> Path:
    for entry in os.environ.get("KUBECONFIG", "").split(os.pathsep):
        if entry and Path(entry).expanduser().is_file():
            return Path(entry).expanduser()
    return Path.home() / ".kube" / "config"


def _read_file(file: Path, where: str) -> bytes:
    try:
        return file.read_bytes()
    except OSError as e:
        raise KubeconfigError(f"{where}: cannot read {file}: {e.strerror or e}") from None


class _Reader:
    """Resolves one context of a parsed kubeconfig; every error names `file` and a field path."""

    def __init__(self, file: Path, doc: object) -> None:
        self.file = file
        if not isinstance(doc, dict):
            self._fail("", "must be a mapping (a kubeconfig document)")
        self.doc: dict[str, Any] = doc

    def config(self, context: str | None) -> KubeConfig:
        name = context or self.doc.get("current-context")
        if not name:
            self._fail("current-context", "is not set and no context was named")
        ctx, ctx_path = self._named("contexts", "context", str(name))
        cluster, cluster_path = self._named("clusters", "cluster", self._str(ctx, "cluster", ctx_path, required=True))
        user_name = self._str(ctx, "user", ctx_path)
        user, user_path = self._named("users", "user", user_name) if user_name else ({}, "users")
        for refused in ("exec", "auth-provider", "username", "password"):
            if refused in user:
                self._fail(
                    f"{user_path}.{refused}", "is not supported: use a token, a token file or a client certificate"
                )
        server = self._str(cluster, "server", cluster_path, required=True)
        if not server.startswith(("https://", "http://")):
            self._fail(f"{cluster_path}.server", "must be an http:// or https:// URL")
        token_file = self._str(user, "tokenFile", user_path)
        return KubeConfig(
            server=server.rstrip("/"),
            ca_pem=self._pem(cluster, "certificate-authority", cluster_path),
            insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify", False)),
            tls_server_name=self._str(cluster, "tls-server-name", cluster_path) or None,
            client_cert_pem=self._pem(user, "client-certificate", user_path),
            client_key_pem=self._pem(user, "client-key", user_path),
            token=self._str(user, "token", user_path) or None,
            token_file=self._relative(token_file) if token_file else None,
            namespace=self._str(ctx, "namespace", ctx_path) or "default",
            source=str(self.file),
        )

    def _named(self, section: str, key: str, name: str) -> tuple[dict[str, Any], str]:
        entries = self.doc.get(section)
        if not isinstance(entries, list):
            self._fail(section, "must be a list")
        for i, entry in enumerate(entries):
            if isinstance(entry, dict) and entry.get("name") == name:
                body = entry.get(key)
                if not isinstance(body, dict):
                    self._fail(f"{section}[{i}].{key}", "must be a mapping")
                return body, f"{section}[{i}].{key}"
        self._fail(section, f"has no entry named {name!r}")

    def _str(self, body: dict[str, Any], key: str, where: str, *, required: bool = False) -> str:
        value = body.get(key)
        if value is None or value == "":
            if required:
                self._fail(f"{where}.{key}", "is required")
            return ""
        if not isinstance(value, str):
            self._fail(f"{where}.{key}", "must be a string")
        return value

    def _pem(self, body: dict[str, Any], key: str, where: str) -> bytes | None:
        data = self._str(body, f"{key}-data", where)
        if data:
            try:
                return base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                self._fail(f"{where}.{key}-data", "must be base64")
        file = self._str(body, key, where)
        return _read_file(self._relative(file), f"{self.file}: {where}.{key}") if file else None

    def _relative(self, file: str) -> Path:
        path = Path(file).expanduser()
        return path if path.is_absolute() else self.file.parent / path

    def _fail(self, field: str, rule: str) -> NoReturn:
        where = f"{self.file}: {field}: " if field else f"{self.file}: "
        raise KubeconfigError(where + rule)
