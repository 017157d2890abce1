"""The daemon's summaries built from Kubernetes objects (pure functions: no cluster needed)."""

from __future__ import annotations

from caldera.client.kubeviews import event_summary, job_summary, min_available, node_summaries, pod_summary, waiting


def pod(name: str, *, task: str = "worker", index: int = 0, node: str = "", phase: str = "Running", **extra) -> dict:
    labels = {"volcano.sh/job-name": "j", "volcano.sh/task-spec": task, "volcano.sh/task-index": str(index)}
    spec = {"nodeName": node, "containers": [{"name": "c", "resources": extra.pop("resources", {})}], **extra}
    return {"metadata": {"name": name, "labels": labels}, "spec": spec, "status": {"phase": phase, "podIP": "10.0.0.1"}}


def test_job_summary_reads_volcanos_status_and_orders_pods_by_task_then_index():
    job = {
        "metadata": {"name": "j", "namespace": "ns", "labels": {"volcano.sh/job-type": "TFJob"}},
        "spec": {"tasks": [{"name": "ps", "replicas": 1}, {"name": "worker", "replicas": 2, "minAvailable": 1}]},
        "status": {
            "state": {"phase": "Running", "reason": "", "message": ""},
            "retryCount": 2,
            "controlledResources": {"caldera.dev/start-time": "2026-01-01T00:00:00Z"},
        },
    }
    pods = [pod("j-worker-1", index=1), pod("j-worker-0"), pod("j-ps-0", task="ps")]
    s = job_summary(job, pods, None)
    assert [p["name"] for p in s["pods"]] == ["j-ps-0", "j-worker-0", "j-worker-1"]
    assert (s["phase"], s["retryCount"], s["minAvailable"], s["queue"], s["type"]) == (
        "Running",
        2,
        2,
        "default",
        "TFJob",
    )
    assert (s["waiting"], s["startTime"], s["completionTime"]) == (None, "2026-01-01T00:00:00Z", None)
    fresh = job_summary({"metadata": {"name": "n"}, "spec": {"tasks": [{"name": "w", "replicas": 3}]}}, [], None)
    assert (fresh["phase"], fresh["namespace"], fresh["minAvailable"]) == ("Pending", "default", 3)
    assert min_available({"spec": {"minAvailable": 5, "tasks": []}}) == 5


def test_a_pod_s_exit_code_restarts_address_and_terminating():
    p = pod("j-worker-0", hostname="j-worker-0", subdomain="j")
    p["status"]["containerStatuses"] = [
        {"restartCount": 2, "state": {"terminated": {"exitCode": 3}}},
        {"restartCount": 1, "state": {"running": {}}},
    ]
    s = pod_summary(p)
    assert (s["exitCode"], s["restarts"], s["address"]) == (3, 3, "j-worker-0.j")
    p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert pod_summary(p)["phase"] == "Terminating"
    p["status"]["phase"] = "Succeeded"
    assert pod_summary(p)["phase"] == "Succeeded"
    assert pod_summary(pod("x"))["address"] == "10.0.0.1"


def test_waiting_comes_from_the_podgroup_s_unschedulable_condition():
    group = {"status": {"phase": "Pending", "conditions": [
        {"type": "Unschedulable", "status": "True", "message": "3/4 tasks in gang unschedulable"}]}}  # fmt: skip
    assert waiting(group) == {"reason": "Unschedulable", "message": "3/4 tasks in gang unschedulable", "never": False}
    assert waiting({**group, "status": {**group["status"], "phase": "Running"}}) is None
    assert waiting(None) is None


def test_node_summaries_count_bound_pods_that_have_not_ended():
    node = {
        "metadata": {"name": "n1", "labels": {"a": "b"}},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4", "pods": "110"}},
    }
    gpu = {"limits": {"nvidia.com/gpu": "2"}, "requests": {"cpu": "500m", "memory": "1Gi"}}
    pods = [
        pod("a", node="n1", resources=gpu),
        pod("b", node="n1", resources=gpu, phase="Succeeded"),  # ended: holds nothing
        pod("c", node="", resources=gpu),  # not bound
        pod("d", node="n2", resources=gpu),  # another node
    ]
    (s,) = node_summaries([node], pods)
    assert s["allocated"] == {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "2"}
    assert (s["gpus"], s["gpusUsed"], s["pods"], s["virtualGpus"]) == (4, 2, 1, False)
    assert s["taints"] == [{"key": "k", "value": "", "effect": "NoSchedule"}]


def test_event_summary():
    e = {
        "metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
        "involvedObject": {"kind": "Pod", "name": "j-w-0"},
        "reason": "Scheduled",
        "message": "bound",
        "source": {"host": "n1"},
        "lastTimestamp": "2026-01-01T00:00:05Z",
    }
    assert event_summary(e) == {"time": "2026-01-01T00:00:05Z", "kind": "Pod", "object": "j-w-0", "node": "n1",
                                "reason": "Scheduled", "message": "bound"}  # fmt: skip
