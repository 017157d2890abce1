"""A job's TensorBoard: a real one, on loopback, for as long as the job exists; adopted after a restart."""

from __future__ import annotations

import json
import os
import signal
import urllib.error
import urllib.request
from pathlib import Path

from caldera.backends.procfs import group_members
from caldera.system.daemon import EmbeddedCluster
from caldera.testing.waiting import wait_until

from .kit import job, small_cluster, wait_phase

LOGDIR = "caldera.dev/tensorboard-logdir"


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def refused(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=5).close()
    except (urllib.error.URLError, ConnectionError):
        return True
    return False


def tb_job(name: str, submit_dir: Path) -> tuple[dict[str, object], Path]:
    """A quick job asking for TensorBoard on `runs`, relative to where it was submitted."""
    return job(name, ["sh", "-c", "echo trained"], annotations={LOGDIR: "runs"}), submit_dir / "runs"


def record(home: Path, name: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((home / "jobs" / "default" / name / "tensorboard.json").read_text())
    return data


def pid_of(home: Path, name: str) -> int:
    return int(str(record(home, name)["pid"]))


def gone(pid: int) -> bool:
    """No process is left of TensorBoard's group (itself and its data server)."""
    return not group_members(pid)


def test_tensorboard_serves_while_the_job_exists_and_goes_with_it(tmp_path: Path) -> None:
    home = tmp_path / "caldera"
    cluster = small_cluster(home)
    try:
        manifest, logdir = tb_job("tb", tmp_path)
        cluster.apply(manifest, submit_dir=str(tmp_path))
        url = cluster.get_job("default", "tb")["tensorboard"]
        assert url is not None and url.startswith("http://127.0.0.1:")
        wait_until(lambda: answers(url), timeout=60, what="TensorBoard to answer", interval=0.2)
        pid = pid_of(home, "tb")
        assert record(home, "tb")["logdir"] == str(logdir)
        assert "TensorBoard" in (home / "jobs" / "default" / "tb" / "tensorboard.log").read_text()
        wait_phase(cluster, "tb", "Completed")
        assert answers(url), "TensorBoard stays after the job ends"
        events = cluster.describe_job("default", "tb")["events"]
        assert any(e["kind"] == "TensorBoard" and url in e["message"] for e in events)
        cluster.delete_job("default", "tb")
        wait_until(lambda: refused(url), timeout=30, what="TensorBoard to stop", interval=0.1)
        wait_until(lambda: not (home / "jobs" / "default" / "tb").exists(), timeout=30, what="the job dir to go")
        assert gone(pid)
    finally:
        cluster.shutdown(stop_pods=True)


def test_a_restarted_daemon_adopts_it_and_down_stops_it(tmp_path: Path) -> None:
    home = tmp_path / "caldera"
    first = small_cluster(home)
    manifest, _ = tb_job("tb", tmp_path)
    first.apply(manifest, submit_dir=str(tmp_path))
    url = first.get_job("default", "tb")["tensorboard"]
    wait_until(lambda: answers(url), timeout=60, what="TensorBoard to answer", interval=0.2)
    pid = pid_of(home, "tb")
    first.shutdown(stop_pods=False)  # a daemon restart: TensorBoard keeps serving meanwhile
    assert answers(url)
    second: EmbeddedCluster | None = small_cluster(home)
    try:
        assert second.get_job("default", "tb")["tensorboard"] == url
        assert pid_of(home, "tb") == pid, "the running TensorBoard is adopted, not started again"
        second.shutdown(stop_pods=True)  # `caldera down`
        second = None
        assert refused(url) and gone(pid)
    finally:
        if second is not None:
            second.shutdown(stop_pods=True)


def test_one_that_died_while_no_daemon_ran_is_started_again(tmp_path: Path) -> None:
    home = tmp_path / "caldera"
    first = small_cluster(home)
    manifest, _ = tb_job("tb", tmp_path)
    first.apply(manifest, submit_dir=str(tmp_path))
    url = first.get_job("default", "tb")["tensorboard"]
    wait_until(lambda: answers(url), timeout=60, what="TensorBoard to answer", interval=0.2)
    first.shutdown(stop_pods=False)
    old = pid_of(home, "tb")
    os.killpg(old, signal.SIGKILL)
    wait_until(lambda: refused(url), timeout=30, what="the killed TensorBoard to stop answering", interval=0.1)
    second = small_cluster(home)
    try:
        assert second.get_job("default", "tb")["tensorboard"] == url, "started again on its port, which is free"
        wait_until(lambda: answers(url), timeout=60, what="TensorBoard to answer again", interval=0.2)
        new = pid_of(home, "tb")
        assert new != old
    finally:
        second.shutdown(stop_pods=True)
    assert gone(new)
