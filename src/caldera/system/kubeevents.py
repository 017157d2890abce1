"""The control plane's events as Kubernetes core Events: the object each is about, its reason and message.

The plane's events of a turn are held until the turn's writes are done (a Scheduled event never names a pod
the API server has not seen bound), then handed to the recorder. A job that went through several phases in
one turn (a job submitted and running at once, in a burst) gets one event, for the phase it ended in, that
names the phases it passed (`Pending → Running`): a job that waited has had its earlier phases' events in
earlier turns, so the story `kubectl describe` tells keeps every phase, for one write instead of several.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from caldera.backends.kube.foreign import JOB_PREFIX
from caldera.backends.kube.recorder import EventRecorder, ObjectRef
from caldera.core import objects as o

EVENT_REASONS = {  # plane event kind → (involved object kind, reason, warning)
    "Bind": ("Pod", "Scheduled", False),
    "Preempt": ("Pod", "Preempted", True),
    "Reclaim": ("Pod", "Reclaimed", True),
    "Evict": ("Pod", "Evicted", True),
    "BackOff": ("Pod", "BackOff", True),
    "Unschedulable": ("Job", "FailedScheduling", True),
    "JobPhase": ("Job", "", False),
    "Command": ("Job", "Command", False),
    "Scaled": ("Job", "Scaled", False),
    "Refused": ("Pod", "FailedScheduling", True),  # another operator's pod caldera cannot read (kubegroups)
    "RefusedGroup": ("Job", "FailedScheduling", True),  # ... or PodGroup: told on the PodGroup (its job name's prefix)
}


class PlaneEvents:
    def __init__(self, recorder: EventRecorder) -> None:
        self.recorder = recorder
        self._events: list[o.Event] = []

    def collect(self, event: o.Event) -> None:
        """The plane's `on_event`: keep the kinds that become core Events."""
        if event.kind in EVENT_REASONS:
            self._events.append(event)

    def flush(self, pod_uid: Callable[[str], str], job_uid: Callable[[str], str]) -> None:
        """Record what was collected; `pod_uid` / `job_uid` give the uid of a `namespace/name` ("" if unknown)."""
        events, self._events = _folded(self._events), []
        for ev in events:
            kind, reason, warning = EVENT_REASONS[ev.kind]
            key = f"{ev.namespace}/{ev.object}"
            if kind == "Pod":
                ref = ObjectRef("v1", "Pod", ev.namespace, ev.object, pod_uid(key))
            elif ev.object.startswith(JOB_PREFIX):  # another operator's group: told on its PodGroup
                name = ev.object[len(JOB_PREFIX) :]
                ref = ObjectRef(o.SCHEDULING_API, "PodGroup", ev.namespace, name, job_uid(key))
            else:
                ref = ObjectRef(o.JOB_API, "Job", ev.namespace, ev.object, job_uid(key))
            message = ev.message
            if ev.kind == "Bind":
                message = f"Successfully assigned {key} to {ev.node}"
            elif ev.kind == "JobPhase" and not message:
                message = f"job is {ev.reason}"
            self.recorder.record(ref, reason or ev.reason, message or ev.reason, ev.time, warning=warning)


def _folded(events: list[o.Event]) -> list[o.Event]:
    """The turn's events, each job's phase events folded into its last one (module docstring)."""
    phases: dict[tuple[str, str], list[o.Event]] = {}
    folds = False
    for ev in events:
        if ev.kind == "JobPhase":
            seen = phases.setdefault((ev.namespace, ev.object), [])
            seen.append(ev)
            folds = folds or len(seen) > 1
    if not folds:
        return events
    out: list[o.Event] = []
    for ev in events:
        if ev.kind != "JobPhase":
            out.append(ev)
            continue
        seen = phases[(ev.namespace, ev.object)]
        if len(seen) == 1:
            out.append(ev)
        elif ev is seen[-1]:
            message = ev.message or f"job is {ev.reason}"
            out.append(dataclasses.replace(ev, message=f"{message} ({' → '.join(e.reason for e in seen)})"))
    return out
