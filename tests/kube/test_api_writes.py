"""What a job costs the API server: the writes `caldera controller` sends for it, counted by its client.

The controller runs in this process (its KubeClient counts every request by verb and resource) against
the real control plane, on Volcano's CRDs. Only the writes after it synced and went idle are counted.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from caldera.backends.kube.client import KubeClient, resource_path
from caldera.backends.kube.kubeconfig import load_kubeconfig
from caldera.system.kubernetes import KubeController, Settings
from caldera.testing.kube import install_volcano_crds
from caldera.testing.waiting import wait_until

from .volcanojobs import JOBS, pods_of, task, volcano_job

pytestmark = pytest.mark.kube

SINGLE_POD_JOBS = 20


def settled_namespaces(plane) -> bool:
    """No namespace is being deleted: the pods earlier tests left in theirs (some naming caldera's schedulerName)
    are gone, so the controller started here has only this test's work to count."""
    listed = plane.kube.list_all("/api/v1/namespaces")[0]
    return not any((ns.get("status") or {}).get("phase") == "Terminating" for ns in listed)


@pytest.fixture
def controller(plane):
    install_volcano_crds(plane)
    wait_until(lambda: settled_namespaces(plane), 300, "the namespaces of earlier tests deleted", interval=0.5)
    kube = KubeClient(load_kubeconfig(str(plane.kubeconfig)))
    # Short watches, so that its informers end soon after it stops (before their connections are closed).
    controller = KubeController(kube, Settings(leader_election=False, identity="api-writes", watch_timeout=3))
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop,), name="controller under test", daemon=True)
    thread.start()
    wait_until(controller.synced.is_set, 120, "the controller to sync", interval=0.1)
    yield controller
    stop.set()
    thread.join(60)
    for informer in controller._informers:
        informer.join(60)
    kube.close()


def idle(controller: KubeController) -> bool:
    return controller.status.writing == 0 and controller.recorder.idle and controller._inbox.empty()


def writes(before: Counter[str], after: Counter[str]) -> Counter[str]:
    return Counter({k: v for k, v in (after - before).items() if not k.startswith("GET")})


def test_single_pod_jobs_cost_few_writes_each(plane, namespace, nodes, controller):
    wait_until(lambda: idle(controller), 60, "the controller to be idle", interval=0.1)
    before = Counter(controller.kube.requests)
    path = resource_path(*JOBS, namespace=namespace)
    for i in range(SINGLE_POD_JOBS):
        plane.kube.create(path, volcano_job(f"one{i}", task("w", 1, nodes, seconds=None)))

    def all_running() -> bool:
        jobs = plane.kube.list_all(path)[0]
        return len(jobs) == SINGLE_POD_JOBS and all(
            ((j.get("status") or {}).get("state") or {}).get("phase") == "Running" for j in jobs
        )

    wait_until(all_running, 120, "every job to be Running", interval=0.2)
    wait_until(lambda: idle(controller), 60, "the controller to be idle", interval=0.1)
    assert all(p["spec"].get("nodeName") for i in range(SINGLE_POD_JOBS) for p in pods_of(plane, namespace, f"one{i}"))
    sent = writes(before, controller.kube.requests)
    n = SINGLE_POD_JOBS
    assert sent["POST pods/binding"] == 0, sent  # created bound: one request per pod
    assert sent["POST pods"] == n and sent["POST podgroups"] == n, sent
    assert sent["PATCH podgroups"] == 0, sent  # created with the phase it had when written: Running
    assert sent["PATCH jobs/status"] == n, sent  # Pending and Running in one turn: one write
    assert sent["POST events"] == 2 * n, sent  # Scheduled, and the job's phases folded into one
    assert sent.total() - sent["PATCH queues/status"] == 5 * n, sent
