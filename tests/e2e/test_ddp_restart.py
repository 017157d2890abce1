"""A DDP worker killed with `kill -9` mid-training: PodFailed → RestartJob restarts the job, which then completes.

The job is what `caldera submit pytorch` makes (its policies: PodEvicted/PodFailed → RestartJob).
The killed process is the worker's own Python, not the shim caldera puts above it, so the
failure is the one a crash of the user's code produces.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
from pathlib import Path

import pytest

from caldera.testing.waiting import TRAINING_DEADLINE, wait_until

from .conftest import Caldera, all_running

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        importlib.util.find_spec("torch") is None or importlib.util.find_spec("sklearn") is None,
        reason="the PyTorch example needs torch and scikit-learn: pip install -e '.[examples]'",
    ),
]

EPOCHS = 12  # about as long again as the start-up: the kill lands mid-training, the run stays short
HEADER = re.compile(r"^=== attempt (\d+) started .* ===$", re.MULTILINE)


def attempts(log: str) -> list[str]:
    """The log cut into its attempts, each from its header."""
    starts = [m.start() for m in HEADER.finditer(log)]
    return [log[a:b] for a, b in zip(starts, [*starts[1:], len(log)], strict=True)]


def user_process(pod_dir: Path) -> int:
    """The pid of the pod's command: the one child of its shim (whose pid proc.json records)."""
    shim = int(json.loads((pod_dir / "proc.json").read_text())["pid"])
    children = Path(f"/proc/{shim}/task/{shim}/children").read_text().split()
    assert len(children) == 1, f"shim {shim} has children {children}"
    pid = int(children[0])
    assert "train.py" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    return pid


def test_a_killed_worker_restarts_the_job_which_completes(caldera: Caldera) -> None:
    caldera.up()
    out = caldera.ok(
        "submit", "pytorch", "--name", "ddp", "--workers", "3", "--",
        "python", "examples/pytorch-ddp/train.py", "--epochs", str(EPOCHS),
    )  # fmt: skip
    assert out == "job default/ddp submitted\n", out
    caldera.wait_job("ddp", all_running(3), "the 3 DDP pods to run", timeout=60)
    wait_until(
        lambda: "training on" in caldera.pod_log("ddp-master-0"),
        timeout=TRAINING_DEADLINE,
        what="the master to start training",
        interval=0.05,
    )

    os.kill(user_process(caldera.pod_dir("ddp-worker-0")), signal.SIGKILL)

    waited = caldera.run("wait", "ddp", "--timeout", str(int(TRAINING_DEADLINE)))
    assert waited.returncode == 0, waited.stdout + waited.stderr + caldera.daemon_log()
    job = caldera.json("get", "ddp")
    assert (job["phase"], job["retryCount"]) == ("Completed", 1), job
    assert [(p["name"], p["phase"], p["exitCode"]) for p in job["pods"]] == [
        ("ddp-master-0", "Succeeded", 0),
        ("ddp-worker-0", "Succeeded", 0),
        ("ddp-worker-1", "Succeeded", 0),
    ]
    events = caldera.json("describe", "ddp")["events"]
    # The killed worker failed with SIGKILL's code, unless a peer that lost it was seen failing first (the
    # restart then stops the worker, already dead): either way, one failure, one restart.
    failed = {e["object"]: e["message"] for e in events if e["kind"] == "PodPhase" and e["reason"] == "Failed"}
    assert failed and failed.get("ddp-worker-0", "exit code 137") == "exit code 137", events
    assert sum(e["kind"] == "JobPhase" and e["reason"] == "Restarting" for e in events) == 1, events

    # The master's log (what `caldera logs` shows): the second run trained to the end.
    master = attempts(caldera.ok("logs", "ddp"))
    assert len(master) == 2, master
    final = re.search(r"^final test accuracy: (\d\.\d+)$", master[-1], re.MULTILINE)
    assert final and float(final.group(1)) >= 0.9, master[-1]

    # The killed worker's log keeps its first attempt, cut short, before the second, which ended well.
    worker = attempts(caldera.ok("logs", "ddp", "-i", "worker-0"))
    assert len(worker) == 2, worker
    assert "rank 1 of world_size 3 starting" in worker[0] and "rank 1 done" not in worker[0]
    assert "rank 1 of world_size 3 starting" in worker[1] and "rank 1 done" in worker[1]
