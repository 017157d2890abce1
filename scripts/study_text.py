"""docs/trace-study.md from the comparison runs: tables, plots and a reading written from the numbers.

Every sentence that states a result is computed here from results.json files,
so regenerating the study after a policy change cannot leave a stale claim.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from study_words import FOOTER, HEADER, PUBLISHED_NOTE  # scripts/study_words.py, next to this file

BASELINES = ("fifo-nogang", "kube-default", "gang-fifo-backfill", "volcano-default")
ORACLES = ("srtf", "srtf-gpu")
ORACLE = "srtf-gpu"  # the stronger yardstick, in the published-numbers table
DEFAULT = "caldera-default"
# Tiresias' simulator, dlas-gpu, on the 8 seeds' job lists (scripts/tiresias_jobs.py), free preemption: run here on
# 7 Dec (docs/policies.md); issue 15 gave 1.63 h, which that run did not reproduce (its other two figures it did)
TIRESIAS_DLAS_GPU = 1.651 * 3600
Run = tuple[dict[str, Any], float, str]  # results.json, wall seconds of the command, the command


@dataclass(frozen=True)
class Part:
    title: str
    slug: str
    seeds: Sequence[int]
    runs: Sequence[Run]
    ran: str = ""  # when its runs were made (UTC), as runs.json keeps it; "" before it was recorded


def _h(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 3600:,.2f}"


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def _by_policy(part: Part) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for results, _, _ in part.runs:
        for p in results["policies"]:
            out.setdefault(p["policy"], []).append(p)
    return out


def _wait_goal(part: Part, rows: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The largest size class's longest wait under caldera-default against 2× its median run time, per sample."""
    waits = [_largest_wait(p) for p in rows[DEFAULT]]
    worst = max((w for w in waits if w is not None), default=None)
    if worst is None:
        return []
    head = (
        f"- Longest wait of a job of the largest size class under caldera-default (waits after preemptions "
        f"included): {_h(worst)} h at worst, {_h(_mean(waits))} h on average over the samples"
    )
    checks: list[tuple[int, float, float]] = []  # (seed, wait, median run) of the samples that say
    for (results, _, _), seed in zip(part.runs, part.seeds, strict=True):
        p = next(q for q in results["policies"] if q["policy"] == DEFAULT)
        medians = results.get("medianRunByClass") or {}
        cls = next((c for c in (">32", "9-32", "5-8", "2-4", "1") if c in p["longestWait"]), None)
        if cls is not None and cls in medians:
            checks.append((seed, p["longestWait"][cls], medians[cls]))
    if not checks:
        return [head + " (the reports do not give run times per class: the goal is not checked)."]
    missed = [(seed, w, m) for seed, w, m in checks if w > 2 * m]
    ratios = ", ".join(f"{seed}: {w / m:.2f}" for seed, w, m in checks if m > 0)
    verdict = "met" if not missed else "not met"
    where = "; ".join(f"seed {seed}: {_h(w)} h against 2 × {_h(m)} h" for seed, w, m in missed)
    return [
        head + ".",
        f"- Goal (that wait ≤ 2× the class's median run time, sample by sample): **{verdict}**: held in "
        f"{len(checks) - len(missed)} of {len(checks)} samples{f' (missed on {where})' if missed else ''}; "
        f"wait ÷ median run time by seed: {ratios}.",
    ]


def _largest_wait(p: dict[str, Any]) -> float | None:
    waits = p["longestWait"]
    return next((waits[c] for c in (">32", "9-32", "5-8", "2-4", "1") if c in waits), None)


def _table(rows: dict[str, list[dict[str, Any]]], reference: str) -> str:
    ref = _mean([p["avgJCT"] for p in rows.get(reference, [])])
    head = [
        "policy",
        "avg JCT (h)",
        "median JCT (h)",
        "p99 JCT (h)",
        "avg queue delay (h)",
        "makespan (h)",
        "GPU util",
        "Jain",
        "max wait, largest class (h)",
        "preemptions",
        "lost GPU-h",
        "idle GPU-h",
        "overhead GPU-h",
        f"{reference} avg JCT ÷ this",
    ]
    lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    for name, ps in rows.items():
        avg = _mean([p["avgJCT"] for p in ps])
        util = _mean([p["gpuUtilization"] for p in ps])
        jain = _mean([p["jain"] for p in ps])
        cells = [
            name,
            _h(avg),
            _h(_mean([p["medianJCT"] for p in ps])),
            _h(_mean([p["p99JCT"] for p in ps])),
            _h(_mean([p["avgQueueDelay"] for p in ps])),
            _h(_mean([p["makespan"] for p in ps])),
            "-" if util is None else f"{100 * util:.1f} %",
            "-" if jain is None else f"{jain:.3f}",
            _h(_mean([_largest_wait(p) for p in ps])),
            f"{sum(p['preemptions'] for p in ps):,}",
            f"{sum(p['lostGpuHours'] for p in ps):,.1f}",
            f"{sum(p.get('idleGpuHours', 0.0) for p in ps):,.1f}",
            f"{sum(p.get('overheadGpuHours', 0.0) for p in ps):,.1f}",
            "-" if not (ref and avg) else f"{ref / avg:.2f}×",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _per_seed(part: Part) -> str:
    names = [p["policy"] for p in part.runs[0][0]["policies"]]
    head = ["seed", "work (GPU-h)", "load", *(f"{n} avg JCT (h)" for n in names), "fifo-nogang avg queue delay (h)"]
    lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    for seed, (results, _, _) in zip(part.seeds, part.runs, strict=True):
        by = {p["policy"]: p for p in results["policies"]}
        fifo = by.get("fifo-nogang", {}).get("avgQueueDelay")
        cells = [
            f"[{seed}](trace-study/{part.slug}-seed-{seed}/report.md)",
            _work(results),
            _load(results),
            *(_h(by[n]["avgJCT"]) for n in names),
            _h(fifo),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _work(results: dict[str, Any]) -> str:
    work = results.get("workGpuHours")
    return "-" if work is None else f"{work:,.0f}"


def _load(results: dict[str, Any]) -> str:
    """The sample's work ÷ what the cluster does in the span of its arrivals (8 hours, less when compressed)."""
    work, gpus, span = results.get("workGpuHours"), results.get("clusterGpus"), _arrival_hours(results)
    return "-" if not (work and gpus and span) else f"{work / (gpus * span):.2f}"


def _arrival_hours(results: dict[str, Any]) -> float | None:
    sample = str(results.get("sample", ""))
    if "between 02:00 and 10:00" not in sample:
        return None
    scale = 1.0
    if "× as fast" in sample:
        scale = float(sample.rsplit("arrivals ", maxsplit=1)[-1].split("×", maxsplit=1)[0])
    return 8.0 / scale


def _ratio(rows: dict[str, list[dict[str, Any]]], a: str, b: str) -> float | None:
    """Mean avg JCT of a ÷ that of b: how many times lower b's is."""
    x, y = _mean([p["avgJCT"] for p in rows.get(a, [])]), _mean([p["avgJCT"] for p in rows.get(b, [])])
    return x / y if x and y else None


def _best_caldera(rows: dict[str, list[dict[str, Any]]]) -> str | None:
    ours = [n for n in rows if n not in (*BASELINES, *ORACLES)]
    return min(ours, key=lambda n: _mean([p["avgJCT"] for p in rows[n]]) or float("inf"), default=None)


def _fmt_ratio(r: float | None, baseline: str) -> str:
    """A ratio of average JCTs (baseline ÷ policy) in words: "1.20× lower than X (17 % less)"."""
    if r is None:
        return f"not comparable with {baseline}'s"
    if abs(r - 1) < 0.005:
        return f"the same as {baseline}'s (within 0.5 %)"
    if r >= 1:
        return f"{r:.2f}× lower than {baseline}'s ({100 * (1 - 1 / r):.0f} % less)"
    return f"{1 / r:.2f}× higher than {baseline}'s"


def _reading(part: Part, rows: dict[str, list[dict[str, Any]]]) -> list[str]:
    out = []
    fifo = rows.get("fifo-nogang", [])
    idle = [seed for seed, p in zip(part.seeds, fifo, strict=False) if (p["avgQueueDelay"] or 0) < 60]
    if fifo and len(part.seeds) > 1 and idle:
        out.append(
            f"- Load: in {len(idle)} of {len(part.seeds)} samples the average job under fifo-nogang waits less than "
            "a minute to start: there JCT is the jobs' own run time and no policy can do much. The differences come "
            "from the busier samples."
        )
    best = _best_caldera(rows)
    if best:
        r_fifo, r_volc = _ratio(rows, "fifo-nogang", best), _ratio(rows, "volcano-default", best)
        out.append(
            f"- caldera's best non-oracle policy here is **{best}**: average JCT {_fmt_ratio(r_fifo, 'fifo-nogang')} "
            f"and {_fmt_ratio(r_volc, 'volcano-default')} (ratios of the mean average JCT)."
        )
    out += _goal(part, rows, best)
    out += _default_goals(part, rows)
    for oracle in ORACLES:
        if oracle in rows:
            out.append(
                f"- The oracle {oracle} (knows every job's duration: a yardstick, not a policy, nor a lower bound) "
                f"has an average JCT {_fmt_ratio(_ratio(rows, 'fifo-nogang', oracle), 'fifo-nogang')}."
            )
    jains = {n: _mean([p["jain"] for p in ps]) for n, ps in rows.items()}
    known = {n: j for n, j in jains.items() if j is not None}
    if known:
        lo, hi = min(known, key=lambda n: known[n]), max(known, key=lambda n: known[n])
        out.append(
            f"- Fairness between the virtual clusters (Jain's index of held ÷ deserved share, 1 = fair): "
            f"highest {hi} {known[hi]:.3f}, lowest {lo} {known[lo]:.3f}."
        )
    lost = {n: sum(p["lostGpuHours"] for p in ps) for n, ps in rows.items()}
    if any(lost.values()):
        worst = max(lost, key=lambda n: lost[n])
        out.append(
            f"- Preemption has a price here: {worst} threw away {lost[worst]:,.1f} GPU-hours of progress in all "
            "(a preempted job without a checkpoint restarts from zero)."
        )
    idle_h = sum(p.get("idleGpuHours", 0.0) for p in fifo)
    if idle_h:
        work = sum(r.get("workGpuHours") or 0.0 for r, _, _ in part.runs)
        share = f" ({100 * idle_h / work:.0f} % of the samples' work)" if work else ""
        waits = {n: _mean([p["avgQueueDelay"] for p in rows[n]]) for n in ("fifo-nogang", "volcano-default")}
        behind = ""
        if all(w is not None for w in waits.values()):
            behind = (
                f", and the jobs behind them waited: {_h(waits['fifo-nogang'])} h on average to start, "
                f"against {_h(waits['volcano-default'])} h under volcano-default"
            )
        out.append(
            f"- fifo-nogang binds pods one at a time: partly placed gangs held {idle_h:,.1f} GPU-hours doing nothing "
            f"while waiting for their missing pods{share}{behind}; the gang policies hold none."
        )
    return out


def _default_goals(part: Part, rows: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Issue 15's goals for caldera-default on this part, met or missed by how much."""
    if DEFAULT not in rows:
        return []
    others = [n for n in rows if n not in ORACLES and n != DEFAULT]
    wins, misses = 0, []
    for i, seed in enumerate(part.seeds):
        mine = rows[DEFAULT][i]["avgJCT"]
        rival = min(others, key=lambda n: rows[n][i]["avgJCT"] or float("inf"), default=None)
        if rival is None or mine is None:
            continue
        theirs = rows[rival][i]["avgJCT"]
        if theirs is None or mine <= theirs + 1e-6:
            wins += 1
        else:
            misses.append(f"seed {seed}: {rival} {_h(theirs)} h against {_h(mine)} h")
    out = [
        f"- Goal (caldera-default the lowest average JCT of every non-oracle policy, sample by sample): "
        f"**{'met' if not misses else 'not met'}**: lowest in {wins} of {len(part.seeds)} samples"
        + (f" (missed on {'; '.join(misses)})" if misses else "")
        + "."
    ]
    mine_avg = _mean([p["avgJCT"] for p in rows[DEFAULT]])
    yard = [n for n in ORACLES if n in rows]
    if yard and mine_avg:
        best = min(yard, key=lambda n: _mean([p["avgJCT"] for p in rows[n]]) or float("inf"))
        ratio = mine_avg / (_mean([p["avgJCT"] for p in rows[best]]) or mine_avg)
        out.append(
            f"- Goal (within 1.1× of the best yardstick): **{'met' if ratio <= 1.1 else 'not met'}**: "
            f"{ratio:.2f}× {best}'s mean average JCT."
        )
    jain = _mean([p["jain"] for p in rows[DEFAULT]])
    if jain is not None:
        out.append(f"- Goal (Jain's index ≥ 0.9): **{'met' if jain >= 0.9 else 'not met'}**: {jain:.3f}.")
    out.extend(_wait_goal(part, rows))
    if part.slug == "pollux-free" and mine_avg:
        out.append(
            f"- Against Tiresias' own simulator (dlas-gpu on the same 8 job lists, free preemption, run here: "
            f"{TIRESIAS_DLAS_GPU / 3600:.3f} h; issue 15 gave 1.63 h, not reproduced: docs/policies.md): "
            f"caldera-default {mine_avg / 3600:.3f} h, {'ahead' if mine_avg < TIRESIAS_DLAS_GPU else 'behind'} by "
            f"{100 * abs(mine_avg - TIRESIAS_DLAS_GPU) / TIRESIAS_DLAS_GPU:.1f} %."
        )
    return out


def _goal(part: Part, rows: dict[str, list[dict[str, Any]]], best: str | None) -> list[str]:
    """Issue 5's goal on this part: best non-oracle ≥ 3× lower average JCT than fifo-nogang, and below volcano's."""
    if not best or "fifo-nogang" not in rows:
        return []
    r_fifo, r_volc = _ratio(rows, "fifo-nogang", best), _ratio(rows, "volcano-default", best)
    run = _mean([r.get("meanRunTime") for r, _, _ in part.runs])
    fifo = _mean([p["avgJCT"] for p in rows["fifo-nogang"]])
    met = r_fifo is not None and r_fifo >= 3 and r_volc is not None and r_volc > 1
    out = [
        f"- Goal (≥ 3× lower average JCT than fifo-nogang, and lower than volcano-default): "
        f"**{'met' if met else 'not met'}** ({best}: {r_fifo or 0:.2f}× and {r_volc or 0:.2f}×, ratios of the "
        f"average JCT over all {len(part.seeds)} samples' jobs){_spread(rows, best)}."
    ]
    if run and fifo:
        out.append(
            f"- The ceiling: a job cannot finish sooner than it runs, so no policy's average JCT is below the jobs' "
            f"average run time ({run / 3600:.2f} h here); against fifo-nogang's {fifo / 3600:.2f} h the largest "
            f"ratio any policy could reach is {fifo / run:.2f}×. What is left above it is queueing, and "
            f"{best} removes {_share_removed(fifo, run, rows, best)} of fifo-nogang's."
        )
    return out


def _spread(rows: dict[str, list[dict[str, Any]]], best: str) -> str:
    """How the ratio to fifo-nogang varies from sample to sample."""
    ratios = [f["avgJCT"] / b["avgJCT"] for f, b in zip(rows["fifo-nogang"], rows[best], strict=True) if b["avgJCT"]]
    if len(ratios) < 2:
        return ""
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    return f"; sample by sample {min(ratios):.2f}× to {max(ratios):.2f}× (geometric mean {geo:.2f}×)"


def _share_removed(fifo: float, run: float, rows: dict[str, list[dict[str, Any]]], best: str) -> str:
    mine = _mean([p["avgJCT"] for p in rows[best]])
    if mine is None or fifo <= run:
        return "-"
    return f"{100 * (fifo - mine) / (fifo - run):.0f} %"


def write_study(doc: Path, parts: Sequence[Part], policies: Sequence[str], demand: tuple[int, float]) -> None:
    peak, mean_demand = demand
    text = [HEADER.format(policies=", ".join(policies)), ""]
    summary: list[tuple[str, dict[str, list[dict[str, Any]]]]] = []
    for part in parts:
        rows = _by_policy(part)
        summary.append((part.title, rows))
        text += [f"## {part.title}", ""]
        when = f"run {part.ran}" if part.ran else "run before run dates were recorded"
        text += [f"*Seeds {', '.join(map(str, part.seeds))}; {when}.*", ""]
        if part.slug == "full":
            results, seconds, cmd = part.runs[0]
            text += [
                f"`{cmd}` ({seconds:,.0f} s for all of it)",
                "",
                f"- {results['sample']}; {results['cluster']}",
                "",
            ]
            text += [_table(rows, "fifo-nogang"), ""]
            walls = ", ".join(f"{p['policy']} {p['wallSeconds']:,.0f} s" for p in results["policies"])
            text += [
                f"Replay time of the simulation alone (trace loading and report excluded), per policy: {walls}. "
                "Goal: ≤ 60 s on the 2-core machine.",
                "",
                f"Reading: if every job started the moment it was submitted, Philly's jobs would hold at most "
                f"{peak:,} GPUs at once ({mean_demand:,.0f} on average), under the 2,488 of the cluster. So nothing "
                "waits, every policy gives each job its own run time, and the table shows the same JCTs for all: on "
                "its own hardware the derived trace (82,247 of Philly's 117,325 jobs) never loads the cluster. "
                "The policies are told apart by the samples above, not by this replay; it measures the simulator.",
                "",
            ]
            text += _plots("full")
            continue
        elastic = part.slug == "pollux-elastic"
        if elastic:
            from study_elastic import elastic_notes, elastic_reading  # here: it imports this module

            text += elastic_notes(part.runs[0][0])
        text += ["Average JCT of each sample (each seed's own report has every column):", "", _per_seed(part), ""]
        text += [
            f"Means over the {len(part.seeds)} samples (counts summed):",
            "",
            _table(rows, "fifo-nogang"),
            "",
            "Reading:",
            "",
            *(elastic_reading(part, parts) if elastic else _reading(part, rows)),
            "",
        ]
        spread = [
            (max(p["avgJCT"] for p in r[0]["policies"]) / max(min(p["avgJCT"] for p in r[0]["policies"]), 1e-9), s)
            for s, r in zip(part.seeds, part.runs, strict=True)
        ]
        seed = max(spread)[1]
        text += [f"Plots of the sample where the policies differ most (seed {seed}):", ""]
        text += _plots(f"{part.slug}-seed-{seed}")
    text += _published(summary)
    short = [f"{p.title.lower()} ran on seeds {', '.join(map(str, p.seeds))} only" for p in parts if len(p.seeds) < 8]
    if short or not any(p.slug == "full" for p in parts):
        left = [*short, *([] if any(p.slug == "full" for p in parts) else ["the whole-trace replay was not run"])]
        text += [f"This run is smaller than `make study`'s: {'; '.join(left)} (time on the shared machine).", ""]
    if any(not p.ran for p in parts):
        text += [
            "Parts without a run date were not rerun when elastic jobs, Volcano's second preempt phase, "
            "proportion.borrow's lent workers (not counted against their queue's share, and reclaimable whatever "
            "it) and caldera-default's `las.max-loss: 0` came: none of them changes what a policy does with "
            "checkpointing jobs of fixed size whose tasks share one priority, as every trace job of those parts "
            "is (max-loss spares only jobs that cannot checkpoint; lent workers are an elastic job's workers "
            "above its minimum). Their results.json files got the median run time per size class "
            "(medianRunByClass, a property of the sample, not of a run) from the same samples, for the wait goal. "
            "Nor were they rerun when caldera-default got `las.max-wait: 8h`: run alone on every sample of "
            "every part, it changed caldera-default's average JCT only on seeds 5 and 6 without checkpoints and "
            "seed 6 with checkpoints and under the free model (docs/policies.md has the runs), parts rerun since.",
            "",
        ]
    text += [FOOTER]
    doc.write_text("\n".join(text) + "\n", encoding="utf-8")


def _plots(directory: str) -> list[str]:
    return [
        f"![JCT CDF](trace-study/{directory}/jct_cdf.png)",
        "",
        f"![GPU utilisation over time](trace-study/{directory}/utilisation.png)",
        "",
        f"![Queue shares over time](trace-study/{directory}/queue_shares.png)",
        "",
    ]


def _published(summary: Sequence[tuple[str, dict[str, list[dict[str, Any]]]]]) -> list[str]:
    head = "| result | published | " + " | ".join(title for title, _ in summary) + " |"
    lines = ["## Next to the published numbers", "", head, "| --- | --- |" + " ---: |" * len(summary)]
    comparisons = [
        (
            "Tiresias (LAS) vs YARN-CS: here las vs volcano-default",
            "up to 5.5× lower avg JCT",
            "volcano-default",
            "las",
        ),
        ("Helios QSSF vs FIFO: here the srtf oracle vs fifo-nogang", "up to 6.5× lower", "fifo-nogang", ORACLE),
        ("best caldera policy vs fifo-nogang (goal: ≥ 3×)", "-", "fifo-nogang", ""),
        ("best caldera policy vs volcano-default (goal: > 1×)", "-", "volcano-default", ""),
    ]
    for label, published, base, policy in comparisons:
        cells = []
        for _, rows in summary:
            target = policy or _best_caldera(rows) or ""
            r = _ratio(rows, base, target)
            cells.append("-" if r is None else f"{r:.2f}× ({target})")
        lines.append(f"| {label} | {published} | " + " | ".join(cells) + " |")
    lines += ["", PUBLISHED_NOTE, ""]
    return lines
