"""Reading kubeconfigs and the in-cluster service account: what is taken, and one clear error per broken file."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from caldera.backends.kube.kubeconfig import KubeconfigError, in_cluster, load_kubeconfig


def write(path: Path, doc: object) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def kubeconfig(*, user: dict | None = None, cluster: dict | None = None, namespace: str | None = None) -> dict:
    context = {"cluster": "c", "user": "u"} | ({"namespace": namespace} if namespace else {})
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "other", "cluster": {"server": "https://127.0.0.2:6443"}},
            {"name": "c", "cluster": cluster or {"server": "https://127.0.0.1:6443/"}},
        ],
        "users": [{"name": "u", "user": user if user is not None else {"token": "abc"}}],
        "contexts": [{"name": "ctx", "context": context}, {"name": "second", "context": {"cluster": "other"}}],
        "current-context": "ctx",
    }


def test_the_current_context_with_token_and_ca_data(tmp_path):
    ca = b"-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n"
    cluster = {"server": "https://127.0.0.1:6443/", "certificate-authority-data": base64.b64encode(ca).decode()}
    config = load_kubeconfig(write(tmp_path / "config", kubeconfig(cluster=cluster, namespace="team")))
    assert config.server == "https://127.0.0.1:6443"
    assert config.ca_pem == ca
    assert config.token == "abc"
    assert config.namespace == "team"
    assert config.source == str(tmp_path / "config")


def test_a_named_context_and_files_relative_to_the_kubeconfig(tmp_path):
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "client.crt").write_bytes(b"CERT")
    (tmp_path / "pki" / "client.key").write_bytes(b"KEY")
    (tmp_path / "token").write_text("t0k3n\n")
    user = {"client-certificate": "pki/client.crt", "client-key": "pki/client.key", "tokenFile": "token"}
    config = load_kubeconfig(write(tmp_path / "config", kubeconfig(user=user)))
    assert (config.client_cert_pem, config.client_key_pem) == (b"CERT", b"KEY")
    assert config.token_file == tmp_path / "token"
    other = load_kubeconfig(tmp_path / "config", context="second")
    assert other.server == "https://127.0.0.2:6443"
    assert other.token is None and other.namespace == "default"


def test_kubeconfig_environment_variable_first_existing_file(tmp_path, monkeypatch):
    path = write(tmp_path / "real", kubeconfig())
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}:{path}")
    assert load_kubeconfig().server == "https://127.0.0.1:6443"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param("- a\n- b\n", "config: must be a mapping", id="not-a-mapping"),
        pytest.param("a: [\n", "config: not YAML", id="not-yaml"),
        pytest.param(kubeconfig() | {"current-context": ""}, "config: current-context: is not set", id="no-context"),
        pytest.param(
            kubeconfig() | {"current-context": "nope"}, "config: contexts: has no entry named 'nope'", id="unknown"
        ),
        pytest.param(
            kubeconfig(cluster={"server": "127.0.0.1:6443"}),
            "config: clusters[1].cluster.server: must be an http:// or https:// URL",
            id="server-url",
        ),
        pytest.param(
            kubeconfig(user={"exec": {"command": "aws"}}),
            "config: users[0].user.exec: is not supported",
            id="exec-refused",
        ),
        pytest.param(
            kubeconfig(cluster={"server": "https://h", "certificate-authority-data": "not base64!"}),
            "config: clusters[1].cluster.certificate-authority-data: must be base64",
            id="bad-base64",
        ),
        pytest.param(
            kubeconfig(cluster={"server": "https://h", "certificate-authority": "nowhere.crt"}),
            "config: clusters[1].cluster.certificate-authority: cannot read",
            id="missing-file",
        ),
    ],
)
def test_a_broken_kubeconfig_is_one_clear_error(tmp_path, doc, message):
    path = tmp_path / "config"
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    with pytest.raises(KubeconfigError) as caught:
        load_kubeconfig(path)
    assert str(caught.value).startswith(f"{tmp_path}/{message}")


def test_a_missing_kubeconfig(tmp_path):
    with pytest.raises(KubeconfigError, match=r"missing: cannot read the kubeconfig"):
        load_kubeconfig(tmp_path / "missing")


def test_in_cluster_needs_the_service_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(KubeconfigError, match="not in a cluster"):
        in_cluster(tmp_path)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(KubeconfigError, match="no service-account token"):
        in_cluster(tmp_path)
    (tmp_path / "token").write_text("tok")
    (tmp_path / "namespace").write_text("jobs\n")
    config = in_cluster(tmp_path)
    assert config.server == "https://[fd00::1]:443"
    assert (config.token_file, config.namespace, config.ca_pem) == (tmp_path / "token", "jobs", None)
