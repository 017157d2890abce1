"""A synthetic click log, and the hashed features of a wide (logistic-regression) CTR model.

Each impression has a few categorical fields (which ad, on which site, for which user
segment, ...). A hidden "true" model, a logistic regression over those fields plus one
cross feature, decides the click probability, and the click is drawn from it. Everything
is seeded, so every trainer regenerates exactly the same log and keeps its own shard.

The model being trained has the same shape as the hidden one, but it sees the features
only through the hashing trick: (field, value) pairs are hashed into a fixed space of
keys, and the parameter servers hold one weight per key.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

HIDDEN_MODEL_SEED = 2019  # the seed of the hidden model (the year of the seed's CTR demo)
TRAIN_SEED = 1
TEST_SEED = 2
DEFAULT_HASH_SPACE = 1 << 20  # number of weight slots over all the parameter servers


@dataclass(frozen=True)
class Field:
    name: str
    cardinality: int
    skew: float  # popularity of value v is proportional to 1 / (v + 1) ** skew
    effect: float  # standard deviation of the hidden model's weights for this field


FIELDS = (
    Field("ad", 2000, 1.05, 0.8),
    Field("site", 500, 1.1, 0.6),
    Field("user_segment", 100, 0.8, 0.5),
    Field("device", 5, 1.0, 0.3),
    Field("hour", 24, 0.0, 0.2),
    Field("position", 4, 1.0, 0.7),
)
# Derived columns: the advertiser owns ten consecutive ads, each ad has one of 20 categories,
# and the "wide" cross feature pairs the user segment with the ad's category.
ADVERTISERS, CATEGORIES = 200, 20
CROSS_EFFECT, ADVERTISER_EFFECT = 0.6, 0.4
HIDDEN_BIAS = -2.0  # about 15 % of the impressions are clicked

# The model's feature columns, in order; "bias" is a constant feature (the intercept).
COLUMNS = ("bias", *(f.name for f in FIELDS), "advertiser", "segment_x_category")


@dataclass(frozen=True)
class ClickLog:
    values: NDArray[np.int64]  # (rows, len(COLUMNS)) categorical value of each column
    clicks: NDArray[np.float64]  # (rows,) 1.0 for a click, else 0.0
    true_ctr: NDArray[np.float64]  # (rows,) the hidden model's click probability

    def __len__(self) -> int:
        return len(self.clicks)

    def shard(self, index: int, count: int) -> ClickLog:
        """Rows index, index + count, ...: the part of the log one trainer reads."""
        return ClickLog(self.values[index::count], self.clicks[index::count], self.true_ctr[index::count])


def _popularity(field: Field) -> NDArray[np.float64]:
    p: NDArray[np.float64] = 1.0 / np.arange(1, field.cardinality + 1, dtype=np.float64) ** field.skew
    p /= p.sum()
    return p


def _hidden_weights() -> list[NDArray[np.float64]]:
    """One weight per value of each column (the bias column included), the hidden truth."""
    rng = np.random.default_rng(HIDDEN_MODEL_SEED)
    weights = [np.array([HIDDEN_BIAS])]
    weights += [rng.normal(0.0, f.effect, f.cardinality) for f in FIELDS]
    weights.append(rng.normal(0.0, ADVERTISER_EFFECT, ADVERTISERS))
    weights.append(rng.normal(0.0, CROSS_EFFECT, FIELDS[2].cardinality * CATEGORIES))
    return weights


def generate(rows: int, seed: int) -> ClickLog:
    """`rows` impressions drawn with `seed`, clicked according to the hidden model."""
    rng = np.random.default_rng(seed)
    values = np.zeros((rows, len(COLUMNS)), dtype=np.int64)
    for j, field in enumerate(FIELDS, start=1):
        values[:, j] = rng.choice(field.cardinality, size=rows, p=_popularity(field))
    ad, segment = values[:, COLUMNS.index("ad")], values[:, COLUMNS.index("user_segment")]
    values[:, COLUMNS.index("advertiser")] = ad // (FIELDS[0].cardinality // ADVERTISERS)
    values[:, COLUMNS.index("segment_x_category")] = segment * CATEGORIES + ad % CATEGORIES

    logit = np.zeros(rows)
    for j, w in enumerate(_hidden_weights()):
        logit += w[values[:, j]]
    true_ctr = 1.0 / (1.0 + np.exp(-logit))
    clicks = (rng.random(rows) < true_ctr).astype(np.float64)
    return ClickLog(values, clicks, true_ctr)


def _splitmix64(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """A fast, well-mixing 64-bit hash (the SplitMix64 finaliser), vectorised."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def hashed_keys(values: NDArray[np.int64], hash_space: int) -> NDArray[np.uint64]:
    """The weight key of every (column, value) pair: hash(column << 32 | value) mod hash_space."""
    column = np.arange(values.shape[1], dtype=np.uint64)
    raw = (column << np.uint64(32)) | values.astype(np.uint64)
    with np.errstate(over="ignore"):  # the hash multiplies modulo 2**64 on purpose
        return _splitmix64(raw) % np.uint64(hash_space)


def auc(scores: NDArray[np.float64], labels: NDArray[np.float64]) -> float:
    """Area under the ROC curve: the chance a random click outscores a random non-click (ties count half)."""
    positives = labels > 0.5
    n_pos, n_neg = int(positives.sum()), int((~positives).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    ranks = np.empty(len(scores), dtype=np.float64)
    # Average rank (1-based) within each group of tied scores.
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    ends = np.r_[starts[1:], len(scores)]
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def logloss(probabilities: NDArray[np.float64], labels: NDArray[np.float64]) -> float:
    p = np.clip(probabilities, 1e-7, 1 - 1e-7)
    return float(-np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p)))
