"""Regenerate the trace study: `make study` (or `python scripts/trace_study.py`) → docs/trace-study.md.

Every number in the document comes from `caldera simulate compare` runs made
here, through the command line users have, each writing its own report directory
under docs/trace-study/ (report.md, results.json, plots). This script only runs
them and puts their results side by side; the plain-words reading is written from
the numbers, so it stays true when the policies change and the study is re-run.

    python scripts/trace_study.py [--seeds 1 2 3 4 5 6 7 8] [--full-policies a,b] [--skip-full] [--only SLUG ...]

The Philly trace is read from ../shared/traces (or $CALDERA_TRACES); nothing
derived from a trace with a restrictive licence is written here.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from study_text import Part, write_study  # scripts/study_text.py, next to this file

from caldera.sim.compare import available_policies
from caldera.sim.presets import PHILLY_TRACE, traces_dir

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "trace-study"
DOC = REPO / "docs" / "trace-study.md"
ELASTIC_POLICIES = "caldera-default,las"  # the elastic part: caldera's default and Tiresias' las
RATE = 2.0  # Pollux's heaviest "relative job load" (its Figure 8a: 0.5× to 2×)


def compare(args: list[str], report: Path) -> tuple[dict[str, Any], float, str]:
    """One `caldera simulate compare` run: its results.json, its wall time and the command."""
    cmd = ["caldera", "simulate", "compare", *args, "--report", str(report.relative_to(REPO)), "-o", "json"]
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "caldera.cli.main", *cmd[1:]], cwd=REPO, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr}")
    print(f"  {seconds:.1f} s", file=sys.stderr, flush=True)
    return json.loads(proc.stdout), seconds, " ".join(cmd)


def peak_demand() -> tuple[int, float]:
    """The most GPUs Philly's jobs would hold at once if each started on submission, and the mean."""
    from caldera.sim.traces import read_philly

    rows, _ = read_philly(traces_dir() / PHILLY_TRACE)
    changes = sorted([(r.submit, r.gpus) for r in rows] + [(r.submit + r.duration, -r.gpus) for r in rows])
    level = peak = 0
    for _, delta in changes:
        level += delta
        peak = max(peak, level)
    span = max(r.submit + r.duration for r in rows) - rows[0].submit
    return peak, sum(r.duration * r.gpus for r in rows) / span


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def _save_parts(parts: list[Part]) -> None:
    """What ran (commands, wall times, where the results are), so --text-only can rewrite the document."""
    doc = [
        {
            "title": p.title,
            "slug": p.slug,
            "seeds": list(p.seeds),
            "ran": p.ran,
            "runs": [[cmd, secs] for _, secs, cmd in p.runs],
        }
        for p in parts
    ]
    (OUT / "runs.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def _load_parts() -> list[Part]:
    parts = []
    for p in json.loads((OUT / "runs.json").read_text(encoding="utf-8")):
        runs = []
        for cmd, secs in p["runs"]:
            report = REPO / cmd.split("--report ")[1].split()[0]
            runs.append((json.loads((report / "results.json").read_text(encoding="utf-8")), secs, cmd))
        parts.append(Part(p["title"], p["slug"], p["seeds"], runs, p.get("ran", "")))
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6, 7, 8])  # Pollux's 8 workloads
    parser.add_argument("--full-policies", help="policies for the full replay (default: all)")
    parser.add_argument("--skip-full", action="store_true", help="leave the full-Philly replay out")
    parser.add_argument("--text-only", action="store_true", help="rewrite the document from the last runs' results")
    parser.add_argument(
        "--only", nargs="+", metavar="SLUG", help="rerun only these parts (e.g. pollux-elastic), keep the rest"
    )
    args = parser.parse_args()
    if args.text_only:
        write_study(DOC, _load_parts(), available_policies(), peak_demand())
        return
    policies = ",".join(available_policies())
    kept = {p.slug: p for p in _load_parts()} if args.only else {}
    if OUT.exists() and not args.only:
        shutil.rmtree(OUT)  # generated: a seed no longer studied must not leave its report behind
    parts: list[Part] = []
    lossless = ["--checkpoint-interval", "0"]  # a preempted job resumes where it stopped, as the papers assume
    costs = ["--costs", "realistic"]  # start, resume, save and spread cost what sim/costs.py says
    for title, extra, slug, names in (
        ("The Pollux/Sia sample", [*lossless, *costs], "pollux", policies),
        ("The same samples, jobs that cannot checkpoint", costs, "pollux-nockpt", policies),
        (
            f"The same samples at {RATE:g}× the load",
            [*lossless, *costs, "--rate-scale", f"{RATE:g}"],
            f"pollux-x{RATE:g}",
            policies,
        ),
        (
            "The same samples, free preemption and placement (Tiresias' simulator's model)",
            lossless,
            "pollux-free",
            policies,
        ),
        # Pollux's own comparison: its elastic jobs against Tiresias' fixed-size ones (the first part's las).
        ("The same samples, elastic jobs", [*lossless, *costs, "--elastic"], "pollux-elastic", ELASTIC_POLICIES),
    ):
        if args.only and slug not in args.only:
            if slug in kept:
                parts.append(kept[slug])
            continue
        runs = []
        for seed in args.seeds:
            out = OUT / f"{slug}-seed-{seed}"
            base = ["--policies", names, "--trace", "philly", "--sample", "pollux", "--seed", str(seed)]
            runs.append(compare([*base, *extra], out))
        parts.append(Part(title, slug, args.seeds, runs, _now()))
    if args.only and "full" not in args.only:  # --only reruns what it names: never the hours-long full replay
        if "full" in kept:
            parts.append(kept["full"])
        args.skip_full = True
    if not args.skip_full:
        full_policies = args.full_policies or policies
        run = compare(
            ["--policies", full_policies, "--trace", "philly", "--cluster", "preset:philly-full", *costs],
            OUT / "full",
        )
        parts.append(Part("The whole Philly trace on a Philly-sized cluster", "full", [0], [run], _now()))
    _save_parts(parts)
    write_study(DOC, parts, available_policies(), peak_demand())
    print(f"wrote {DOC.relative_to(REPO)}", file=sys.stderr)


if __name__ == "__main__":
    main()
