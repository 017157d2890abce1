"""After a daemon restart, a new executor adopts what the old one started: nothing orphaned, repeated or lost."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys

import pytest

from caldera.backends import local, shim
from caldera.backends.process import EXIT_FILE, PROC_FILE, ProcRecord
from caldera.backends.procfs import group_members, proc_stat
from caldera.backends.shim import write_json_atomic
from caldera.backends.spawn import shim_command, spawn
from caldera.testing.waiting import wait_until

from .harness import NS, Pods, parked, sh

DAEMON = """
import json, signal, sys
from pathlib import Path
from caldera.backends.local import LocalExecutor
from caldera.backends.process import ProcessSpec
home, specs = Path(sys.argv[1]), json.loads(sys.argv[2])
executor = LocalExecutor(home, print)
for spec in specs:
    executor.run(ProcessSpec(key=spec["key"], argv=tuple(spec["argv"]), env={}, pod_dir=spec["pod_dir"]))
print("up", flush=True)
signal.pause()
"""


def _alive(pid: int) -> bool:
    st = proc_stat(pid)
    return st is not None and st.live


def _dead(pid: int) -> bool:
    return not _alive(pid)


def test_a_new_executor_reports_what_ended_meanwhile_once_and_watches_the_rest(pods: Pods):
    old, old_events = pods.executor()
    pods.start(old, pods.spec("ended", parked(5)))
    pods.start(old, pods.spec("alive", parked(7)))
    ended, alive = pods.ready("ended"), pods.ready("alive")
    old.close()  # the daemon is gone; its pods run on
    os.kill(ended, signal.SIGUSR1)
    wait_until((pods.dir("ended") / EXIT_FILE).exists, what="the pod to end while nobody watches")

    new, new_events = pods.executor()
    adopted = new.adopt()
    assert [(e.key, e.kind, e.exit_code) for e in adopted] == [
        (f"{NS}/alive", "running", None),
        (f"{NS}/ended", "exited", 5),
    ]
    assert new.running() == [f"{NS}/alive"]
    assert new.adopt() == []  # neither handed out again nor watched twice

    os.kill(alive, signal.SIGUSR1)
    assert new_events.wait_end("alive").exit_code == 7
    new.stop_all(grace=0)
    assert [(e.key, e.kind, e.exit_code) for e in new_events.events] == [(f"{NS}/alive", "exited", 7)]
    assert old_events.events == []


def test_an_adopted_pod_can_be_stopped(pods: Pods):
    old, _ = pods.executor()
    record = pods.start(old, pods.spec("p", sh("sleep 1000 & echo $! > ready.tmp; mv ready.tmp ready; wait")))
    sleeper = pods.ready("p")
    old.close()
    new, events = pods.executor()
    assert [e.kind for e in new.adopt()] == ["running"]
    new.stop(f"{NS}/p")
    assert (events.wait_end("p").kind, events.wait_end("p").exit_code) == ("stopped", 143)
    assert group_members(record.pid) == []
    assert _dead(sleeper)


def test_a_pod_whose_shim_was_killed_meanwhile_is_137_and_its_group_is_killed(pods: Pods):
    old, _ = pods.executor()
    record = pods.start(old, pods.spec("p", parked()))
    command = pods.ready("p")
    old.close()
    os.kill(record.pid, signal.SIGKILL)
    wait_until(lambda: _dead(record.pid), what="the shim to die")
    assert _alive(command)  # orphaned, for now

    new, _ = pods.executor()
    [event] = new.adopt()
    assert (event.kind, event.exit_code) == ("exited", 137)
    assert "without recording an exit code" in event.note
    assert _dead(command)
    assert new.running() == []


def test_an_end_already_reported_is_not_reported_again(pods: Pods):
    old, events = pods.executor()
    pods.start(old, pods.spec("p", sh("exit 4")))
    assert events.wait_end("p").exit_code == 4
    old.close()
    new, _ = pods.executor()
    assert new.adopt() == []
    assert not (pods.dir("p") / PROC_FILE).exists()


def test_a_process_that_took_over_the_pid_is_left_alone(pods: Pods):
    stranger = subprocess.Popen(["sleep", "1000"], start_new_session=True)  # a group leader, like a shim
    try:
        st = proc_stat(stranger.pid)
        assert st is not None
        # A record of an earlier process with the same pid: it started a tick before the stranger.
        pods.dir("p").mkdir(parents=True)
        write_json_atomic(
            pods.dir("p") / PROC_FILE, {"pid": stranger.pid, "start_ticks": st.start_ticks - 1, "attempt": 0}
        )
        new, _ = pods.executor()
        [event] = new.adopt()
        assert (event.kind, event.exit_code) == ("exited", 137)
        assert _alive(stranger.pid)
    finally:
        stranger.kill()
        stranger.wait()


def test_pods_survive_a_kill_9_of_their_daemon_and_are_adopted(pods: Pods):
    specs = [
        {"key": f"{NS}/{n}", "argv": list(parked(c)), "pod_dir": str(pods.dir(n))} for n, c in (("a", 3), ("b", 4))
    ]
    daemon = subprocess.Popen(
        [sys.executable, "-c", DAEMON, str(pods.home), json.dumps(specs)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert daemon.stdout is not None
        assert daemon.stdout.readline() == "up\n"
        pods.groups += [pods.record(n).pid for n in ("a", "b")]
        a, b = pods.ready("a"), pods.ready("b")
    finally:
        daemon.kill()
        daemon.wait()
        if daemon.stdout is not None:
            daemon.stdout.close()
    os.kill(a, signal.SIGUSR1)
    wait_until((pods.dir("a") / EXIT_FILE).exists, what="pod a to end while no daemon runs")

    new, events = pods.executor()
    assert sorted((e.key, e.kind, e.exit_code) for e in new.adopt()) == [
        (f"{NS}/a", "exited", 3),
        (f"{NS}/b", "running", None),
    ]
    os.kill(b, signal.SIGUSR1)
    assert events.wait_end("b").exit_code == 4
    assert all(group_members(pods.record_done(n).pid) == [] for n in ("a", "b"))


def test_the_shim_starts_nothing_unless_the_executor_recorded_it(tmp_path):
    """EOF at the gate (the executor died before writing proc.json): the command never runs."""
    done = subprocess.run(
        [sys.executable, "-I", shim.__file__, str(tmp_path), "0", "--", "/bin/sh", "-c", "touch ran"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "not started" in done.stderr
    assert sorted(os.listdir(tmp_path)) == [shim.UNSTARTED_FILE]
    assert (tmp_path / shim.UNSTARTED_FILE).read_text() == "0\n"
    assert ProcRecord.load(tmp_path / PROC_FILE) is None


@pytest.mark.parametrize("adopted", ["after", "at-the-gate"])
def test_an_attempt_recorded_but_never_let_through_its_gate_is_not_reported_ended(
    pods: Pods, adopted: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The executor died between writing proc.json and opening the shim's gate: the shim reads EOF and runs
    nothing. A new executor's adopt() reports nothing for it (it once reported an end, exit 137, and a job
    with no retry failed though nothing of it ran), drops its proc.json, and `past` says the attempt never
    started, so the owner starts it. Adopted after the shim has gone, or while it still waits at its gate."""
    where = pods.dir("gated")
    where.mkdir(parents=True)
    gate_r, gate_w = os.pipe()
    command = shim_command()
    try:
        pid = spawn(command[0], [*command, str(where), "1", "--", "/bin/sh", "-c", "touch ran"],
                    stdin=gate_r, log=str(where / "log"), blocked=(), defaults=frozenset())  # fmt: skip
    finally:
        os.close(gate_r)
    stat = proc_stat(pid)
    assert stat is not None
    write_json_atomic(where / PROC_FILE, ProcRecord(pid, stat.start_ticks, 1).to_json(("/bin/sh",)))
    new, _ = pods.executor()
    if adopted == "after":
        os.close(gate_w)  # the executor dies: its end of the gate closes
        os.waitpid(pid, 0)
        found = new.adopt()
    else:
        waited: list[int] = []

        def gate_closed_then_wait(pidfds: list[int], timeout: float) -> bool:
            # adopt() found the shim at its gate and waits for it: the old executor's end closes only now
            if not waited:
                os.close(gate_w)
            waited.append(len(pidfds))
            return real_wait(pidfds, timeout)

        real_wait = local.wait_exited
        monkeypatch.setattr(local, "wait_exited", gate_closed_then_wait)
        found = new.adopt()
        assert waited, "adopt() should have waited for the shim at its gate"
        with contextlib.suppress(ChildProcessError):  # adopt() reaped it (the old executor was this process)
            os.waitpid(pid, 0)
    assert found == []
    assert new.running() == []
    assert not (where / PROC_FILE).exists()
    assert new.past(f"{NS}/gated", 1) is None
    assert not (where / "ran").exists()
    new.stop_all(grace=0)


def test_past_tells_an_attempt_whose_end_was_handed_out_from_one_never_started(pods: Pods):
    """What an owner that died before saving a pod's end (or before starting it) asks after adopt()."""
    old, old_events = pods.executor()
    pods.start(old, pods.spec("ran", sh("exit 3"), attempt=2))
    assert old_events.wait_end("ran").exit_code == 3  # handed out: adopt() will not return it again
    old.close()

    new, _ = pods.executor()
    assert new.adopt() == []
    ended = new.past(f"{NS}/ran", 2)
    assert ended is not None and (ended.kind, ended.exit_code, ended.attempt) == ("exited", 3, 2)
    assert new.past(f"{NS}/ran", 3) is None  # the next attempt was never started
    assert new.past(f"{NS}/never", 0) is None  # nor was anything of a pod with no directory
    new.close()
