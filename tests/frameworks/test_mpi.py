"""`mpi`: MPI_HOST and an OpenMPI hostfile with one line and the GPU slots per worker, on the launcher."""

from __future__ import annotations

import pytest

from caldera.controller.frameworks import PluginError
from caldera.controller.frameworks.mpi import slots
from caldera.core.addresses import DnsAddresses
from caldera.core.objects import Container, Job, PodSpec, PodTemplate, TaskSpec
from caldera.core.resources import GPU

from .builders import PortPool, make_job, make_task, render_pod


def horovod_job() -> Job:
    return make_job(
        name="hvd",
        tasks=[make_task(name="master", replicas=1), make_task(name="worker", replicas=2, gpus=2)],
        plugins={"mpi": ["--master=master", "--worker=worker", "--port=22"], "ssh": [], "svc": []},
    )


def test_launcher_on_kubernetes() -> None:
    patch = render_pod(horovod_job(), "master", 0, DnsAddresses("hvd"))
    assert patch.env["MPI_HOST"] == "hvd-worker-0.hvd,hvd-worker-1.hvd"
    assert patch.env["OMPI_MCA_orte_default_hostfile"] == "etc/mpi/hostfile"
    assert patch.env["OMPI_MCA_orte_keep_fqdn_hostnames"] == "true"
    assert patch.files["etc/mpi/hostfile"] == "hvd-worker-0.hvd slots=2\nhvd-worker-1.hvd slots=2\n"


def test_launcher_on_the_embedded_cluster_with_an_absolute_hostfile() -> None:
    job = horovod_job()
    patch = render_pod(job, "master", 0, PortPool().addresses(job), pod_dir="/var/caldera/pods/default/hvd-master-0")
    assert patch.env["MPI_HOST"] == "127.0.0.1,127.0.0.1"
    assert patch.env["OMPI_MCA_orte_default_hostfile"] == "/var/caldera/pods/default/hvd-master-0/etc/mpi/hostfile"
    # One line per worker even though the hosts are equal: OpenMPI adds up their slots.
    assert patch.files["etc/mpi/hostfile"] == "127.0.0.1 slots=2\n127.0.0.1 slots=2\n"


def test_workers_get_no_mpi_variables() -> None:
    patch = render_pod(horovod_job(), "worker", 1, DnsAddresses("hvd"))
    assert not {"MPI_HOST", "OMPI_MCA_orte_default_hostfile"} & patch.env.keys()
    assert "etc/mpi/hostfile" not in patch.files


def _task(requests: dict[str, float], limits: dict[str, float]) -> TaskSpec:
    container = Container(name="w", requests=requests, limits=limits)
    return TaskSpec(name="worker", replicas=1, template=PodTemplate(spec=PodSpec(containers=(container,))))


@pytest.mark.parametrize(
    ("requests", "limits", "expected"),
    [
        pytest.param({}, {}, 1, id="no-gpu"),
        pytest.param({GPU: 4000.0}, {GPU: 4000.0}, 4, id="four-gpus"),
        pytest.param({}, {GPU: 2000.0}, 2, id="limits-only"),
        pytest.param({GPU: 500.0}, {}, 1, id="half-a-gpu"),
    ],
)
def test_slots(requests: dict[str, float], limits: dict[str, float], expected: int) -> None:
    assert slots(_task(requests, limits)) == expected


def test_missing_worker_task_is_refused() -> None:
    job = make_job(name="j", tasks=[make_task(name="master")], plugins={"mpi": []})
    with pytest.raises(PluginError, match='mpi plugin: job "j" has no worker task "worker"'):
        render_pod(job, "master", 0, DnsAddresses("j"))
