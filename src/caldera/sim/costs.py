"""What starting, preempting and spreading a gang costs in simulation, and where the defaults come from.

The free model (`FREE`, every cost 0) is what the simulator did before costs
existed: preemption loses nothing but unsaved work, pods train the instant they
are bound, and a gang trains at full speed on any nodes. `REALISTIC` is what
`--costs realistic` (and the trace study) uses:

- `start_latency` 4 s: from a gang's pods starting to training. caldera's own
  measurement: a re-created worker pod trains with the others 3.89 s after it
  was killed (README, "elastic: kill -9 of a whole worker pod").
- `resume` 30 s more when a gang restarts with progress to load (checkpoint
  restored, data pipeline and model warmed up): the delay Pollux's simulator
  charges every re-allocation (petuum/adaptdl simulator/simulator.py,
  `rescale_time = 30`).
- `preempt` 8 s of a checkpointing victim's progress, spent saving it: no
  measurement of caldera's own saves exists; 8 s is its measured cold restart
  (7.75 s, README, "a second kill -9 ... cold start"), an assumption of the same
  order as the resume.
- `spread` 0.25: a gang on k more nodes than its GPUs need trains at
  1 / (1 + 0.25 k) of its speed. Tiresias (NSDI'19, §2.2) and Gandiva (OSDI'18)
  measured that consolidation matters for communication-heavy models (VGG-like:
  up to about 2× faster on one machine) and little for compute-heavy ones
  (ResNet-like); 0.25 per extra node (a 4-GPU gang on 2 nodes: 20 % slower) sits
  between. A setting: `--costs spread=0` turns it off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Costs:
    """What starting, stopping and spreading a gang costs (see the module docstring)."""

    start_latency: float = 0.0  # seconds from a gang's pods starting to its training
    resume: float = 0.0  # more seconds before a gang with kept progress trains again (restore, warm-up)
    preempt: float = 0.0  # seconds of progress a preempted checkpointing job spends saving
    spread: float = 0.0  # slowdown per node a gang uses beyond the fewest its GPUs fit on
    gpus_per_node: float = 0.0  # GPUs of the largest node (the fewest nodes a gang needs); 0: no spread model

    @property
    def free(self) -> bool:
        return not (self.start_latency or self.resume or self.preempt or self.spread)

    def speed(self, gpus: float, nodes: int) -> float:
        """Training speed of a gang of `gpus` GPUs on `nodes` nodes (1: consolidated)."""
        if self.spread <= 0 or self.gpus_per_node <= 0 or gpus <= 0:
            return 1.0
        needed = max(1, math.ceil(gpus / self.gpus_per_node - _EPS))
        return 1.0 / (1.0 + self.spread * max(nodes - needed, 0))

    def words(self) -> str:
        if self.free:
            return "free preemption and placement (no start, save, resume or spread costs)"
        return (
            f"costs: {self.start_latency:g} s start latency, {self.resume:g} s resume, "
            f"{self.preempt:g} s checkpoint save per preemption, spread slowdown {self.spread:g} per extra node"
        )


FREE = Costs()
REALISTIC = Costs(start_latency=4.0, resume=30.0, preempt=8.0, spread=0.25)
MODELS = {"free": FREE, "realistic": REALISTIC}
_KEYS = {"start": "start_latency", "resume": "resume", "preempt": "preempt", "spread": "spread"}


def parse_costs(text: str) -> Costs:
    """`free`, `realistic`, or `[free|realistic,]key=value,...` (keys: start, resume, preempt, spread).

    Raises ValueError with a message naming the part that is wrong."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    base = FREE
    if parts and parts[0] in MODELS:
        base = MODELS[parts.pop(0)]
    elif parts and "=" not in parts[0]:
        raise ValueError(f"{parts[0]!r} is not a cost model (free, realistic) nor key=value")
    changes: dict[str, float] = {}
    for part in parts:
        key, sep, raw = part.partition("=")
        name = _KEYS.get(key.strip())
        if not sep or name is None:
            raise ValueError(f"{part!r}: expected KEY=SECONDS with KEY one of {', '.join(sorted(set(_KEYS)))}")
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"{part!r}: {raw.strip()!r} is not a number") from None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{part!r}: must be a number >= 0")
        changes[name] = value
    return replace(base, **changes)
