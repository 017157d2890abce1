"""`caldera controller` on the real control plane: Volcano Jobs run to Completed on KWOK nodes.

One controller process for the module (the real command, against Volcano's own CRDs); each
test makes its own nodes (a label its pods select) and namespace.
"""

from __future__ import annotations

import pytest

from caldera.backends.kube.client import resource_path
from caldera.testing.waiting import wait_until

from .volcanojobs import JOBS, PODGROUPS, events_of, kubectl_create, pods_of, task, volcano_job, wait_phase

pytestmark = pytest.mark.kube


def test_a_volcano_job_runs_to_completed_with_volcanos_pods(plane, caldera, namespace, nodes):
    job = volcano_job("hello", task("worker", 2, nodes, seconds=6), task("ps", 1, nodes, seconds=6),
                      plugins={"svc": [], "env": []})  # fmt: skip
    kubectl_create(plane, namespace, job)
    running = wait_phase(plane, namespace, "hello", "Running")
    # The PodGroup lives while the job runs (Volcano deletes it with the job's pods at the end too).
    group_path = resource_path(*PODGROUPS, namespace=namespace, name=f"hello-{running['metadata']['uid']}")
    group = plane.kube.get(group_path)
    assert (
        group["spec"]["minMember"] == 3 and group["metadata"]["ownerReferences"][0]["uid"] == running["metadata"]["uid"]
    )
    # Its status follows the gang (written with the object: the CRD has no status subresource).
    wait_until(
        lambda: plane.kube.get(group_path).get("status", {}).get("phase") == "Running",
        60,
        "the PodGroup's status phase Running",
        interval=0.2,
    )
    assert plane.kube.get(group_path)["status"]["running"] == 3  # its pods, counted as Volcano's scheduler does
    done = wait_phase(plane, namespace, "hello", "Completed")
    uid = done["metadata"]["uid"]
    assert done["status"]["succeeded"] == 3
    pods = {p["metadata"]["name"]: p for p in pods_of(plane, namespace, "hello")}
    assert sorted(pods) == ["hello-ps-0", "hello-worker-0", "hello-worker-1"]
    for name, pod in pods.items():
        meta, spec = pod["metadata"], pod["spec"]
        assert pod["status"]["phase"] == "Succeeded"
        assert spec["schedulerName"] == "caldera"
        assert spec["nodeName"].startswith(f"{nodes}-")
        assert (spec["hostname"], spec["subdomain"]) == (name, "hello")
        assert meta["ownerReferences"][0]["uid"] == uid and meta["ownerReferences"][0]["controller"]
        assert meta["annotations"]["scheduling.k8s.io/group-name"] == f"hello-{uid}"
        assert meta["labels"]["volcano.sh/task-spec"] == name.split("-")[1]
        env = {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}
        assert env["VC_WORKER_HOSTS"] == "hello-worker-0.hello,hello-worker-1.hello"
        assert env["VC_TASK_INDEX"] == name.rsplit("-", 1)[1]
        mounts = {m["mountPath"] for m in spec["containers"][0]["volumeMounts"]}
        assert "/etc/volcano" in mounts
    service = plane.kube.get(resource_path("v1", "services", namespace=namespace, name="hello"))
    assert service["spec"]["clusterIP"] == "None"
    hosts = plane.kube.get(resource_path("v1", "configmaps", namespace=namespace, name="hello-svc"))["data"]
    assert hosts["worker.host"] == "hello-worker-0.hello\nhello-worker-1.hello\n"
    wait_until(
        lambda: [e for e in events_of(plane, namespace, "hello-worker-0") if e["reason"] == "Scheduled"],
        30,
        "the Scheduled event of hello-worker-0",
        interval=0.2,
    )
    scheduled = [e for e in events_of(plane, namespace, "hello-worker-0") if e["reason"] == "Scheduled"]
    assert (
        scheduled[0]["message"]
        == f"Successfully assigned {namespace}/hello-worker-0 to {pods['hello-worker-0']['spec']['nodeName']}"
    )


def test_a_job_the_controller_refuses_gets_a_condition_and_an_event_and_never_starts(plane, caldera, namespace, nodes):
    kubectl_create(plane, namespace, volcano_job("lost", task("worker", 1, nodes), queue="no-such-queue"))
    done = wait_phase(plane, namespace, "lost", "Failed", 60)
    assert done["status"]["state"]["reason"] == "Rejected"
    assert "no-such-queue" in done["status"]["state"]["message"]
    wait_until(
        lambda: any(e["reason"] == "Rejected" for e in events_of(plane, namespace, "lost")),
        30,
        "the Rejected event",
        interval=0.2,
    )
    assert pods_of(plane, namespace, "lost") == []


def test_pod_failed_restarts_the_job_until_max_retry(plane, caldera, namespace, nodes):
    job = volcano_job(
        "flaky",
        task("worker", 2, nodes, seconds=1, exit_code=3),
        policies=[{"event": "PodFailed", "action": "RestartJob"}],
        maxRetry=2,
    )
    kubectl_create(plane, namespace, job)
    done = wait_phase(plane, namespace, "flaky", "Failed", 180)
    assert done["status"]["retryCount"] == 2


def test_task_completed_completes_a_parameter_server_job(plane, caldera, namespace, nodes):
    job = volcano_job(
        "ps-job",
        task("ps", 1, nodes, seconds=None),  # runs until deleted
        task("worker", 2, nodes, seconds=2, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}]),
    )
    kubectl_create(plane, namespace, job)
    wait_phase(plane, namespace, "ps-job", "Completed", 120)
    wait_until(
        lambda: "ps-job-ps-0" not in {p["metadata"]["name"] for p in pods_of(plane, namespace, "ps-job")},
        60,
        "the parameter server to be deleted",
        interval=0.2,
    )


def test_scaling_an_elastic_job_rewrites_its_svc_host_lists(plane, caldera, namespace, nodes):
    worker = task("worker", 3, nodes, seconds=None, minAvailable=2)  # elastic: 2 to 3 workers
    kubectl_create(plane, namespace, volcano_job("elastic", worker, plugins={"svc": []}))
    wait_phase(plane, namespace, "elastic", "Running")
    config = resource_path("v1", "configmaps", namespace=namespace, name="elastic-svc")
    hosts = ["elastic-worker-0.elastic", "elastic-worker-1.elastic", "elastic-worker-2.elastic"]
    assert plane.kube.get(config)["data"]["worker.host"] == "".join(f"{h}\n" for h in hosts)
    job = resource_path(*JOBS, namespace=namespace, name="elastic")
    for replicas in (2, 3):
        plane.kube.patch(job, {"spec": {"tasks": [{**worker, "replicas": replicas}]}})
        wait_until(
            lambda n=replicas: plane.kube.get(config)["data"]["worker.host"] == "".join(f"{h}\n" for h in hosts[:n]),
            60,
            f"the svc ConfigMap to list {replicas} workers",
            interval=0.2,
        )
        wait_until(
            lambda n=replicas: (
                len(
                    [
                        p
                        for p in pods_of(plane, namespace, "elastic")
                        if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
                    ]
                )
                == n
            ),
            60,
            f"{replicas} running workers",
            interval=0.2,
        )
