"""What a simulation runs on, from the command line's words: a cluster, a workload and how they were chosen.

`--workload FILE` is issue 2's workload YAML, unchanged, and needs `--cluster`.
`--trace philly[:PATH]` and `--trace alibaba-openb[:PATH]` read a public trace
(by default from the shared traces, see `presets.traces_dir`), keep the part the
sampling options select, and build one job per trace job. A trace brings its
own default cluster: `philly-64` for the Pollux/Sia sample, `philly-full` for
other Philly runs, and for Alibaba the node list next to its pod list. A queue
the trace names and the cluster does not declare is added with weight 1.

Malformed trace rows are skipped and returned as warnings (one per row, by line
number); the caller prints them and the count, and the replay goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from caldera.core import objects as o
from caldera.core.errors import FieldError, ValidationError
from caldera.core.resources import GPU
from caldera.sim.inputs import Cluster, Workload, check_references, load, parse_cluster, parse_workload, read_yaml
from caldera.sim.openb import NODE_LIST, openb_arrivals, read_openb_nodes, read_openb_pods
from caldera.sim.pollux import pollux_sample
from caldera.sim.presets import OPENB_PODS, PHILLY_TRACE, preset_nodes, shared_trace, traces_dir
from caldera.sim.sampling import Window, take
from caldera.sim.traces import TraceRow, philly_arrivals, read_philly

TRACE_KINDS = ("philly", "alibaba-openb")
SAMPLES = ("pollux",)


@dataclass(frozen=True, slots=True)
class Selection:
    """The sampling options; the defaults select the whole trace."""

    window: Window | None = None
    jobs: int | None = None
    rate_scale: float = 1.0
    sample: str | None = None  # "pollux"
    seed: int = 0
    checkpoint: float | None = None  # every trace job checkpoints this often (seconds)
    elastic: bool = False  # every trace job elastic (traces.elastic_range_of)

    @property
    def empty(self) -> bool:
        return self == Selection(seed=self.seed)


@dataclass(frozen=True, slots=True)
class Inputs:
    cluster: Cluster
    workload: Workload
    cluster_words: str  # what cluster, for reports
    trace_words: str  # what workload or trace
    sample_words: str  # which part of it
    warnings: list[str] = field(default_factory=list)  # malformed rows: "PATH: line N: rule"
    notes: list[str] = field(default_factory=list)  # what was left out on purpose, and why

    @property
    def total_gpus(self) -> float:
        return sum(n.allocatable.get(GPU, 0.0) for n in self.cluster.nodes) / 1000.0


def parse_trace(text: str) -> tuple[str, Path]:
    """`philly`, `philly:PATH`, `alibaba-openb`, `alibaba-openb:PATH` → (kind, path)."""
    kind, _, path = text.partition(":")
    if kind not in TRACE_KINDS:
        raise ValidationError([FieldError("--trace", f"{kind!r} is not a trace kind ({', '.join(TRACE_KINDS)})")])
    if path:
        return kind, Path(path)
    return kind, shared_trace(PHILLY_TRACE if kind == "philly" else OPENB_PODS)


def load_inputs(cluster: str | None, workload: str | None, trace: str | None, sel: Selection) -> Inputs:
    if (workload is None) == (trace is None):
        raise ValidationError([FieldError("", "give exactly one of --workload FILE and --trace KIND[:PATH]")])
    if workload is not None:
        if not sel.empty:
            raise ValidationError(
                [
                    FieldError(
                        "",
                        "--window, --jobs, --rate-scale, --sample, --checkpoint-interval and --elastic apply to a --trace",
                    )
                ]
            )
        if cluster is None:
            raise ValidationError([FieldError("", "--cluster is required with --workload")])
        if cluster.startswith("preset:"):
            c, words = _cluster(cluster, "")
            w = parse_workload(read_yaml(workload), workload)
            check_references(c, w, workload)
            return Inputs(c, w, words, f"workload {workload}", "all of it")
        c, w = load(cluster, workload)
        return Inputs(c, w, f"cluster file {cluster}", f"workload {workload}", "all of it")
    assert trace is not None
    kind, path = parse_trace(trace)
    if kind == "philly":
        return _philly(cluster, path, sel)
    return _openb(cluster, path, sel)


def _cluster(spec: str | None, default: str, openb_dir: Path | None = None) -> tuple[Cluster, str]:
    spec = spec or f"preset:{default}"
    if spec.startswith("preset:"):
        nodes, words = preset_nodes(spec.removeprefix("preset:"), openb_dir=openb_dir)
        return Cluster(tuple(nodes), (), ()), words
    return parse_cluster(read_yaml(spec), spec), f"cluster file {spec}"


def _with_queues(cluster: Cluster, names: set[str]) -> Cluster:
    declared = {q.name for q in cluster.queues}
    extra = [o.Queue(o.ObjectMeta(name=n, namespace="")) for n in sorted(names - declared - {"default"})]
    return Cluster(cluster.nodes, cluster.queues + tuple(extra), cluster.priority_classes)


def _trace_words(what: str, path: Path) -> str:
    """The trace's path, relative to the shared traces when it is one of them (not this machine's layout)."""
    try:
        return f"{what} {path.resolve().relative_to(traces_dir().resolve())} (shared traces)"
    except ValueError:
        return f"{what} {path}"


def _checkpoint_words(words: str, sel: Selection) -> str:
    if sel.checkpoint is None:
        return words
    if sel.checkpoint == 0:
        return f"{words}, every job checkpointed as it is stopped (a preempted job loses nothing)"
    return f"{words}, every job checkpointed every {sel.checkpoint:g} s"


def _warnings(path: Path, errors: list[FieldError]) -> list[str]:
    return [f"{path}: {e}" for e in errors]


def _philly(cluster_spec: str | None, path: Path, sel: Selection) -> Inputs:
    rows, errors = read_philly(path)
    cluster, cwords = _cluster(cluster_spec, "philly-64" if sel.sample == "pollux" else "philly-full")
    gpus = sum(n.allocatable.get(GPU, 0.0) for n in cluster.nodes) / 1000.0
    if sel.sample == "pollux":
        drawn = pollux_sample(
            rows,
            seed=sel.seed,
            max_gpus=gpus,
            jobs=sel.jobs or 160,
            window=sel.window,
            rate_scale=sel.rate_scale,
        )
        # A drawn job arrives as its row did (time of day folded) and runs the work of its stand-in.
        chosen = [TraceRow(d.row.line, d.at, d.work.duration, d.work.gpus, d.row.queue) for d in drawn.jobs]
        origin, scale, words = 0.0, drawn.rate_scale, drawn.description
    elif sel.sample is not None:
        raise ValidationError([FieldError("--sample", f"{sel.sample!r} is not a sample ({', '.join(SAMPLES)})")])
    else:
        sample = take(rows, window=sel.window, jobs=sel.jobs, rate_scale=sel.rate_scale)
        chosen, origin, scale, words = sample.rows, sample.origin, sample.rate_scale, sample.description
    arrivals = tuple(philly_arrivals(chosen, origin, scale, sel.checkpoint, int(gpus) if sel.elastic else 0))
    if sel.elastic:
        words += ", every job elastic (half its GPUs to where its goodput peaks)"
    notes = []
    too_big = sum(1 for r in chosen if r.gpus > gpus)
    if too_big:
        notes.append(f"{too_big} jobs need more GPUs than the cluster's {gpus:g}: they can never start")
    return Inputs(
        _with_queues(cluster, {r.queue for r in chosen}),
        Workload(arrivals),
        cwords,
        _trace_words("Philly trace", path),
        _checkpoint_words(words, sel),
        _warnings(path, errors),
        notes,
    )


def _openb(cluster_spec: str | None, path: Path, sel: Selection) -> Inputs:
    trace = read_openb_pods(path)
    if sel.elastic:
        raise ValidationError([FieldError("--elastic", "elastic jobs are made from the Philly trace's gangs")])
    if sel.sample is not None:
        raise ValidationError([FieldError("--sample", "the Pollux/Sia sample is drawn from the Philly trace")])
    if cluster_spec is None:
        nodes_path = path.parent / NODE_LIST
        nodes, node_errors = read_openb_nodes(nodes_path)
        if node_errors:
            raise ValidationError(node_errors, str(nodes_path))
        cluster, cwords = Cluster(tuple(nodes), (), ()), f"Alibaba node list {nodes_path} ({len(nodes):,} nodes)"
    else:
        cluster, cwords = _cluster(cluster_spec, "openb", openb_dir=path.parent)
    sample = take(trace.pods, window=sel.window, jobs=sel.jobs, rate_scale=sel.rate_scale, times_are_dates=False)
    notes = [f"{trace.never_scheduled} pods never scheduled in the trace (no run time) left out"]
    censored = sum(1 for p in sample.rows if p.censored)
    if censored:
        notes.append(f"{censored} pods still running at the trace's end run for their observed time only")
    origin = 0.0 if sel.window is None else sample.origin  # the trace's times are already seconds from its start
    return Inputs(
        cluster,
        Workload(tuple(openb_arrivals(sample.rows, origin, sample.rate_scale, sel.checkpoint))),
        cwords,
        _trace_words("Alibaba openb trace", path),
        _checkpoint_words(sample.description, sel),
        _warnings(path, trace.errors),
        notes,
    )
