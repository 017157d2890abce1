"""The timeline of pod runs, rebuilt from stored events: starts, ends, restarts, evictions, jobs."""

from __future__ import annotations

from typing import Any

import pytest

from caldera.system.timeline import Timeline, job_of, pod_timeline


def ev(
    time: float, kind: str, obj: str, *, node: str = "", reason: str = "", message: str = "", ns: str = "default"
) -> dict[str, Any]:
    return {
        "id": 0,
        "time": time,
        "namespace": ns,
        "kind": kind,
        "object": obj,
        "node": node,
        "reason": reason,
        "message": message,
    }


def submitted(job: str, time: float = 0.0, ns: str = "default") -> dict[str, Any]:
    return ev(time, "JobPhase", job, reason="Pending", message="submitted", ns=ns)


def runs(events: list[dict[str, Any]], **kw: Any) -> list[tuple[Any, ...]]:
    return [
        (s["pod"], s["node"], s["start"], s["end"], s["outcome"], s["exitCode"])
        for s in pod_timeline(events, **kw)["items"]
    ]


def test_a_run_from_bind_to_its_end() -> None:
    events = [
        submitted("train"),
        ev(1, "Bind", "train-worker-0", node="node-0"),
        ev(1, "Bind", "train-worker-1", node="node-1"),
        ev(5, "PodPhase", "train-worker-0", node="node-0", reason="Succeeded", message="exit code 0"),
        ev(6, "PodPhase", "train-worker-1", node="node-1", reason="Failed", message="exit code 3"),
        ev(7, "PodDeleted", "train-worker-0", node="node-0", reason="Deleted"),  # a finished run stays as it ended
    ]
    assert runs(events) == [
        ("train-worker-0", "node-0", 1, 5, "Succeeded", 0),
        ("train-worker-1", "node-1", 1, 6, "Failed", 3),
    ]
    first = pod_timeline(events)["items"][0]
    assert (first["job"], first["task"], first["restart"]) == ("train", "worker", False)


def test_events_folded_in_as_they_come_give_what_all_of_them_at_once_give() -> None:
    events = [
        ev(1, "Bind", "late-w-0", node="n"),  # its job's first JobPhase comes after: its job is found then
        submitted("late", time=2),
        ev(3, "Bind", "a-w-0", node="n"),
        ev(4, "Preempt", "a-w-0", node="n", reason="Preempt", message="for default/late"),
        ev(5, "PodRestart", "late-w-0", node="n", reason="Restarted", message="exit code 1"),
        ev(6, "PodDeleted", "a-w-0", node="n"),
        ev(7, "PodPhase", "late-w-0", node="n", reason="Succeeded", message="exit code 0"),
    ]
    events = [{**e, "id": i} for i, e in enumerate(events, 1)]
    whole = pod_timeline(events)
    timeline, seen = Timeline(), []
    for cut in range(len(events) + 1):  # an answer after each event, as the daemon gives one per request
        timeline.add(events[timeline.last : cut])
        seen.append(timeline.query())
    assert timeline.last == len(events) and seen[-1] == whole
    assert [s["job"] for s in seen[1]["items"]] == [""] and [s["job"] for s in seen[2]["items"]] == ["late"]
    assert seen[3]["items"][1]["outcome"] == "Running" and seen[6]["items"][1]["outcome"] == "Preempted"
    assert timeline.query(job="late", since=5.5) == {"items": [whole["items"][2]], "truncated": False}


def test_a_running_pod_has_an_open_run() -> None:
    assert runs([submitted("a"), ev(2, "Bind", "a-w-0", node="n")]) == [("a-w-0", "n", 2, None, "Running", None)]


def test_a_restart_in_place_ends_one_run_and_starts_the_next() -> None:
    events = [
        submitted("a"),
        ev(1, "Bind", "a-w-0", node="n"),
        ev(4, "PodRestart", "a-w-0", node="n", reason="Restarted", message="exit code 1"),
        ev(9, "PodPhase", "a-w-0", node="n", reason="Succeeded", message="exit code 0"),
    ]
    assert runs(events) == [("a-w-0", "n", 1, 4, "Restarted", 1), ("a-w-0", "n", 4, 9, "Succeeded", 0)]
    assert [s["restart"] for s in pod_timeline(events)["items"]] == [False, True]


@pytest.mark.parametrize(
    ("kind", "outcome"), [("Preempt", "Preempted"), ("Reclaim", "Reclaimed"), ("Evict", "Evicted")]
)
def test_a_run_taken_away_ends_when_the_pod_is_gone(kind: str, outcome: str) -> None:
    events = [
        submitted("low"),
        ev(1, "Bind", "low-w-0", node="n"),
        ev(3, kind, "low-w-0", node="n", reason=kind, message="for default/high"),
        ev(4, "PodDeleted", "low-w-0", node="n", reason="Deleted"),
        ev(5, "Bind", "low-w-0", node="m"),  # re-created later, elsewhere: a new run
    ]
    assert runs(events) == [("low-w-0", "n", 1, 4, outcome, None), ("low-w-0", "m", 5, None, "Running", None)]
    assert pod_timeline(events)["items"][0]["reason"] == "for default/high"


def test_a_pod_deleted_while_running_ends_as_deleted_and_a_bind_without_an_end_closes_as_unknown() -> None:
    events = [
        submitted("a"),
        ev(1, "Bind", "a-w-0", node="n"),
        ev(2, "PodDeleted", "a-w-0", node="n"),
        ev(3, "Bind", "a-w-1", node="n"),
        ev(8, "Bind", "a-w-1", node="n"),
        ev(9, "PodDeleted", "a-w-9", node="n"),  # never bound: no run
    ]
    assert runs(events) == [
        ("a-w-0", "n", 1, 2, "Deleted", None),
        ("a-w-1", "n", 3, 8, "Unknown", None),
        ("a-w-1", "n", 8, None, "Running", None),
    ]


def test_filters_by_namespace_job_and_time() -> None:
    events = [
        submitted("a"),
        submitted("a", ns="other"),
        submitted("b"),
        ev(1, "Bind", "a-w-0", node="n"),
        ev(2, "PodPhase", "a-w-0", node="n", reason="Succeeded", message="exit code 0"),
        ev(3, "Bind", "b-w-0", node="n"),
        ev(4, "Bind", "a-w-0", node="n", ns="other"),
        ev(10, "Bind", "b-w-1", node="n"),
    ]
    assert [r[0] for r in runs(events, job="b")] == ["b-w-0", "b-w-1"]
    assert [r[2] for r in runs(events, namespace="other")] == [4]
    assert [r[2] for r in runs(events, since=3)] == [3, 4, 10]  # a-w-0 ended at 2; open runs go on
    assert [r[2] for r in runs(events, until=3)] == [1, 3]


def test_the_latest_runs_are_kept_when_there_are_too_many() -> None:
    events = [submitted("a")] + [ev(i, "Bind", f"a-w-{i}", node="n") for i in range(10)]
    found = pod_timeline(events, limit=3)
    assert found["truncated"] and [s["start"] for s in found["items"]] == [7, 8, 9]
    assert not pod_timeline(events)["truncated"]


@pytest.mark.parametrize(
    ("pod", "jobs", "owner"),
    [
        pytest.param("train-worker-0", {"train"}, "train", id="simple"),
        pytest.param("my-job-worker-12", {"my", "my-job"}, "my-job", id="longest-prefix"),
        pytest.param("a-b-c-0", {"a"}, "a", id="task-with-dash"),
        pytest.param("train-worker-x", {"train"}, "", id="no-index"),
        pytest.param("train-0", {"train"}, "", id="no-task"),
        pytest.param("other-worker-0", {"train"}, "", id="unknown-job"),
    ],
)
def test_a_pod_belongs_to_the_longest_job_name_it_starts_with(pod: str, jobs: set[str], owner: str) -> None:
    assert job_of(pod, jobs) == owner
