"""The local executor runs pods as real process groups: exit codes, logs, environment, stopping."""

from __future__ import annotations

import json
import os
import re
import signal

import pytest

from caldera.backends.process import ProcessSpec
from caldera.backends.procfs import group_members, proc_stat
from caldera.testing.waiting import wait_until

from .harness import NS, Pods, parked, python, sh


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        pytest.param(sh("exit 0"), 0, id="success"),
        pytest.param(python("import sys; sys.exit(3)"), 3, id="exit-3"),
        pytest.param(sh("kill -TERM $$"), 143, id="own-sigterm-is-143"),
        pytest.param(("/nonexistent/train",), 127, id="missing-command-is-127"),
    ],
)
def test_the_exit_code_is_reported(pods: Pods, argv, code):
    executor, events = pods.executor()
    pods.start(executor, pods.spec("p", argv))
    end = events.wait_end("p")
    assert (end.kind, end.exit_code, end.attempt) == ("exited", code, 0)
    assert executor.running() == []


def test_kill_9_of_the_command_is_137(pods: Pods):
    executor, events = pods.executor()
    pods.start(executor, pods.spec("p", parked()))
    os.kill(pods.ready("p"), signal.SIGKILL)
    end = events.wait_end("p")
    assert (end.kind, end.exit_code) == ("exited", 137)


def test_a_command_that_cannot_start_says_why_in_its_log(pods: Pods):
    executor, events = pods.executor()
    pods.start(executor, pods.spec("p", ("no-such-command-here",)))
    assert events.wait_end("p").exit_code == 127
    assert "cannot start 'no-such-command-here'" in pods.log("p")


def test_the_log_keeps_every_attempt(pods: Pods):
    executor, events = pods.executor()
    pods.start(executor, pods.spec("p", sh("echo out; printf died-mid-line >&2; exit 1")))
    events.wait_end("p")
    pods.start(executor, pods.spec("p", sh("echo second"), attempt=1))
    wait_until(lambda: len(events.of("p")) == 2, what="the second attempt to end", condition=events.cond)
    header = r"=== attempt {} started \d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00 ==="
    expected = [header.format(0), "out", "died-mid-line", header.format(1), "second", ""]
    assert re.fullmatch("\n".join(expected), pods.log("p"))


def test_environment_cwd_and_files_are_exactly_as_given(pods: Pods, tmp_path):
    executor, events = pods.executor()
    workdir = tmp_path / "work"
    workdir.mkdir()
    env = {"LC_ALL": "C.UTF-8", "CUDA_VISIBLE_DEVICES": "1,3", "MASTER_PORT": "29500", "EMPTY": ""}
    probe = python(
        "import json, os, sys;"
        "json.dump({'env': dict(os.environ), 'cwd': os.getcwd(), 'hosts': open(sys.argv[1]).read()}, open('out.json', 'w'))",
        str(pods.dir("p") / "hosts" / "worker"),
    )
    spec = pods.spec("p", probe, env=env, cwd=str(workdir), files={"hosts/worker": "127.0.0.1:29500\n"})
    pods.start(executor, spec)
    assert events.wait_end("p").exit_code == 0
    seen = json.loads((workdir / "out.json").read_text())
    assert seen == {"env": env, "cwd": str(workdir), "hosts": "127.0.0.1:29500\n"}


def test_proc_json_names_the_group_and_its_leader(pods: Pods):
    executor, _ = pods.executor()
    record = pods.start(executor, pods.spec("p", parked(), attempt=4))
    command = pods.ready("p")
    data = json.loads((pods.dir("p") / "proc.json").read_text())
    leader = proc_stat(record.pid)
    assert leader is not None
    assert data == {
        "pid": record.pid,
        "pgid": record.pid,
        "start_ticks": leader.start_ticks,
        "attempt": 4,
        "argv": list(parked()),
    }
    assert os.getpgid(command) == record.pid
    assert os.getsid(command) == record.pid  # its own session: no terminal signal reaches it


def test_stop_ends_the_whole_group(pods: Pods):
    executor, events = pods.executor()
    record = pods.start(executor, pods.spec("p", sh("sleep 1000 & echo $! > ready.tmp; mv ready.tmp ready; wait")))
    sleeper = pods.ready("p")
    executor.stop(f"{NS}/p")
    end = events.wait_end("p")
    assert (end.kind, end.exit_code) == ("stopped", 143)
    assert group_members(record.pid) == []
    assert not _alive(sleeper)


def test_stop_kills_what_ignores_sigterm_after_the_grace(pods: Pods):
    executor, events = pods.executor()
    record = pods.start(executor, pods.spec("p", parked(on_term="ignore")))
    pods.ready("p")
    executor.stop(f"{NS}/p", grace=0.2)
    end = events.wait_end("p")
    assert (end.kind, end.exit_code) == ("stopped", 137)
    assert "0.2s after SIGTERM" in end.note
    assert group_members(record.pid) == []


def test_a_shorter_grace_overrides_a_longer_one(pods: Pods):
    executor, events = pods.executor()
    pods.start(executor, pods.spec("p", parked(on_term="ignore")))
    pods.ready("p")
    executor.stop(f"{NS}/p", grace=60)
    executor.stop(f"{NS}/p", grace=0)
    assert events.wait_end("p").exit_code == 137


def test_stop_is_idempotent_and_ignores_unknown_pods(pods: Pods):
    executor, events = pods.executor()
    pods.start(executor, pods.spec("p", parked()))
    pods.ready("p")
    executor.stop(f"{NS}/p")
    executor.stop(f"{NS}/p")
    executor.stop(f"{NS}/unknown")
    events.wait_end("p")
    executor.stop(f"{NS}/p")
    executor.stop_all(grace=0)
    assert [e.kind for e in events.events] == ["stopped"]


def test_a_stop_during_start_up_is_honoured(pods: Pods):
    executor, events = pods.executor()
    record = pods.start(executor, pods.spec("p", parked()))
    executor.stop(f"{NS}/p")  # the shim may not even have read its start order yet
    end = events.wait_end("p")
    assert (end.kind, end.exit_code, end.note) == ("stopped", 143, "")
    assert group_members(record.pid) == []


def test_stop_all_returns_once_every_group_is_gone(pods: Pods):
    executor, events = pods.executor()
    records = [pods.start(executor, pods.spec(name, parked())) for name in ("a", "b", "c")]
    pods.ready("a")
    executor.stop_all(grace=5)
    assert executor.running() == []
    assert sorted((e.key, e.kind) for e in events.events) == [(f"{NS}/{n}", "stopped") for n in "abc"]
    assert all(group_members(r.pid) == [] for r in records)


def test_a_running_pod_cannot_be_run_again(pods: Pods):
    executor, _ = pods.executor()
    pods.start(executor, pods.spec("p", parked()))
    with pytest.raises(ValueError, match="already running"):
        executor.run(pods.spec("p", parked(), attempt=1))
    assert executor.running() == [f"{NS}/p"]


def test_report_may_run_the_pod_again_at_once(pods: Pods):
    """A restart policy acts on the end of an attempt: by then the pod is no longer running."""

    def restart(event):
        if event.attempt < 2:
            executor.run(pods.spec("p", sh(f"exit {event.attempt + 1}"), attempt=event.attempt + 1))

    executor, events = pods.executor(then=restart)
    pods.start(executor, pods.spec("p", sh("exit 0")))
    wait_until(lambda: len(events.of("p")) == 3, what="three attempts", condition=events.cond)
    assert [(e.attempt, e.exit_code) for e in events.of("p")] == [(0, 0), (1, 1), (2, 2)]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"key": "nonamespace"}, "namespace/name", id="bad-key"),
        pytest.param({"pod_dir": "/tmp/elsewhere"}, "pod_dir must be", id="pod-dir-elsewhere"),
        pytest.param({"argv": ()}, "empty command", id="empty-command"),
        pytest.param({"files": {"../escape": ""}}, "inside the pod dir", id="file-escapes"),
        pytest.param({"files": {"/etc/hosts": ""}}, "inside the pod dir", id="absolute-file"),
        pytest.param({"files": {"log": ""}}, "inside the pod dir", id="file-over-the-log"),
    ],
)
def test_bad_specs_are_refused_before_anything_runs(pods: Pods, change, message):
    executor, _ = pods.executor()
    fields = {f: getattr(pods.spec("p", sh("exit 0")), f) for f in ProcessSpec.__dataclass_fields__}
    with pytest.raises(ValueError, match=message):
        executor.run(ProcessSpec(**{**fields, **change}))
    assert executor.running() == []
    assert not pods.dir("p").exists()


def _alive(pid: int) -> bool:
    st = proc_stat(pid)
    return st is not None and st.live


def test_log_times_note_where_lines_begin(pods: Pods):
    executor, events = pods.executor()
    # "par" and "tial" may come in two reads: no note may then point inside the line.
    script = "printf 'one\\npar'; sleep 0.2; printf 'tial\\ntwo\\n'"
    pods.start(executor, pods.spec("p", sh(script)))
    assert events.wait_end("p").exit_code == 0
    log = (pods.dir("p") / "log").read_bytes()
    notes = [line.split() for line in (pods.dir("p") / "log.times").read_text().splitlines()]
    offsets = [int(offset) for offset, _ in notes]
    times = [float(seconds) for _, seconds in notes]
    assert offsets == sorted(offsets) and times == sorted(times)
    assert all(o == 0 or log[o - 1 : o] == b"\n" for o in offsets), (offsets, log)  # each starts a line
    assert log.index(b"one\n") in offsets  # the command's first read starts a line: noted where it lands
    assert max(offsets) < len(log)


def test_a_pod_starts_with_no_signal_ignored_or_blocked(pods: Pods):
    """As a container's process: SIGPIPE and SIGXFSZ are not ignored although Python (the daemon, shim.py) ignores them."""
    executor, events = pods.executor()
    pods.start(executor, pods.spec("p", sh("grep -E '^Sig(Ign|Blk)' /proc/self/status")))
    assert events.wait_end("p").exit_code == 0
    masks = {name: int(mask, 16) for name, mask in (line.split(":\t") for line in pods.log("p").splitlines()[1:])}
    standard = (1 << 31) - 1  # signals 1-31 (32 and up are the C library's own or real-time ones)
    assert masks["SigBlk"] & standard == 0 and masks["SigIgn"] & standard == 0, {k: hex(v) for k, v in masks.items()}
