"""The event recorder's pacing: while the controller is busy writing pods, events wait (none is lost)."""

from __future__ import annotations

import threading

from caldera.backends.kube.client import JSON
from caldera.backends.kube.recorder import EventRecorder, ObjectRef
from caldera.testing.waiting import wait_until


class Sink:
    """Takes the recorder's creates (the real API server: tests/kube/test_api_writes.py)."""

    def __init__(self) -> None:
        self.created: list[str] = []

    def create(self, path: str, body: JSON) -> JSON:
        self.created.append(body["reason"])
        return body


class Busy:
    def __init__(self) -> None:
        self.on = True
        self.asked = 0
        self.lock = threading.Lock()

    def __call__(self) -> bool:
        with self.lock:
            self.asked += 1
        return self.on


def test_events_wait_while_the_controller_is_busy_and_are_all_written_after():
    sink, busy = Sink(), Busy()
    recorder = EventRecorder(sink, "caldera", "host", busy=busy, busy_interval=3600.0)  # type: ignore[arg-type]
    ref = ObjectRef("v1", "Pod", "ns", "p")
    try:
        for i in range(3):
            recorder.record(ref, f"R{i}", "m", 1.0)
        wait_until(lambda: busy.asked >= 3, 30, "the recorder to look at the controller a few times", interval=0.01)
        assert sink.created == []  # held while busy (an hour's interval: nothing would pass before it ends)
        busy.on = False
        wait_until(lambda: recorder.idle, 30, "the held events to be written", interval=0.01)
        assert sink.created == ["R0", "R1", "R2"]
    finally:
        recorder.close()


def test_without_a_busy_signal_events_are_written_at_once():
    sink = Sink()
    recorder = EventRecorder(sink, "caldera", "host")  # type: ignore[arg-type]
    try:
        recorder.record(ObjectRef("v1", "Pod", "ns", "p"), "Scheduled", "m", 1.0)
        wait_until(lambda: recorder.idle, 30, "the event to be written", interval=0.01)
        assert sink.created == ["Scheduled"]
    finally:
        recorder.close()


def test_closing_writes_what_is_held_without_waiting_for_the_burst_to_end():
    sink, busy = Sink(), Busy()
    recorder = EventRecorder(sink, "caldera", "host", busy=busy, busy_interval=3600.0)  # type: ignore[arg-type]
    for i in range(2):
        recorder.record(ObjectRef("v1", "Pod", "ns", "p"), f"R{i}", "m", 1.0)
    recorder.close(timeout=30)
    assert sink.created == ["R0", "R1"]
