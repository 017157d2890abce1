"""The plane's events as core Events: what `PlaneEvents` hands the recorder at the end of a turn."""

from __future__ import annotations

from dataclasses import dataclass, field

from caldera.core import objects as o
from caldera.system.kubeevents import PlaneEvents


@dataclass
class Recorded:
    """A recorder that keeps what it is given (the real one writes to the API server: tests/kube)."""

    calls: list[tuple[str, str, str, str]] = field(default_factory=list)  # (kind, object, reason, message)

    def record(self, ref, reason: str, message: str, now: float, *, warning: bool = False) -> None:
        self.calls.append((ref.kind, ref.name, reason, message))


def flushed(*events: o.Event) -> list[tuple[str, str, str, str]]:
    recorder = Recorded()
    plane_events = PlaneEvents(recorder)  # type: ignore[arg-type]
    for ev in events:
        plane_events.collect(ev)
    plane_events.flush(lambda key: "", lambda key: "")
    return recorder.calls


def phase(job: str, reason: str, message: str = "") -> o.Event:
    return o.Event(time=1.0, kind="JobPhase", object=job, reason=reason, message=message, namespace="ns")


def test_a_job_that_passed_several_phases_in_one_turn_gets_one_event_naming_them():
    bind = o.Event(time=1.0, kind="Bind", object="a-w-0", node="n1", namespace="ns")
    calls = flushed(phase("a", "Pending", "submitted"), bind, phase("b", "Pending", "submitted"), phase("a", "Running"))
    assert calls == [
        ("Pod", "a-w-0", "Scheduled", "Successfully assigned ns/a-w-0 to n1"),
        ("Job", "b", "Pending", "submitted"),
        ("Job", "a", "Running", "job is Running (Pending → Running)"),
    ]


def test_one_phase_in_a_turn_is_told_as_it_is():
    assert flushed(phase("a", "Completed", "all tasks succeeded")) == [("Job", "a", "Completed", "all tasks succeeded")]


def test_events_other_than_job_phases_are_never_folded():
    evicts = [o.Event(time=1.0, kind="Preempt", object="p", reason="Preempt", message=f"m{i}") for i in range(2)]
    assert [c[3] for c in flushed(*evicts)] == ["m0", "m1"]
