"""Pods on nodes over time (`GET /api/v1/timeline`), rebuilt from the store's event history.

The events the control plane records are durable (the store keeps them all, across
daemon restarts), so the timeline of every pod run is read back from them:

  Bind (pod, node)            a run starts on the node
  PodRestart                  the run ends (restarted in place, with its exit code) and a new one starts
  PodPhase Succeeded|Failed   the run ends with that outcome
  Preempt | Reclaim | Evict   the run is being taken away (it ends when the pod is gone)
  PodDeleted                  the pod is gone: a run still open ends (Deleted, or as it was taken away)

A segment is {"namespace", "pod", "job", "task", "node", "start", "end" (None while it runs),
"outcome" (Running, Succeeded, Failed, Restarted, Preempted, Reclaimed, Evicted, Deleted, Unknown),
"exitCode", "reason", "restart" (it began as an in-place restart)}.

Events name a pod, not its job: the job is the longest known job name (of the namespace's JobPhase
events) that the pod's name `<job>-<task>-<index>` starts with. Invariant: a pod has at most one open
segment; a new Bind of a pod whose run never ended closes that run as Unknown at the bind.

The store's events are only ever appended, so a `Timeline` folds them in once: each answer
reads only the events after the last one it folded (the daemon keeps one, see `clusterviews`),
and a run's segment is built once and again only when the run changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from caldera.system.api import JSON

KINDS = ("Bind", "PodRestart", "PodPhase", "Preempt", "Reclaim", "Evict", "PodDeleted", "JobPhase")
TAKEN = {"Preempt": "Preempted", "Reclaim": "Reclaimed", "Evict": "Evicted"}
LIMIT = 20_000


@dataclass(slots=True)
class _Run:
    namespace: str
    pod: str
    node: str
    start: float
    restart: bool
    end: float | None = None
    outcome: str = "Running"
    exit_code: int | None = None
    reason: str = ""
    taken: str = ""  # how it is being taken away (Preempted, ...), once an eviction was recorded
    job: str = ""  # its job, once known (job names are only ever added)
    segment: JSON | None = None  # the segment as last built; None: to build again


class Timeline:
    """Every run of every pod so far, folded from the store's events in the order they happened."""

    def __init__(self) -> None:
        self.last = 0  # the id of the last event folded in
        self._runs: list[_Run] = []
        self._open: dict[tuple[str, str], _Run] = {}
        self._jobs: dict[str, set[str]] = {}

    def add(self, events: Iterable[JSON]) -> None:
        """Fold in `events` (any kinds; others are skipped), the ones after those already folded in."""
        for e in events:
            self.last = max(self.last, int(e.get("id", 0)))
            self._fold(e)

    def _fold(self, e: JSON) -> None:
        kind, ns, obj, at = e["kind"], e["namespace"], e["object"], float(e["time"])
        if kind == "JobPhase":
            self._jobs.setdefault(ns, set()).add(obj)
            return
        key = (ns, obj)
        run = self._open.get(key)
        if kind == "Bind":
            if run is not None:
                _end(run, at, "Unknown")
            self._start(key, _Run(ns, obj, e["node"], at, restart=False))
        elif run is None:
            return
        elif kind == "PodRestart":
            _end(run, at, "Restarted", _exit_code(e["message"]))
            self._start(key, _Run(ns, obj, run.node, at, restart=True))
        elif kind == "PodPhase" and e["reason"] in ("Succeeded", "Failed"):
            _end(run, at, e["reason"], _exit_code(e["message"]))
            del self._open[key]
        elif kind in TAKEN:
            run.taken, run.reason, run.segment = TAKEN[kind], e["message"] or e["reason"], None
        elif kind == "PodDeleted":
            _end(run, at, run.taken or "Deleted")
            del self._open[key]

    def _start(self, key: tuple[str, str], run: _Run) -> None:
        self._runs.append(run)
        self._open[key] = run

    def query(
        self,
        *,
        namespace: str | None = None,
        job: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = LIMIT,
    ) -> JSON:
        """{"items": segments overlapping [since, until] (the latest `limit` by start), "truncated": bool}."""
        items = []
        for run in self._runs:
            if namespace is not None and run.namespace != namespace:
                continue
            if not _overlaps(run, since, until):
                continue
            if not run.job:
                owner = job_of(run.pod, self._jobs.get(run.namespace, frozenset()))
                if owner:
                    run.job, run.segment = owner, None
            if job is not None and run.job != job:
                continue
            if run.segment is None:
                run.segment = _segment(run)
            items.append(run.segment)
        truncated = len(items) > limit
        if truncated:
            items = sorted(items, key=lambda s: float(s["start"]))[-limit:]
        return {"items": items, "truncated": truncated}


def pod_timeline(
    events: Iterable[JSON],
    *,
    namespace: str | None = None,
    job: str | None = None,
    since: float | None = None,
    until: float | None = None,
    limit: int = LIMIT,
) -> JSON:
    """{"items": segments overlapping [since, until] (the latest `limit` by start), "truncated": bool}.

    `events` are the store's events (any kinds; others are skipped) in the order they happened."""
    timeline = Timeline()
    timeline.add(events)
    return timeline.query(namespace=namespace, job=job, since=since, until=until, limit=limit)


def job_of(pod: str, jobs: set[str] | frozenset[str]) -> str:
    """The job a pod named `<job>-<task>-<index>` belongs to: the longest of `jobs` it starts with ("" if none)."""
    parts = pod.split("-")
    if len(parts) < 3 or not parts[-1].isdigit():
        return ""
    for cut in range(len(parts) - 2, 0, -1):  # the longest prefix first; the task and index stay behind
        name = "-".join(parts[:cut])
        if name in jobs:
            return name
    return ""


def _overlaps(run: _Run, since: float | None, until: float | None) -> bool:
    return not (since is not None and run.end is not None and run.end < since) and not (
        until is not None and run.start > until
    )


def _end(run: _Run, at: float, outcome: str, exit_code: int | None = None) -> None:
    run.end, run.outcome, run.exit_code, run.segment = at, outcome, exit_code, None


def _exit_code(message: str) -> int | None:
    """The code of an "exit code N" message (the control plane's PodPhase and PodRestart events)."""
    word = message.rpartition(" ")[2]
    return int(word) if message.startswith("exit code") and word.lstrip("-").isdigit() else None


def _segment(run: _Run) -> JSON:
    task = run.pod[len(run.job) + 1 :].rpartition("-")[0] if run.job else ""
    return {
        "namespace": run.namespace,
        "pod": run.pod,
        "job": run.job,
        "task": task,
        "node": run.node,
        "start": run.start,
        "end": run.end,
        "outcome": run.outcome,
        "exitCode": run.exit_code,
        "reason": run.reason,
        "restart": run.restart,
    }
