"""How fast an elastic job trains on n workers: Pollux's goodput model, per size class.

The form is Pollux's (OSDI'21; `petuum/adaptdl` branch `osdi21-artifact`,
`simulator/goodput.py`), its parameters here are ours (Pollux fits them per
job from measured step times, which this simulator does not have):

- A step on n one-GPU workers over k nodes takes
  T(n, k) = (T_c^γ + T_n^γ)^(1/γ): compute T_c = α_c + β_c · m for the local
  batch m, network T_n = α_n + β_n · (n − 2)⁺ across nodes (k > 1),
  α_r + β_r · (n − 2)⁺ within one node, 0 for one worker; γ says how much the
  two overlap (1: none, large: fully).
- Throughput is n · m / T(n, k) samples per second. The global batch is
  M = max(n · m, M₀) with M₀ = n₀ · m the batch of the job as submitted on n₀
  workers (fewer workers accumulate gradients to keep M₀).
- Statistical efficiency, from the gradient noise scale φ (in samples):
  E(M) = (φ + M₀) / (φ + M): a larger batch needs more samples for the same
  progress, the less so the noisier the gradient (larger φ).
- Goodput G(n, k) = throughput × E(M). The job's *rate* on n workers over k
  nodes is G(n, k) / G(n₀, k₀), k₀ = ⌈n₀ / 8⌉: 1 at its submitted size, so the
  trace's duration is its run time there, and progress is counted in seconds of
  that reference run.

Step-time constants (seconds): α_c 0.1, β_c 0.004 with m = 32, α_r 0.05,
β_r 0.002, α_n 0.15, β_n 0.005, γ 2: one step computes in 0.23 s and
synchronises in 0.05 s within a node, 0.15 s across nodes. φ by Pollux's size
class (its models: CIFAR-10 for Small, DeepSpeech2/BERT for Medium, YOLOv3 for
Large, ImageNet for XLarge, whose larger batches scale further): 256, 1,024,
4,096, 16,384 samples. A 1-GPU Small job runs 2.9× as fast on 4 workers, an
8-GPU Small job no faster on more than 8; an 8-GPU XLarge job 1.5× on 16 and
2.4× on 32 workers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

GPUS_PER_NODE = 8  # the reference placement: n₀ workers on ⌈n₀ / 8⌉ nodes (preset philly-64's nodes)
CLASS_NOISE = {"small": 256.0, "medium": 1024.0, "large": 4096.0, "xlarge": 16384.0}  # φ, samples
MODEL = "caldera.dev/speedup-model"  # annotation: the size class, a key of CLASS_NOISE
REFERENCE = "caldera.dev/speedup-reference"  # annotation: n₀, the workers the job's duration was measured on


@dataclass(frozen=True, slots=True)
class Speedup:
    """One job's goodput model (see the module docstring)."""

    reference: int  # n₀
    noise: float  # φ, samples
    local_batch: float = 32.0
    alpha_c: float = 0.1
    beta_c: float = 0.004
    alpha_r: float = 0.05
    beta_r: float = 0.002
    alpha_n: float = 0.15
    beta_n: float = 0.005
    gamma: float = 2.0

    def step_time(self, n: int, nodes: int) -> float:
        compute = self.alpha_c + self.beta_c * self.local_batch
        if n <= 1:
            network = 0.0
        elif nodes > 1:
            network = self.alpha_n + self.beta_n * max(n - 2, 0)
        else:
            network = self.alpha_r + self.beta_r * max(n - 2, 0)
        g = self.gamma
        return float((compute**g + network**g) ** (1.0 / g))

    def goodput(self, n: int, nodes: int) -> float:
        if n <= 0:
            return 0.0
        m0 = self.reference * self.local_batch
        batch = max(n * self.local_batch, m0)
        efficiency = (self.noise + m0) / (self.noise + batch)
        return n * self.local_batch / self.step_time(n, nodes) * efficiency

    def rate(self, n: int, nodes: int) -> float:
        """Seconds of reference progress per second on n workers over `nodes` nodes (1 at n₀ packed)."""
        ref = self.goodput(self.reference, math.ceil(self.reference / GPUS_PER_NODE))
        return self.goodput(n, max(nodes, 1)) / ref

    def best_size(self, limit: int) -> int:
        """The fewest workers up to `limit` whose goodput (packed on 8-GPU nodes) is within 5 % of the best."""
        goodputs = [self.goodput(n, math.ceil(n / GPUS_PER_NODE)) for n in range(1, limit + 1)]
        top = max(goodputs)
        return next(n for n, g in enumerate(goodputs, start=1) if g >= 0.95 * top)


def reference_of(annotations: Mapping[str, str]) -> int | None:
    """n₀ of a job made elastic from a trace (its annotation), else None."""
    raw = annotations.get(REFERENCE)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def from_annotations(annotations: Mapping[str, str]) -> Speedup | None:
    """The job's model from its annotations; None when it has none (or they do not parse)."""
    name, raw = annotations.get(MODEL), annotations.get(REFERENCE)
    if name is None or raw is None or name not in CLASS_NOISE:
        return None
    try:
        reference = int(raw)
    except ValueError:
        return None
    return Speedup(reference, CLASS_NOISE[name]) if reference >= 1 else None
