"""Several scheduler policies on the same cluster and workload: one simulation each, one row of metrics each.

A policy is a name from `caldera.scheduler.policies` (`load_policy`, when that
module is there) or a scheduler configuration file. Every run gets the same
`Inputs` (same jobs, same seed), so rows differ only by what the policy did.

Scheduler CPU time is measured around each scheduling cycle by `TimedScheduler`,
a `Scheduler` whose `run_cycle` is wrapped: the engine is not touched, and the
policy's decisions are not changed by being measured. CPU and wall times are the
only numbers of a run that are not the same on every run.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from caldera.core.errors import FieldError, ValidationError
from caldera.core.resources import GPU
from caldera.scheduler.config import SchedulerConfig, default_config, parse_config
from caldera.scheduler.scheduler import Scheduler
from caldera.scheduler.session import CycleResult
from caldera.scheduler.state import ClusterState
from caldera.sim import metrics as m
from caldera.sim.costs import FREE, Costs
from caldera.sim.engine import Simulation
from caldera.sim.inputs import JobArrival, read_text
from caldera.sim.report import Collected, collect
from caldera.sim.sources import Inputs

POLICIES_MODULE = "caldera.scheduler.policies"
FALLBACK_POLICIES = ("caldera-default",)  # what exists without the policies module: the default config


class TimedScheduler(Scheduler):
    """The scheduler, with the CPU time of each cycle added up and the virtual time reported after it."""

    def __init__(self, config: SchedulerConfig, on_cycle: Callable[[float], None] | None = None) -> None:
        super().__init__(config)
        self.cycles = 0
        self.cpu_seconds = 0.0
        self.on_cycle = on_cycle

    def run_cycle(self, state: ClusterState, now: float) -> CycleResult:
        # process_time, not the clock: this measures what a cycle costs, it decides nothing.
        t0 = time.process_time()
        result = super().run_cycle(state, now)
        self.cpu_seconds += time.process_time() - t0
        self.cycles += 1
        if self.on_cycle is not None:
            self.on_cycle(now)
        return result


def _policies_module() -> ModuleType | None:
    try:
        return importlib.import_module(POLICIES_MODULE)
    except ModuleNotFoundError as e:
        if e.name != POLICIES_MODULE:
            raise
        return None


def available_policies() -> tuple[str, ...]:
    """Every shipped policy by name (the policies module's POLICIES), or the default alone without it."""
    mod = _policies_module()
    names = getattr(mod, "POLICIES", None) if mod is not None else None
    return tuple(str(n) for n in names) if names else FALLBACK_POLICIES


def load_policy(name: str) -> tuple[str, SchedulerConfig]:
    """(display name, configuration) of a policy name or a configuration file."""
    path = Path(name)
    label = path.stem if path.suffix in (".yaml", ".yml") else name
    mod = _policies_module()
    if mod is not None:
        config = mod.load_policy(name)
        if not isinstance(config, SchedulerConfig):
            raise TypeError(f"load_policy({name!r}) returned {type(config).__name__}, not a SchedulerConfig")
        return label, config
    if path.is_file():
        return label, parse_config(read_text(name), name)
    if name in FALLBACK_POLICIES:
        return name, default_config()
    raise ValidationError([FieldError("--policies", f"no policy {name!r} (policies: {', '.join(FALLBACK_POLICIES)})")])


@dataclass(frozen=True, slots=True)
class PolicyRun:
    policy: str
    jobs: int
    finished: int
    avg_jct: float | None
    median_jct: float | None
    p99_jct: float | None
    avg_queue_delay: float | None
    p99_queue_delay: float | None
    makespan: float | None
    gpu_utilisation: float
    jain: float | None
    longest_wait: Mapping[str, float]
    preemptions: int
    lost_gpu_hours: float
    idle_gpu_hours: float
    cycles: int
    cpu_seconds: float
    wall_seconds: float
    jcts: list[float]
    utilisation: m.StepSeries
    shares: m.Shares
    overhead_gpu_hours: float = 0.0

    @property
    def cpu_ms_per_cycle(self) -> float | None:
        return 1000.0 * self.cpu_seconds / self.cycles if self.cycles else None

    @property
    def largest_class(self) -> tuple[str, float] | None:
        """The largest size class that has jobs, and its longest wait."""
        return next(((c, self.longest_wait[c]) for c in reversed(m.SIZE_CLASSES) if c in self.longest_wait), None)

    def numbers(self) -> dict[str, Any]:
        """The run's results as plain numbers (for results.json); the last three are not deterministic."""
        return {
            "policy": self.policy,
            "jobs": self.jobs,
            "finished": self.finished,
            "avgJCT": self.avg_jct,
            "medianJCT": self.median_jct,
            "p99JCT": self.p99_jct,
            "avgQueueDelay": self.avg_queue_delay,
            "p99QueueDelay": self.p99_queue_delay,
            "makespan": self.makespan,
            "gpuUtilization": self.gpu_utilisation,
            "jain": self.jain,
            "longestWait": dict(self.longest_wait),
            "preemptions": self.preemptions,
            "lostGpuHours": self.lost_gpu_hours,
            "idleGpuHours": self.idle_gpu_hours,
            "overheadGpuHours": self.overhead_gpu_hours,
            "cycles": self.cycles,
            "cpuMsPerCycle": self.cpu_ms_per_cycle,
            "wallSeconds": self.wall_seconds,
        }


def job_gpus(arrival: JobArrival) -> float:
    return sum(t.replicas * t.template.spec.requests().get(GPU, 0.0) for t in arrival.job.spec.tasks) / 1000.0


def records(c: Collected, accounting: Mapping[str, Mapping[str, Any]] | None = None) -> list[m.JobRecord]:
    """Job records for the metrics; `accounting` (job key → its per-job fields) adds preemptions and lost work."""
    out = []
    for row, arrival in zip(c.jobs, c.arrivals, strict=True):
        extra = (accounting or {}).get(arrival.job.key, {})
        out.append(
            m.JobRecord(
                row.name,
                row.queue,
                job_gpus(arrival),
                row.submit_time,
                row.start_time,
                row.end_time,
                int(extra.get("preemptions", 0) or 0),
                float(extra.get("lostGpuSeconds", 0.0) or 0.0),
                float(extra.get("idleGpuSeconds", 0.0) or 0.0),
                float(extra.get("overheadGpuSeconds", 0.0) or 0.0),
                float(extra["runSeconds"]) if "runSeconds" in extra else None,
            )
        )
    return out


def holdings(c: Collected, queue_of: Mapping[str, str]) -> list[m.Holding]:
    return [
        m.Holding(
            queue_of.get(f"{a.namespace}/{a.job}", ""),
            (a.resources or {}).get(GPU, 0.0) / 1000.0,
            a.start,
            a.end if a.end is not None else c.now,
        )
        for a in c.attempts
        if a.start is not None and (a.resources or {}).get(GPU, 0.0) > 0
    ]


def job_accounting(sim: Simulation) -> dict[str, Mapping[str, Any]]:
    """Per-job preemption accounting (`preemptions`, `lostGpuSeconds`, `idleGpuSeconds`) where the engine
    keeps it (`Simulation.work_report`); none from an engine without it, and the metrics count 0."""
    report = getattr(sim, "work_report", None)
    if not callable(report):
        return {}
    out: dict[str, Mapping[str, Any]] = {}
    for arrival in sim.workload.jobs:
        if sim.job(arrival.job.key) is None:
            continue  # rejected, or not submitted before --until
        fields = report(arrival.job.key)
        to_dict = getattr(fields, "to_dict", None)
        if callable(to_dict):
            out[arrival.job.key] = to_dict()
    return out


def run_policy(
    label: str,
    config: SchedulerConfig,
    inputs: Inputs,
    *,
    until: float | None = None,
    on_cycle: Callable[[float], None] | None = None,
    costs: Costs = FREE,
) -> PolicyRun:
    scheduler = TimedScheduler(config, on_cycle)
    sim = Simulation(inputs.cluster, inputs.workload, scheduler, until=until, costs=costs)
    t0 = time.perf_counter()
    sim.run()
    wall = time.perf_counter() - t0
    c = collect(sim)
    return measure(label, c, inputs, job_accounting(sim), scheduler.cycles, scheduler.cpu_seconds, wall)


def measure(
    label: str,
    c: Collected,
    inputs: Inputs,
    accounting: Mapping[str, Mapping[str, Any]],
    cycles: int,
    cpu_seconds: float,
    wall_seconds: float,
) -> PolicyRun:
    jobs = records(c, accounting)
    queue_of = {a.job.key: r.queue for r, a in zip(c.jobs, c.arrivals, strict=True)}
    held = holdings(c, queue_of)
    total = inputs.total_gpus
    first = min((j.submit for j in jobs), default=0.0)
    span = m.makespan(jobs)
    horizon = max(c.now, first)
    util = m.utilisation(held, total, first, horizon)
    weights = {q.name: float(q.spec.weight) for q in inputs.cluster.queues}
    shares = m.shares(jobs, held, weights, total, horizon)
    jct = m.jcts(jobs)
    delays = m.queue_delays(jobs)
    return PolicyRun(
        policy=label,
        jobs=len(jobs),
        finished=len(jct),
        avg_jct=m.mean(jct),
        median_jct=m.median(jct),
        p99_jct=m.percentile(jct, 99),
        avg_queue_delay=m.mean(delays),
        p99_queue_delay=m.percentile(delays, 99),
        makespan=span,
        gpu_utilisation=float(util.mean(first, first + span)) if span else 0.0,
        jain=m.jain_over_time(shares),
        longest_wait=m.longest_waits(jobs, horizon),
        preemptions=sum(j.preemptions for j in jobs),
        lost_gpu_hours=sum(j.lost_gpu_seconds for j in jobs) / 3600.0,
        idle_gpu_hours=sum(j.idle_gpu_seconds for j in jobs) / 3600.0,
        overhead_gpu_hours=sum(j.overhead_gpu_seconds for j in jobs) / 3600.0,
        cycles=cycles,
        cpu_seconds=cpu_seconds,
        wall_seconds=wall_seconds,
        jcts=sorted(jct),
        utilisation=util,
        shares=shares,
    )
