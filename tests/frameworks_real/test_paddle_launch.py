"""Paddle's own launcher, unchanged, inside caldera's jobs: `python -m paddle.distributed.launch`.

- Collective: a Volcano Job of 2 trainer pods with the paddle plugin, each running the
  launcher with no rendezvous flag; it reads caldera's PADDLE_MASTER (its rendezvous, trainer 0's
  endpoint), PADDLE_NNODES and PADDLE_JOB_ID, and starts one training process per pod.
- Elastic (seed 001): an elastic Volcano Job (minAvailable 2 of 3 trainers: np 2:3) whose pods
  run the launcher against the etcd the daemon runs, from the variables caldera gives an
  elastic pod (PADDLE_ELASTIC_SERVER, PADDLE_ELASTIC_JOB_ID, PADDLE_ELASTIC_NP).

Paddle 3.3.1, on gloo: caldera gives a pod without GPUs PADDLE_DISTRI_BACKEND=gloo, as the
launcher would on CPU (it does not here: to it caldera's CUDA_VISIBLE_DEVICES="", no GPU
visible, means GPU mode, `launch/context/device.py`). The pods have no workingDir: each runs
in its own directory (pods sharing one would write over each other's launcher logs). That
directory holds caldera's own `log` file, so the launcher's default `--log_dir log` cannot be
made there: the command names another.
"""

from __future__ import annotations

import json
from typing import Any

from caldera.launcher import etcd
from e2e.conftest import Caldera

from .conftest import SCRIPTS, finish, framework_python, pod_logs

LOG_DIR = "paddle-log"  # the launcher's --log_dir, in the pod's directory


def volcano_job(name: str, command: list[str], *, replicas: int, plugins: dict[str, list[str]], least: int = 0) -> str:
    """A Volcano Job of `replicas` trainer pods; elastic when `least` of them are enough (the task's minAvailable)."""
    task: dict[str, Any] = {
        "name": "trainer",
        "replicas": replicas,
        **({"minAvailable": least} if least else {}),
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "paddle", "command": command, "resources": {"requests": {"cpu": "300m"}}}],
            }
        },
    }
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"minAvailable": least or replicas, "plugins": plugins, "tasks": [task]},
    }
    return json.dumps(job)


def workers(cal: Caldera, pods: list[str]) -> list[dict[str, Any]]:
    """The `worker {...}` line of each pod's training process (in the launcher's workerlog.0)."""
    found = []
    for pod in pods:
        log = (cal.pod_dir(pod) / LOG_DIR / "workerlog.0").read_text(errors="replace")
        lines = [x for x in log.splitlines() if x.startswith("worker {")]
        assert lines, f"{pod} trained nothing:\n{log}"
        found.append(json.loads(lines[-1].removeprefix("worker ")))  # its last round, had the launcher restarted it
    return found


def test_the_collective_launcher_meets_at_calderas_paddle_master(cluster: Caldera) -> None:
    python = framework_python("paddle")
    command = [python, "-m", "paddle.distributed.launch", f"--log_dir={LOG_DIR}", str(SCRIPTS / "paddle_dp.py")]
    cluster.apply(volcano_job("collective", command, replicas=2, plugins={"paddle": [], "svc": [], "env": []}))
    finish(cluster, "collective", timeout=300)
    assert cluster.job("collective")["retryCount"] == 0, pod_logs(cluster, "collective")

    pods = ["collective-trainer-0", "collective-trainer-1"]
    found = workers(cluster, pods)
    assert sorted(w["rank"] for w in found) == [0, 1], found
    assert {w["world"] for w in found} == {2}
    assert len({json.dumps(w["params"]) for w in found}) == 1, found  # one group: gradients all-reduced
    assert {w["PADDLE_DISTRI_BACKEND"] for w in found} == {"gloo"}  # caldera's, on a pod without GPUs
    for pod in pods:
        log = cluster.pod_log(pod)
        # The launcher took its rendezvous from caldera's variables (it says so, then lists them).
        assert "args master will be overridden by env: PADDLE_MASTER" in log, log
        assert "args nnodes will be overridden by env: PADDLE_NNODES value: 2" in log, log
        assert "args job_id will be overridden by env: PADDLE_JOB_ID value: collective" in log, log
        assert "LAUNCH INFO" in log and " nnodes: 2\n" in log, log


def test_the_elastic_launcher_meets_in_calderas_etcd(cluster: Caldera) -> None:
    python = framework_python("paddle")
    # The launcher's elastic mode, from the variables caldera gives an elastic pod: its etcd
    # (--master etcd://), the job's MIN:MAX (--nnodes 2:3) and its rendezvous id.
    launch = (
        f"exec {python} -m paddle.distributed.launch --master etcd://$PADDLE_ELASTIC_SERVER"
        f" --nnodes $PADDLE_ELASTIC_NP --job_id $PADDLE_ELASTIC_JOB_ID --log_dir {LOG_DIR}"
        # It starts as soon as the maximum (3) is there; below it, it waits this long for more
        # (default 30 s), which a third pod slowed down by a loaded machine must not miss.
        f" --elastic_timeout 120 {SCRIPTS / 'paddle_dp.py'}"
    )
    plugins = {"paddle": [], "svc": [], "env": []}  # the paddle plugin leaves an elastic task's group to etcd
    cluster.apply(volcano_job("elastic", ["sh", "-c", launch], replicas=3, plugins=plugins, least=2))
    finish(cluster, "elastic", timeout=300)
    job = cluster.json("get", "elastic")
    assert job["retryCount"] == 0, pod_logs(cluster, "elastic")
    pods = [p["name"] for p in job["pods"]]
    assert len(pods) == 3 and all(p["phase"] == "Succeeded" for p in job["pods"]), job

    found = workers(cluster, pods)
    (world,) = {w["world"] for w in found}
    assert world == 3, found  # all three pods joined: the launcher starts as soon as the maximum is there
    assert sorted(w["rank"] for w in found) == [0, 1, 2]
    assert len({json.dumps(w["params"]) for w in found}) == 1, found
    (server,) = {w["PADDLE_ELASTIC_SERVER"] for w in found}
    (job_id,) = {w["PADDLE_ELASTIC_JOB_ID"] for w in found}
    assert {w["PADDLE_ELASTIC_NP"] for w in found} == {"2:3"}
    assert {w["PADDLE_NNODES"] for w in found} == {"3"}  # what the launcher gave its processes, not a pin of ours
    # The launchers synced their peers in caldera's etcd: one record per pod under the job's id.
    store = etcd.connect(server)
    try:
        infos = store.get_prefix(f"/{job_id}/info/")
    finally:
        store.close()
    assert len(infos) == 3, infos
    assert {json.loads(kv.value)["candidate"].split(":")[0] for kv in infos} == {"127.0.0.1"}
