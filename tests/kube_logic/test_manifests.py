"""The objects the controller writes for a Volcano Job, in Volcano's shapes (pure functions)."""

from __future__ import annotations

from caldera.backends.kube.manifests import binding, files_config_map, headless_service, pod_manifest
from caldera.controller import make_pod
from caldera.core import objects as o
from caldera.core.jobmanifest import parse_job

TEMPLATE = {
    "metadata": {"labels": {"app": "x"}, "annotations": {"a": "b"}},
    "spec": {
        "restartPolicy": "Never",
        "volumes": [{"name": "data", "emptyDir": {}}],
        "containers": [
            {
                "name": "main",
                "image": "trainer:1",
                "imagePullPolicy": "IfNotPresent",  # a field caldera does not model: kept as written
                "env": [{"name": "VC_WORKER_NUM", "value": "mine"}, {"name": "OWN", "value": "1"}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }
        ],
    },
}


def a_pod() -> o.Pod:
    job = parse_job(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "j", "namespace": "team"},
            "spec": {"tasks": [{"name": "worker", "replicas": 2, "template": TEMPLATE}], "priorityClassName": "high"},
        }
    )
    job.metadata.uid = "uid-1"
    task = job.spec.tasks[0]
    return make_pod(job, task, 1, 100, 0.0)


def test_a_pod_keeps_its_template_and_gets_volcanos_names_owner_scheduler_and_the_plugins_environment():
    pod = pod_manifest(
        TEMPLATE,
        a_pod(),
        job_uid="uid-1",
        scheduler_name="caldera",
        node="n1",
        env={"VC_WORKER_NUM": "2", "VC_TASK_INDEX": "1"},
        files={"etc/volcano/worker.host": "j-worker-0.j\n", "etc/mpi/hostfile": "h slots=1\n"},
        subdomain="j",
    )
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["name"] == "j-worker-1" and meta["namespace"] == "team"
    assert meta["labels"]["volcano.sh/job-name"] == "j" and meta["labels"]["app"] == "x"
    assert meta["annotations"]["scheduling.k8s.io/group-name"] == "j-uid-1" and meta["annotations"]["a"] == "b"
    assert meta["ownerReferences"] == [
        {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": "uid-1",
         "controller": True, "blockOwnerDeletion": True}
    ]  # fmt: skip
    assert (spec["schedulerName"], spec["nodeName"], spec["priorityClassName"]) == ("caldera", "n1", "high")
    assert (spec["hostname"], spec["subdomain"]) == ("j-worker-1", "j")
    container = spec["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"
    env = [(e["name"], e["value"]) for e in container["env"]]
    assert env == [("OWN", "1"), ("VC_TASK_INDEX", "1"), ("VC_WORKER_NUM", "2")]  # the plugin's value wins
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert set(mounts) == {"/data", "/etc/mpi", "/etc/volcano"}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes[mounts["/etc/volcano"]]["configMap"] == {
        "name": "j-svc",
        "items": [{"key": "worker.host", "path": "worker.host"}],
    }
    assert volumes[mounts["/etc/mpi"]]["configMap"]["items"] == [{"key": "etc.mpi.hostfile", "path": "hostfile"}]
    assert TEMPLATE["spec"]["containers"][0]["env"][0]["value"] == "mine"  # the template is not changed


def test_an_unplaced_pod_has_no_node_and_a_binding_names_it():
    pod = pod_manifest(TEMPLATE, a_pod(), job_uid="uid-1", scheduler_name="caldera")
    assert "nodeName" not in pod["spec"] and "hostname" not in pod["spec"]
    assert binding("j-worker-1", "team", "n2")["target"] == {"apiVersion": "v1", "kind": "Node", "name": "n2"}


def test_the_svc_plugins_service_and_config_map():
    service = headless_service("j", "team", "uid-1", [2222])
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"]
    assert service["spec"]["selector"] == {"volcano.sh/job-name": "j", "volcano.sh/job-namespace": "team"}
    data = files_config_map("j", "team", "uid-1", {"etc/volcano/VC_WORKER_HOSTS": "a,b"})["data"]
    assert data == {"VC_WORKER_HOSTS": "a,b"}
