"""Every CLI verb against a real Kubernetes control plane (`caldera --kubeconfig PATH`), with the output and exit
codes of the embedded cluster. No controller runs here: jobs stay Pending unless a test writes their status;
pods are created by the tests, bound to KWOK's fake nodes, where they run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from caldera.backends.kube.client import JSON, resource_path
from caldera.cli.main import cli
from caldera.core.errors import CalderaError
from caldera.core.objects import JOB_API
from caldera.testing.clirun import caldera
from caldera.testing.kube import FakeNode, add_nodes
from caldera.testing.waiting import wait_until

pytestmark = pytest.mark.kube

FIXTURES = Path(__file__).parent.parent / "fixtures"
COMMANDS = "bus.volcano.sh/v1alpha1"


@pytest.fixture
def run(plane):
    def invoke(*args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(
            cli, ["--kubeconfig", str(plane.kubeconfig), *args], input=input, env={"COLUMNS": "200"}
        )

    return invoke


@pytest.fixture(scope="module")
def nodes(plane) -> list[str]:
    names = [f"cli-gpu-{i}" for i in range(2)]
    add_nodes(plane, [FakeNode(n, cpu="8", memory="32Gi", gpus=4, labels={"test": "cli"}) for n in names])
    return names


def job_manifest(name: str, namespace: str, *, workers: int = 2, gpus: int = 1, **spec: object) -> JSON:
    container = {"name": "main", "image": "trainer:1", "command": ["python", "train.py"],
                 "resources": {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"cpu": "1", "memory": "2Gi"}}}  # fmt: skip
    return {
        "apiVersion": JOB_API,
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "minAvailable": workers,
            "tasks": [{"name": "worker", "replicas": workers, "template": {"spec": {"containers": [container]}}}],
            **spec,
        },
    }


def job_pod(job: JSON, index: int, node: str) -> JSON:
    """A pod of the stored `job` as the controller makes them (Volcano's name, labels and owner), created bound to `node`."""
    meta = job["metadata"]
    template = job["spec"]["tasks"][0]["template"]["spec"]
    labels = {
        "volcano.sh/job-name": meta["name"],
        "volcano.sh/task-spec": "worker",
        "volcano.sh/task-index": str(index),
    }
    owner = {"apiVersion": JOB_API, "kind": "Job", "name": meta["name"], "uid": meta["uid"], "controller": True}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{meta['name']}-worker-{index}", "labels": labels, "ownerReferences": [owner]},
        "spec": {**template, "nodeName": node, "restartPolicy": "Never"},
    }


def running_pods(plane, job: JSON, nodes: list[str]) -> None:
    namespace = job["metadata"]["namespace"]
    stored = plane.kube.get(resource_path(JOB_API, "jobs", namespace=namespace, name=job["metadata"]["name"]))
    pods = resource_path("v1", "pods", namespace=namespace)
    for i in range(job["spec"]["tasks"][0]["replicas"]):
        plane.kube.create(pods, job_pod(stored, i, nodes[i % len(nodes)]))

    def all_running() -> bool:
        found = plane.kube.list(pods, label_selector=f"volcano.sh/job-name={job['metadata']['name']}")["items"]
        return bool(found) and all(p.get("status", {}).get("phase") == "Running" for p in found)

    wait_until(all_running, timeout=60, what="KWOK to run the job's pods")


def write(tmp_path: Path, doc: JSON) -> str:
    path = tmp_path / f"{doc['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_apply_list_get_describe_delete(plane, namespace, nodes, run, tmp_path):
    job = job_manifest("train", namespace)
    done = run("apply", "-f", write(tmp_path, job))
    assert done.exit_code == 0, done.output
    assert done.stdout == "job.batch.volcano.sh/train created\n"
    again = run("apply", "-f", write(tmp_path, job))
    assert again.exit_code == 2 and f"job {namespace}/train already exists" in again.stderr

    listed = run("list", "-n", namespace)
    assert listed.exit_code == 0
    header, row = listed.stdout.splitlines()
    assert header.split() == [
        "NAME",
        "TYPE",
        "QUEUE",
        "PHASE",
        "RUNNING",
        "RETRIES",
        "MIN",
        "AGE",
        "DURATION",
        "REASON",
    ]
    assert row.split()[:7] == ["train", "-", "default", "Pending", "0/0", "0", "2"]

    running_pods(plane, job, nodes)
    got = run("get", "train", "-n", namespace)
    assert got.exit_code == 0, got.output
    assert [line.split() for line in got.stdout.splitlines() if line.startswith("Phase:")] == [["Phase:", "Pending"]]
    pods = [line.split() for line in got.stdout.splitlines() if line.startswith(("0 ", "1 "))]
    assert [(p[1], p[2], p[3]) for p in pods] == [
        ("train-worker-0", "worker", "Running"),
        ("train-worker-1", "worker", "Running"),
    ]
    assert {p[4] for p in pods} == set(nodes)
    summary = json.loads(run("get", "train", "-n", namespace, "-o", "json").stdout)
    assert summary["minAvailable"] == 2 and [p["index"] for p in summary["pods"]] == [0, 1]
    assert run("list", "-n", namespace, "-o", "name").stdout == "job.batch.volcano.sh/train\n"

    events = resource_path("v1", "events", namespace=namespace)
    plane.kube.create(events, {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "train.1"},
        "involvedObject": {"kind": "Pod", "name": "train-worker-0", "namespace": namespace},
        "reason": "Scheduled", "message": "bound to cli-gpu-0", "type": "Normal", "source": {"component": "caldera"},
    })  # fmt: skip
    described = run("describe", "train", "-n", namespace)
    assert described.exit_code == 0, described.output
    assert "Spec:" in described.stdout and "replicas: 2" in described.stdout
    assert "Scheduled" in described.stdout and "bound to cli-gpu-0" in described.stdout

    deleted = run("delete", "train", "-n", namespace)
    assert deleted.exit_code == 0 and deleted.stdout == "job.batch.volcano.sh/train deleted\n"
    missing = run("get", "train", "-n", namespace)
    assert missing.exit_code == 2 and missing.stderr == f"caldera: error: job {namespace}/train not found\n"
    assert run("delete", "train", "-n", namespace).exit_code == 2


def test_an_invalid_job_is_refused_naming_the_field(plane, namespace, run, tmp_path):
    bad = job_manifest("bad", namespace, minAvailable=5)
    done = run("apply", "-f", write(tmp_path, bad))
    assert done.exit_code == 2
    assert "spec.minAvailable" in done.stderr and "Traceback" not in done.output
    no_queue = job_manifest("lost", namespace, queue="nowhere")
    done = run("apply", "-f", write(tmp_path, no_queue))
    assert done.exit_code == 2 and 'queue "nowhere" does not exist' in done.stderr
    no_image = job_manifest("bare", namespace)
    del no_image["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["image"]
    done = run("apply", "-f", write(tmp_path, no_image))
    assert done.exit_code == 2 and "containers[0].image" in done.stderr and "Kubernetes" in done.stderr
    # What the CLI cannot know the API server checks: a job sent straight, past caldera's checks, is refused too.
    assert plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(bad)).returncode != 0
    assert run("list", "-n", namespace).stderr == f"No jobs found in namespace {namespace}.\n"


def test_submit_and_volcano_examples(plane, namespace, run, tmp_path):
    done = run("submit", "pytorch", "--name", "ddp", "-n", namespace, "--workers", "2", "--image", "torch:2",
               "--", "python", "train.py")  # fmt: skip
    assert done.exit_code == 0, done.output
    stored = plane.kube.get(resource_path(JOB_API, "jobs", namespace=namespace, name="ddp"))
    assert [t["name"] for t in stored["spec"]["tasks"]] == ["master", "worker"]
    assert stored["metadata"]["labels"]["volcano.sh/job-type"] == "PyTorchJob"
    assert run("list", "-n", namespace).stdout.splitlines()[1].split()[:2] == ["ddp", "PyTorchJob"]
    for example in ("volcano/mpi-example.yaml", "volcano/tf-dist-mnist-example.yaml", "ctr-volcano.yaml"):
        applied = run("apply", "-n", namespace, "-f", str(FIXTURES / example))
        assert applied.exit_code == 0, applied.output
    tfjob = run("apply", "-n", namespace, "-f", str(FIXTURES / "kubeflow-tfjob-seed.yaml"))
    assert tfjob.exit_code == 0 and tfjob.stdout == "tfjob.kubeflow.org/mnist-train created\n", tfjob.output
    rows = {line.split()[0]: line.split()[1] for line in run("list", "-n", namespace).stdout.splitlines()[1:]}
    assert rows == {"ddp": "PyTorchJob", "lm-mpi-job": "-", "tensorflow-dist-mnist": "-", "ctr-volcano": "-",
                    "mnist-train": "TFJob"}  # fmt: skip
    assert run("get", "tfjob/mnist-train", "-n", namespace).exit_code == 0


def test_logs_of_a_kwok_pod_say_there_are_none(plane, namespace, nodes, run, tmp_path):
    job = job_manifest("quiet", namespace, workers=1)
    assert run("apply", "-f", write(tmp_path, job)).exit_code == 0
    pending = run("logs", "quiet", "-n", namespace)
    assert pending.exit_code == 2 and "has no pods yet" in pending.stderr
    running_pods(plane, job, nodes)
    for args in ((), ("-f",), ("-t", "5"), ("-i", "worker-0")):
        done = run("logs", "quiet", "-n", namespace, *args)
        assert done.exit_code == 2, (args, done.output)
        assert "cannot read the log of pod" in done.stderr and "KWOK fake node" in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.output


def test_top_node_and_top_job(plane, namespace, run, tmp_path):
    nodes = ["top-gpu-0", "top-gpu-1"]  # its own: what other tests' pods hold does not count here
    add_nodes(plane, [FakeNode(n, cpu="8", memory="32Gi", gpus=4) for n in nodes])
    job = job_manifest("gpus", namespace, workers=2, gpus=2)
    assert run("apply", "-f", write(tmp_path, job)).exit_code == 0
    running_pods(plane, job, nodes)
    top = run("top", "node")
    assert top.exit_code == 0, top.output
    rows = {line.split()[0]: line.split() for line in top.stdout.splitlines()[1:] if line.startswith("top-gpu-")}
    assert set(rows) == set(nodes)
    # NAME, CPU "1/8 (12%)", MEMORY "2Gi/32Gi (6%)", GPU, PODS: each node holds one pod of 2 GPUs.
    assert all(r[1:] == ["1/8", "(12%)", "2Gi/32Gi", "(6%)", "2/4", "1"] for r in rows.values()), rows
    nodes_json = json.loads(run("top", "node", "-o", "json").stdout)["items"]
    mine = {n["name"]: n for n in nodes_json if n["name"] in nodes}
    assert {n["allocated"]["nvidia.com/gpu"] for n in mine.values()} == {"2"}
    assert {n["allocated"]["cpu"] for n in mine.values()} == {"1"}
    jobs = run("top", "job", "-n", namespace)
    assert jobs.exit_code == 0, jobs.output
    row = jobs.stdout.splitlines()[1].split()
    assert row[:5] == ["gpus", "Pending", "2/2", "4", "4"]
    assert "Total allocated/requested GPUs of jobs: 4/4" in jobs.stdout


def test_suspend_and_resume_send_volcano_commands(plane, namespace, run, tmp_path):
    assert run("apply", "-f", write(tmp_path, job_manifest("pause", namespace))).exit_code == 0
    job = plane.kube.get(resource_path(JOB_API, "jobs", namespace=namespace, name="pause"))
    assert run("suspend", "pause", "-n", namespace).stdout == "job.batch.volcano.sh/pause suspended\n"
    assert run("resume", "pause", "-n", namespace).stdout == "job.batch.volcano.sh/pause resumed\n"
    commands = plane.kube.list(resource_path(COMMANDS, "commands", namespace=namespace))["items"]
    ref = {"apiVersion": JOB_API, "kind": "Job", "name": "pause", "uid": job["metadata"]["uid"],
           "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    actions = sorted((c["action"], c["metadata"]["name"].rsplit("-", 1)[0]) for c in commands)
    assert actions == [("AbortJob", "pause-abortjob"), ("ResumeJob", "pause-resumejob")]
    assert all(c["target"] == ref and c["metadata"]["ownerReferences"] == [ref] for c in commands)
    missing = run("suspend", "ghost", "-n", namespace)
    assert missing.exit_code == 2 and missing.stderr == f"caldera: error: job {namespace}/ghost not found\n"


def test_scale_an_elastic_job(plane, namespace, run, tmp_path):
    job = job_manifest("elastic", namespace, workers=4, minAvailable=2)
    job["spec"]["tasks"][0]["minAvailable"] = 2
    assert run("apply", "-f", write(tmp_path, job)).exit_code == 0
    stored = plane.kube.get(resource_path(JOB_API, "jobs", namespace=namespace, name="elastic"))
    assert stored["metadata"]["annotations"]["caldera.dev/elastic-max-worker"] == "4"
    done = run("scale", "elastic", "-n", namespace, "--replicas", "3")
    assert done.exit_code == 0 and done.stdout == "job.batch.volcano.sh/elastic scaled\n", done.output
    stored = plane.kube.get(resource_path(JOB_API, "jobs", namespace=namespace, name="elastic"))
    assert stored["spec"]["tasks"][0]["replicas"] == 3
    out_of_range = run("scale", "elastic", "-n", namespace, "--replicas", "5")
    assert out_of_range.exit_code == 2 and "outside task worker's range 2:4" in out_of_range.stderr
    assert run("apply", "-f", write(tmp_path, job_manifest("rigid", namespace))).exit_code == 0
    rigid = run("scale", "rigid", "-n", namespace, "--replicas", "3")
    assert rigid.exit_code == 2 and "cannot be scaled" in rigid.stderr


def test_queues(plane, namespace, run, tmp_path):
    assert run("queue", "create", "research", "--weight", "2", "--capability", "nvidia.com/gpu=4").exit_code == 0
    assert run("queue", "create", "research").exit_code == 2
    listed = run("queue", "list")
    assert listed.exit_code == 0
    assert ["research", "Open", "2", "True", "nvidia.com/gpu=4"] in [
        line.split() for line in listed.stdout.splitlines()
    ]
    assert (
        run("queue", "update", "research", "--weight", "3").stdout
        == "queue.scheduling.volcano.sh/research configured\n"
    )
    got = yaml.safe_load(run("queue", "get", "research").stdout)
    assert "managedFields" not in got["metadata"]  # as kubectl shows an object
    assert got["spec"]["weight"] == 3 and got["spec"]["capability"] == {"nvidia.com/gpu": "4"}
    queue_uid = got["metadata"]["uid"]
    assert run("queue", "close", "research").stdout == "queue.scheduling.volcano.sh/research closed\n"
    assert run("queue", "open", "research").stdout == "queue.scheduling.volcano.sh/research opened\n"
    commands = plane.kube.list(resource_path(COMMANDS, "commands", namespace="default"))["items"]
    mine = sorted(c["action"] for c in commands if c["target"]["uid"] == queue_uid)
    assert mine == ["CloseQueue", "OpenQueue"]
    assert all(c["target"]["kind"] == "Queue" for c in commands if c["target"]["uid"] == queue_uid)

    job = job_manifest("queued", namespace, queue="research")
    assert run("apply", "-f", write(tmp_path, job)).exit_code == 0
    busy = run("queue", "delete", "research")
    assert busy.exit_code == 2 and f"queue research still has jobs: {namespace}/queued" in busy.stderr
    assert run("delete", "queued", "-n", namespace).exit_code == 0
    wait_until(
        lambda: not plane.kube.list(resource_path(JOB_API, "jobs", namespace=namespace))["items"],
        timeout=60,
        what="the job to be gone",
    )
    assert run("queue", "delete", "research").stdout == "queue.scheduling.volcano.sh/research deleted\n"
    assert run("queue", "delete", "default").exit_code == 2
    assert run("queue", "get", "research").exit_code == 2


def test_the_environment_names_the_cluster_and_errors_are_one_line(plane, namespace, tmp_path):
    """As users run it: a separate process, the kubeconfig from CALDERA_KUBECONFIG."""
    env = {"CALDERA_KUBECONFIG": str(plane.kubeconfig), "CALDERA_HOME": str(tmp_path / "no-daemon")}
    listed = caldera("list", "-n", namespace, env=env)
    assert listed.code == 0 and listed.stderr == f"No jobs found in namespace {namespace}.\n"
    missing = caldera("get", "nothing", "-n", namespace, env=env)
    assert (missing.code, missing.stderr) == (2, f"caldera: error: job {namespace}/nothing not found\n")
    broken = tmp_path / "broken.yaml"
    broken.write_text("clusters: [")
    bad = caldera("--kubeconfig", broken, "list", env={"CALDERA_HOME": str(tmp_path)})
    assert bad.code == 2 and str(broken) in bad.stderr and bad.stderr.count("\n") == 1
    explain = caldera("explain", "nothing", "-n", namespace, env=env)
    assert explain.code == 2 and "not found" in explain.stderr
    for verb in ("dashboard", "down"):  # what only the embedded daemon has says so
        done = caldera(verb, env=env)
        assert done.code == 2 and done.stderr.count("\n") == 1 and "Kubernetes" in done.stderr, done


def test_a_resource_the_cluster_does_not_serve_says_how_to_install_caldera(plane):
    """A cluster without caldera's CRDs answers 404 for the whole resource: the error says what to apply."""
    from caldera.client.kube import KubeCluster

    kube = KubeCluster(plane.kube)
    with pytest.raises(CalderaError) as missing:
        kube._list(resource_path("nothing.example.com/v1", "things"))
    assert "caldera kube manifests | kubectl apply --server-side -f -" in str(missing.value)


def test_wait_reads_the_phase_the_controller_writes_and_watch_follows(plane, namespace, run, tmp_path):
    from caldera.client.kube import KubeCluster

    assert run("apply", "-f", write(tmp_path, job_manifest("watched", namespace))).exit_code == 0
    timed_out = run("wait", "watched", "-n", namespace, "--for", "Running", "--timeout", "0.5")
    assert timed_out.exit_code == 1 and "(it is Pending)" in timed_out.stderr
    path = resource_path(JOB_API, "jobs", namespace=namespace, name="watched")
    stored = plane.kube.get(path)
    state = {"phase": "Running", "reason": "", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    plane.kube.replace(f"{path}/status", {**stored, "status": {"state": state, "running": 2}})
    done = run("wait", "watched", "-n", namespace, "--for", "Running", "--timeout", "30")
    assert done.exit_code == 0 and done.stdout == f"job {namespace}/watched is Running\n", done.output

    events = KubeCluster(plane.kube).watch(("Job",), namespace, timeout=30)
    first = next(events)
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "watched")
    end = next(events)
    assert end["type"] == "BOOKMARK" and end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true"
    plane.kube.patch(path, {"metadata": {"labels": {"seen": "yes"}}})
    change = next(e for e in events if e["type"] != "BOOKMARK")
    assert change["type"] == "MODIFIED" and change["object"]["metadata"]["labels"] == {"seen": "yes"}
    events.close()
    with pytest.raises(CalderaError, match="one kind is watched at a time"):
        next(KubeCluster(plane.kube).watch(("Job", "Pod"), namespace))
