"""Run every benchmark and print its numbers (`make bench`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

for script in (
    "allocate_throughput.py",
    "philly_replay.py",
    "simulate_throughput.py",
    "embedded_latency.py",
    "elastic_recovery.py",
    "dashboard_load.py",
):
    print(f"\n== {script}", flush=True)
    subprocess.run([sys.executable, str(HERE / script)], check=True)
