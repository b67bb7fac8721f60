"""Seeded resampling of per-sample features: bootstrap confidence intervals and split-half rankings.

Resampling weights depend only on the seed, the unit (task) name and its number of samples, never on the
model, so every model is resampled on the same documents (rows are sorted by doc_id). Differences
between two models (G2U gains) therefore get paired bootstrap intervals.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

import numpy as np

from lmms_eval_unify.scoring.aggregate import Score
from lmms_eval_unify.scoring.samples import Features, feature_means, n_samples

RowFn = Callable[[Mapping[str, Mapping[str, Score]], Mapping[str, int]], dict[str, Score]]
Interval = tuple[float, float]


def _rng(seed: int, unit: str, purpose: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(f"{purpose}:{unit}".encode())])


@lru_cache(maxsize=4096)
def bootstrap_weights(seed: int, unit: str, n: int, replicates: int) -> np.ndarray:
    """(replicates, n) resampling counts: how often each sample is drawn (with replacement) per replicate.

    float32 halves the memory traffic of the weighted means; the counts themselves are exact.
    """
    draws = _rng(seed, unit, "bootstrap").integers(0, n, size=(replicates, n))
    flat = (draws + n * np.arange(replicates)[:, None]).ravel()
    return np.bincount(flat, minlength=replicates * n).reshape(replicates, n).astype(np.float32)


@lru_cache(maxsize=4096)
def split_half_weights(seed: int, unit: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Two disjoint random halves of the n samples, each as a (1, n) 0/1 weight row."""
    order = _rng(seed, unit, "split-half").permutation(n)
    halves = np.zeros((2, n))
    halves[0, order[: n // 2]] = 1.0
    halves[1, order[n // 2 :]] = 1.0
    return halves[:1], halves[1:]


def score(units: Mapping[str, Features], row_fn: RowFn) -> dict[str, Score]:
    """Point estimate of a row."""
    return row_fn({u: feature_means(f) for u, f in units.items()}, _sizes(units))


def bootstrap(units: Mapping[str, Features], row_fn: RowFn, replicates: int, seed: int) -> dict[str, Score]:
    """Bootstrap replicates of every column of a row (arrays of length `replicates`)."""
    means = {u: feature_means(f, bootstrap_weights(seed, u, n_samples(f), replicates)) for u, f in units.items()}
    return row_fn(means, _sizes(units))


def split_halves(units: Mapping[str, Features], row_fn: RowFn, seed: int) -> tuple[dict, dict]:
    """The row computed on half A and on half B of every unit's samples."""
    halves = {u: split_half_weights(seed, u, n_samples(f)) for u, f in units.items()}
    rows = []
    for part in (0, 1):
        means = {u: feature_means(f, halves[u][part]) for u, f in units.items()}
        sizes = {u: int(halves[u][part].sum()) for u in units}
        rows.append({k: _scalar(v) for k, v in row_fn(means, sizes).items()})
    return rows[0], rows[1]


def percentile_interval(replicates: Score, level: float = 0.95) -> Interval | None:
    """Percentile bootstrap interval, or None without (finite) replicates."""
    if replicates is None or np.ndim(replicates) == 0:
        return None
    finite = np.asarray(replicates)[np.isfinite(replicates)]
    if finite.size == 0:
        return None
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(finite, [alpha, 1.0 - alpha])
    return float(low), float(high)


def rank_agreement(half_a: Sequence[float], half_b: Sequence[float]) -> tuple[float, float]:
    """Kendall's tau-b and Spearman's rho between two halves' scores of the same models."""
    if len(half_a) < 2 or np.ptp(half_a) == 0 or np.ptp(half_b) == 0:
        return float("nan"), float("nan")  # undefined without two distinct scores on each side
    from scipy import stats  # imported here: ~1 s, and only --split-half needs it

    tau = stats.kendalltau(half_a, half_b, variant="b").statistic
    rho = stats.spearmanr(half_a, half_b).statistic
    return float(tau), float(rho)


def _sizes(units: Mapping[str, Features]) -> dict[str, int]:
    return {u: n_samples(f) for u, f in units.items()}


def _scalar(value: Score) -> float | None:
    return None if value is None else float(np.asarray(value).reshape(-1)[0])
