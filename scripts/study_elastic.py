"""The trace study's elastic part in words: Pollux's headline, read from the runs' results.

Pollux (OSDI'21) reports 37-50 % lower average JCT than Tiresias, which resizes no job: its jobs are
elastic, Tiresias' keep the GPUs they asked for. Here the same comparison: caldera-default on the
samples made elastic (`--elastic`, `sim/speedup.py`) against las on the same samples as submitted
(the first part, same costs and checkpoints). las on the elastic jobs is shown too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from study_text import DEFAULT, Part, _by_policy, _h, _mean  # scripts/study_text.py, next to this file

ELASTIC = "pollux-elastic"
RIGID = "pollux"  # the part with the same samples, costs and checkpoints, jobs at their submitted size
GOAL = 0.30  # Pollux's headline: at least 30 % lower average JCT than Tiresias


def elastic_reading(part: Part, parts: Sequence[Part]) -> list[str]:
    rows = _by_policy(part)
    rigid = next((p for p in parts if p.slug == RIGID), None)
    if rigid is None or DEFAULT not in rows:
        return ["- The first part (jobs at their submitted size) was not run: nothing to compare with."]
    fixed = _by_policy(rigid)
    by_seed = {s: p for s, p in zip(rigid.seeds, fixed.get("las", []), strict=False)}
    pairs = [(s, e, by_seed[s]) for s, e in zip(part.seeds, rows[DEFAULT], strict=True) if s in by_seed]
    if not pairs:
        return ["- las did not run on these seeds' fixed-size jobs: nothing to compare with."]
    mine = _mean([e["avgJCT"] for _, e, _ in pairs])
    las = _mean([r["avgJCT"] for _, _, r in pairs])
    out: list[str] = []
    if mine and las:
        cut = 1 - mine / las
        per_seed = ", ".join(f"{s}: {100 * (1 - e['avgJCT'] / r['avgJCT']):.0f} %" for s, e, r in pairs)
        out.append(
            f"- Pollux's headline (≥ {100 * GOAL:.0f} % lower average JCT than Tiresias' las, which resizes no job): "
            f"**{'met' if cut >= GOAL else 'not met'}**: caldera-default on the elastic jobs {_h(mine)} h against "
            f"las on the same jobs at their submitted size {_h(las)} h, {100 * cut:.0f} % lower over the "
            f"{len(pairs)} samples; by seed {per_seed}."
        )
    las_elastic = _mean([p["avgJCT"] for p in rows.get("las", [])])
    if mine and las_elastic:
        better = "lower" if mine < las_elastic else "higher"
        pairs_las = list(zip(rows[DEFAULT], rows.get("las", []), strict=False))
        wins = sum(1 for e, r in pairs_las if e["avgJCT"] <= r["avgJCT"])
        out.append(
            f"- las given the same elastic jobs: {_h(las_elastic)} h; caldera-default's is {better} by "
            f"{100 * abs(mine - las_elastic) / las_elastic:.0f} % (lower or equal on {wins} of {len(pairs_las)} "
            "samples). Most of the gain over fixed-size jobs is the jobs' elasticity: under either policy the "
            "scheduler grows a job into idle GPUs through allocate and shrinks it by evicting its workers above "
            "minAvailable. caldera-default keeps queue shares too; its reclaim takes any job's workers above its "
            "minimum whatever that job's queue's share (proportion.borrow: they are lent), so a queue over its "
            "share still gets its new gangs their minimum. Before that rule such a queue's new jobs waited, or "
            "ran at their minimum, while other queues' elastic jobs ran at their maximum: 0.71 h against las's "
            "0.43 h (run of 2026-11-28 06:34 UTC)."
        )
    run = _mean([r.get("meanRunTime") for r, _, _ in part.runs])
    if run:
        out.append(
            f"- The jobs' average run time at their submitted size is {_h(run)} h: an elastic job that grows "
            "finishes sooner than that, so here, unlike the fixed-size parts, it is no floor."
        )
    return out


def elastic_notes(results: dict[str, Any]) -> list[str]:
    """How the samples were made elastic, for the part's opening."""
    return [
        "Every job of the sample runs on 1 to its best number of workers: from half its GPUs (at least one) "
        "to the size where its goodput stops rising (within 5 % of the best up to 4× its GPUs, `elastic_range_of` "
        "in `sim/traces.py`), trained at the rate of Pollux's goodput model for its size class "
        "(`sim/speedup.py`: the trace's duration is its run at its submitted size; fewer workers are slower, "
        "more are faster with diminishing returns), each resize costing a restart (30 s with the realistic costs). "
        f"{results.get('sample', '')}.",
        "",
    ]
