"""The simulation's result: per-job and per-pod timelines, events and summary metrics (the `-o json` contract).

A job's startTime is when its minAvailable-th pod was running (null if never);
endTime is when it reached Completed, Failed or Terminated; JCT = endTime −
submitTime. A job admission refused is listed with phase Rejected; a job whose
submitTime the clock has not reached (`--until`) is not listed. A job a TTL
deleted is listed as it last was. A pod appears once per attempt.
gpuUtilization is the GPU-seconds pods held over (cluster GPUs × makespan),
makespan = last end − first submit.

`collect` gathers the job rows and pod attempts once; `build` shapes them into
the report and `caldera simulate compare` computes its metrics from them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from caldera.core import objects as o
from caldera.core.resources import GPU
from caldera.sim.engine import Simulation
from caldera.sim.inputs import JobArrival
from caldera.system.history import PodAttempt
from caldera.utils.records import immutable

FINISHED = (o.COMPLETED, o.FAILED, o.TERMINATED)


@immutable
class JobRow:
    name: str
    namespace: str
    queue: str
    submit_time: float
    start_time: float | None
    end_time: float | None
    phase: str
    retry_count: int

    @property
    def jct(self) -> float | None:
        return None if self.end_time is None else self.end_time - self.submit_time

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "namespace": self.namespace,
            "queue": self.queue,
            "submitTime": self.submit_time,
            "startTime": self.start_time,
            "endTime": self.end_time,
            "phase": self.phase,
            "retryCount": self.retry_count,
        }


@dataclass(frozen=True, slots=True)
class Collected:
    """What a finished simulation did, before it is shaped into the report: for `build` and the metrics."""

    jobs: list[JobRow]  # in workload order; a job the clock has not reached is not there
    arrivals: list[JobArrival]  # the arrival of each job row, in the same order
    attempts: list[PodAttempt]  # every pod attempt; one still running ends None
    now: float


def collect(sim: Simulation) -> Collected:
    plane = sim.plane
    now = sim.clock.now()
    attempts = list(plane.attempts) + [
        PodAttempt(a.name, a.namespace, a.job, a.task, a.attempt, a.node, a.start, None, a.phase, None, a.resources)
        for a in plane.running.values()
    ]
    by_job: dict[str, list[PodAttempt]] = {}
    for a in attempts:
        by_job.setdefault(f"{a.namespace}/{a.job}", []).append(a)
    rejected = {a.job.key: a for a, _ in sim.rejected}
    jobs: list[JobRow] = []
    arrivals: list[JobArrival] = []
    for arrival in sim.workload.jobs:
        key = arrival.job.key
        job = sim.job(key)
        if job is not None:
            jobs.append(_job_row(arrival, job, by_job.get(key, [])))
        elif key in rejected:
            spec = arrival.job
            jobs.append(
                JobRow(spec.name, spec.namespace, spec.spec.queue, arrival.submit_time, None, None, "Rejected", 0)
            )
        else:
            continue
        arrivals.append(arrival)
    return Collected(jobs, arrivals, attempts, now)


def build(sim: Simulation) -> dict[str, Any]:
    plane = sim.plane
    c = collect(sim)
    jobs, attempts, now = c.jobs, c.attempts, c.now
    waiting = [p for p in plane.pods.values() if p.key not in plane.running and not p.node_name]
    pods = sorted(
        attempts, key=lambda a: (a.start if a.start is not None else math.inf, a.namespace, a.name, a.attempt)
    )
    pod_rows = [_pod_dict(a) for a in pods] + [
        {
            "name": p.name,
            "job": p.job,
            "task": p.task,
            "node": "",
            "startTime": None,
            "endTime": None,
            "phase": o.POD_PENDING,
            "exitCode": None,
            "attempt": plane.attempts_of(p.key),
        }
        for p in sorted(waiting, key=lambda p: p.key)
    ]
    events = [e.to_dict() for e in plane.events]
    events += [
        {
            "time": a.submit_time,
            "kind": "Rejected",
            "object": a.job.name,
            "node": "",
            "reason": "Rejected",
            "message": why,
        }
        for a, why in sim.rejected
    ]
    events.sort(key=lambda e: e["time"])  # stable: ties keep the order they happened in
    return {
        "jobs": [j.to_dict() for j in jobs],
        "pods": pod_rows,
        "events": events,
        "summary": summarize(jobs, attempts, _total_gpus(sim), now),
    }


def _job_row(arrival: JobArrival, job: o.Job, attempts: list[PodAttempt]) -> JobRow:
    status = job.status
    return JobRow(
        job.name,
        job.namespace,
        job.spec.queue,
        arrival.submit_time,
        _start_time(attempts, job.spec.min_available),
        status.completion_time if status.phase in FINISHED else None,
        status.phase,
        status.retry_count,
    )


def _start_time(attempts: list[PodAttempt], min_available: int) -> float | None:
    """The first instant at which min_available of the job's pods were running together."""
    changes: list[tuple[float, int]] = []
    for a in attempts:
        if a.start is None:
            continue
        changes.append((a.start, 1))
        if a.end is not None:
            changes.append((a.end, -1))
    running = 0
    for t, delta in sorted(changes, key=lambda c: (c[0], c[1])):
        running += delta
        if running >= max(min_available, 1):
            return t
    return None


def _pod_dict(a: PodAttempt) -> dict[str, Any]:
    return {
        "name": a.name,
        "job": a.job,
        "task": a.task,
        "node": a.node,
        "startTime": a.start,
        "endTime": a.end,
        "phase": a.phase,
        "exitCode": a.exit_code,
        "attempt": a.attempt,
    }


def _total_gpus(sim: Simulation) -> float:
    return sum(n.allocatable.get(GPU, 0.0) for n in sim.cluster.nodes) / 1000.0


def summarize(jobs: list[JobRow], attempts: list[PodAttempt], total_gpus: float, now: float) -> dict[str, Any]:
    jcts = sorted(j.jct for j in jobs if j.jct is not None)
    delays = [j.start_time - j.submit_time for j in jobs if j.start_time is not None]
    ends = [j.end_time for j in jobs if j.end_time is not None]
    first = min((j.submit_time for j in jobs), default=0.0)
    makespan = (max(ends) - first) if ends else None
    used = 0.0
    for a in attempts:
        if a.start is None:
            continue
        gpus = (a.resources or {}).get(GPU, 0.0) / 1000.0
        used += gpus * ((a.end if a.end is not None else now) - a.start)
    util = used / (total_gpus * makespan) if total_gpus and makespan else 0.0
    return {
        "jobs": len(jobs),
        "avgJCT": round(sum(jcts) / len(jcts), 6) if jcts else None,
        "p99JCT": percentile(jcts, 99) if jcts else None,
        "avgQueueDelay": round(sum(delays) / len(delays), 6) if delays else None,
        "makespan": makespan,
        "gpuUtilization": round(util, 6),
    }


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]
