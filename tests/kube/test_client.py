"""The Kubernetes REST client against a real kube-apiserver: every verb, patches, lists, watches, errors, auth."""

from __future__ import annotations

import base64
import threading

import pytest
import yaml

from caldera.backends.kube.client import (
    ApiError,
    Conflict,
    Gone,
    KubeClient,
    NotFound,
    Unreachable,
    resource_path,
)
from caldera.backends.kube.kubeconfig import KubeConfig, in_cluster, load_kubeconfig
from caldera.launcher.server import free_port

pytestmark = pytest.mark.kube

REVIEWS = resource_path("authentication.k8s.io/v1", "selfsubjectreviews")


def configmap(name: str, data: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> dict:
    meta = {"name": name} | ({"labels": labels} if labels else {})
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {}}


def pod(name: str, *containers: str) -> dict:
    spec = {"containers": [{"name": c, "image": f"{c}:1"} for c in containers or ("main",)]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def whoami(kube: KubeClient) -> str:
    review = kube.create(REVIEWS, {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return str(review["status"]["userInfo"]["username"])


def test_resource_paths():
    assert resource_path("v1", "nodes") == "/api/v1/nodes"
    assert resource_path("v1", "pods", namespace="a b", name="p", subresource="binding") == (
        "/api/v1/namespaces/a%20b/pods/p/binding"
    )
    assert resource_path("batch.volcano.sh/v1alpha1", "jobs", namespace="ns") == (
        "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs"
    )
    with pytest.raises(ValueError, match="subresource needs"):
        resource_path("v1", "pods", subresource="status")


def test_create_get_replace_delete_with_optimistic_concurrency(plane, namespace):
    kube = plane.kube
    maps = resource_path("v1", "configmaps", namespace=namespace)
    made = kube.create(maps, configmap("a", {"k": "1"}))
    assert kube.get(f"{maps}/a")["data"] == {"k": "1"}
    with pytest.raises(Conflict) as exists:
        kube.create(maps, configmap("a"))
    assert (exists.value.code, exists.value.reason) == (409, "AlreadyExists")
    fresh = kube.replace(f"{maps}/a", made | {"data": {"k": "2"}})
    with pytest.raises(Conflict) as stale:
        kube.replace(f"{maps}/a", made | {"data": {"k": "3"}})  # made's resourceVersion is older
    assert stale.value.reason == "Conflict"
    assert kube.get(f"{maps}/a")["data"] == {"k": "2"}
    with pytest.raises(Conflict):
        kube.delete(f"{maps}/a", preconditions={"uid": "not-its-uid"})
    kube.delete(f"{maps}/a", preconditions={"uid": fresh["metadata"]["uid"]})
    with pytest.raises(NotFound) as missing:
        kube.get(f"{maps}/a")
    assert (missing.value.code, missing.value.reason) == (404, "NotFound")
    assert 'configmaps "a" not found' in missing.value.message


def test_an_invalid_object_is_an_api_error_with_the_servers_reason(plane, namespace):
    with pytest.raises(ApiError) as caught:
        plane.kube.create(resource_path("v1", "pods", namespace=namespace), pod("Bad_Name"))
    assert (caught.value.code, caught.value.reason) == (422, "Invalid")
    assert "metadata.name" in caught.value.message
    assert caught.value.details["name"] == "Bad_Name"


def test_merge_strategic_and_json_patches(plane, namespace):
    kube = plane.kube
    path = resource_path("v1", "pods", namespace=namespace, name="p")
    kube.create(resource_path("v1", "pods", namespace=namespace), pod("p", "a", "b"))
    kube.patch(path, {"metadata": {"labels": {"x": "1"}}})
    images = kube.patch(path, {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}, kind="strategic")
    assert [(c["name"], c["image"]) for c in images["spec"]["containers"]] == [("a", "a:1"), ("b", "b:2")]
    patched = kube.patch(path, [{"op": "add", "path": "/metadata/labels/y", "value": "2"}], kind="json")
    assert patched["metadata"]["labels"] == {"x": "1", "y": "2"}
    merged = kube.patch(path, {"metadata": {"labels": {"x": None}}})
    assert merged["metadata"]["labels"] == {"y": "2"}


def test_server_side_apply_owns_fields_and_force_takes_them_over(plane, namespace):
    kube = plane.kube
    path = resource_path("v1", "configmaps", namespace=namespace, name="applied")
    made = kube.apply(path, configmap("applied", {"k": "1"}), field_manager="first")
    assert made["data"] == {"k": "1"}
    assert kube.apply(path, configmap("applied", {"k": "1", "j": "2"}), field_manager="first")["data"] == {
        "k": "1",
        "j": "2",
    }
    with pytest.raises(Conflict) as caught:
        kube.apply(path, configmap("applied", {"k": "other"}), field_manager="second")
    assert "first" in caught.value.message
    taken = kube.apply(path, configmap("applied", {"k": "other"}), field_manager="second", force=True)
    assert taken["data"]["k"] == "other"


def test_binding_and_status_subresources(plane, namespace):
    kube = plane.kube
    pods = resource_path("v1", "pods", namespace=namespace)
    kube.create(pods, pod("p"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"kind": "Node", "name": "n"},
    }
    kube.create(f"{pods}/p/binding", binding)
    bound = kube.get(f"{pods}/p")
    assert bound["spec"]["nodeName"] == "n"
    assert {"type": "PodScheduled", "status": "True"}.items() <= bound["status"]["conditions"][0].items()
    bound["status"]["phase"] = "Running"
    bound["spec"]["nodeName"] = "ignored-by-the-status-subresource"
    kube.replace(f"{pods}/p/status", bound)
    after = kube.get(f"{pods}/p")
    assert (after["status"]["phase"], after["spec"]["nodeName"]) == ("Running", "n")


def test_list_in_pages_and_delete_a_collection(plane, namespace):
    kube = plane.kube
    maps = resource_path("v1", "configmaps", namespace=namespace)
    for i in range(7):
        kube.create(maps, configmap(f"m{i}", labels={"set": "a" if i < 5 else "b"}))
    page = kube.list(maps, label_selector="set=a", limit=2)
    assert len(page["items"]) == 2 and page["metadata"]["continue"]
    rest = kube.list(maps, label_selector="set=a", limit=10, continue_token=page["metadata"]["continue"])
    assert len(rest["items"]) == 3
    items, version = kube.list_all(maps, label_selector="set", page_size=2)
    assert sorted(i["metadata"]["name"] for i in items) == [f"m{i}" for i in range(7)]
    assert int(version) > 0
    kube.delete_collection(maps, label_selector="set=a")
    left, _ = kube.list_all(maps, label_selector="set")
    assert sorted(i["metadata"]["name"] for i in left) == ["m5", "m6"]


def test_watch_from_a_list_version_sees_every_change_in_order(plane, namespace):
    kube = plane.kube
    maps = resource_path("v1", "configmaps", namespace=namespace)
    _, version = kube.list_all(maps)
    made = kube.create(maps, configmap("w", {"k": "1"}))
    kube.replace(f"{maps}/w", made | {"data": {"k": "2"}})
    kube.delete(f"{maps}/w")
    events = []
    watch = kube.watch(maps, resource_version=version, timeout_seconds=60)
    for kind, obj in watch:
        if kind != "BOOKMARK":
            events.append((kind, obj["metadata"]["name"], obj["data"]["k"]))
        if len(events) == 3:
            break
    watch.close()
    assert events == [("ADDED", "w", "1"), ("MODIFIED", "w", "2"), ("DELETED", "w", "2")]


def test_a_watch_that_times_out_sends_a_bookmark_first(plane, namespace):
    kube = plane.kube
    maps = resource_path("v1", "configmaps", namespace=namespace)
    _, version = kube.list_all(maps)
    events = list(kube.watch(maps, resource_version=version, timeout_seconds=15))
    assert events and {kind for kind, _ in events} == {"BOOKMARK"}  # nothing changed; one at least, 2 s before the end
    assert int(events[-1][1]["metadata"]["resourceVersion"]) >= int(version)


def test_a_compacted_version_is_gone_for_lists_and_watches(plane, namespace):
    # podtemplates are served from etcd itself (the kit turns their watch cache off), so compaction shows.
    kube = plane.kube
    templates = resource_path("v1", "podtemplates", namespace=namespace)
    body = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": pod("t")}
    old = kube.create(templates, body)["metadata"]["resourceVersion"]
    for version in ("2", "3"):  # etcd keeps the compaction's own revision: compact past old + 1
        kube.patch(f"{templates}/t", {"metadata": {"labels": {"v": version}}})
    plane.compact_etcd()
    with pytest.raises(Gone) as listed:
        kube.list(templates, resource_version=old, resource_version_match="Exact")
    assert listed.value.code == 410
    with pytest.raises(Gone) as watched:
        for _ in kube.watch(templates, resource_version=old, timeout_seconds=30):
            pass
    assert watched.value.code == 410 and watched.value.reason in ("Expired", "Gone")


def test_a_silent_watch_is_noticed_by_its_read_timeout(plane, namespace):
    quiet = resource_path("v1", "podtemplates", namespace=namespace)  # from etcd: not even bookmarks come
    _, version = plane.kube.list_all(quiet)
    with pytest.raises(Unreachable, match="no answer in time"):
        for _ in plane.kube.watch(quiet, resource_version=version, read_timeout=1.0):
            pass


def test_a_server_that_is_not_there_is_unreachable():
    kube = KubeClient(KubeConfig(server=f"https://127.0.0.1:{free_port()}", token="x"), timeout=5.0)
    with kube, pytest.raises(Unreachable, match="cannot connect"):
        kube.get("/version")


def test_wrong_token_is_401(plane):
    config = KubeConfig(server=plane.server, ca_pem=plane.config.ca_pem, token="wrong")
    with KubeClient(config) as kube, pytest.raises(ApiError) as caught:
        kube.get("/api/v1/namespaces")
    assert (caught.value.code, caught.value.reason) == (401, "Unauthorized")


def test_the_kits_kubeconfig_and_a_client_certificate_kubeconfig(plane, tmp_path):
    with KubeClient(load_kubeconfig(plane.kubeconfig)) as kube:
        assert kube.get("/version")["gitVersion"] == "v1.36.3"
        assert whoami(kube) == "caldera-admin"
    assert plane.pki is not None
    doc = yaml.safe_load(plane.kubeconfig.read_text())
    doc["users"][0]["user"] = {
        "client-certificate-data": base64.b64encode(plane.pki.client_cert.read_bytes()).decode(),
        "client-key": str(plane.pki.client_key),
    }
    (tmp_path / "certs").write_text(yaml.safe_dump(doc))
    with KubeClient(load_kubeconfig(tmp_path / "certs")) as kube:
        assert whoami(kube) == "caldera-admin-cert"


def test_in_cluster_reads_the_token_file_again_when_it_is_rotated(plane, tmp_path, monkeypatch):
    assert plane.pki is not None
    (tmp_path / "ca.crt").write_bytes(plane.pki.serving_cert.read_bytes())
    token = tmp_path / "token"
    token.write_text(plane.pki.admin_token)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(plane.port))
    with KubeClient(in_cluster(tmp_path)) as kube:
        assert whoami(kube) == "caldera-admin"
        rotated = tmp_path / "token.new"
        rotated.write_text(plane.pki.second_token + "\n")
        rotated.replace(token)  # as kubelet does: a new file renamed into place
        assert whoami(kube) == "caldera-admin-2"


def test_one_client_serves_several_threads(plane, namespace):
    kube = plane.kube
    maps = resource_path("v1", "configmaps", namespace=namespace)
    errors: list[BaseException] = []

    def make(start: int) -> None:
        try:
            for i in range(start, start + 10):
                kube.create(maps, configmap(f"c{i}"))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=make, args=(k * 10,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(kube.list_all(maps)[0]) >= 40
