"""`env` and `svc`: a pod's index, and every task's hosts as Volcano's variables and files."""

from __future__ import annotations

import pytest

from caldera.core.addresses import Addresses, DnsAddresses

from .builders import PortPool, make_job, make_task, render_pod


@pytest.mark.parametrize("index", [0, 2])
def test_env_gives_the_index_under_both_names(index: int) -> None:
    job = make_job(name="j", tasks=[make_task(name="worker", replicas=3)], plugins={"env": []})
    patch = render_pod(job, "worker", index, DnsAddresses("j"))
    assert patch.env == {"VK_TASK_INDEX": str(index), "VC_TASK_INDEX": str(index)}
    assert patch.files == {}


def test_svc_on_kubernetes_names_every_pod_of_every_task() -> None:
    job = make_job(
        name="tf",
        tasks=[make_task(name="ps-server", replicas=2), make_task(name="worker", replicas=3, ports=[8080])],
        plugins={"svc": []},
    )
    patch = render_pod(job, "worker", 1, DnsAddresses("tf"))
    assert patch.env == {
        "VC_PS_SERVER_HOSTS": "tf-ps-server-0.tf,tf-ps-server-1.tf",
        "VC_PS_SERVER_NUM": "2",
        "VC_WORKER_HOSTS": "tf-worker-0.tf,tf-worker-1.tf,tf-worker-2.tf",
        "VC_WORKER_NUM": "3",
        "VC_WORKER_ADDRS": "tf-worker-0.tf:8080,tf-worker-1.tf:8080,tf-worker-2.tf:8080",
    }
    assert patch.files == {
        "etc/volcano/ps-server.host": "tf-ps-server-0.tf\ntf-ps-server-1.tf\n",
        "etc/volcano/VC_PS_SERVER_HOSTS": "tf-ps-server-0.tf,tf-ps-server-1.tf",
        "etc/volcano/VC_PS_SERVER_NUM": "2",
        "etc/volcano/worker.host": "tf-worker-0.tf\ntf-worker-1.tf\ntf-worker-2.tf\n",
        "etc/volcano/VC_WORKER_HOSTS": "tf-worker-0.tf,tf-worker-1.tf,tf-worker-2.tf",
        "etc/volcano/VC_WORKER_NUM": "3",
    }


def test_svc_on_the_embedded_cluster_tells_pods_apart_by_port() -> None:
    job = make_job(name="tf", tasks=[make_task(name="worker", replicas=2, ports=[8080])], plugins={"svc": []})
    addresses: Addresses = PortPool(first=41000).addresses(job)
    patch = render_pod(job, "worker", 0, addresses)
    assert patch.env["VC_WORKER_HOSTS"] == "127.0.0.1,127.0.0.1"
    assert patch.env["VC_WORKER_ADDRS"] == "127.0.0.1:41000,127.0.0.1:41001"
    assert patch.files["etc/volcano/worker.host"] == "127.0.0.1\n127.0.0.1\n"


def test_svc_without_inject_hosts_env_writes_only_files() -> None:
    job = make_job(
        name="tf", tasks=[make_task(name="worker", replicas=2)], plugins={"svc": ["--inject-hosts-env=false"]}
    )
    patch = render_pod(job, "worker", 0, DnsAddresses("tf"))
    assert patch.env == {}
    assert patch.files["etc/volcano/worker.host"] == "tf-worker-0.tf\ntf-worker-1.tf\n"


def test_svc_gives_no_addrs_for_a_task_without_ports() -> None:
    job = make_job(name="tf", tasks=[make_task(name="worker", replicas=2)], plugins={"svc": []})
    assert "VC_WORKER_ADDRS" not in render_pod(job, "worker", 0, DnsAddresses("tf")).env
