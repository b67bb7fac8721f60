"""Per-sample records (rows of lmms-eval `*_samples_<task>.jsonl`) turned into numeric feature arrays.

A roll-up never reads a sample twice: each task's rows become a few aligned arrays ("features"),
and every score is a function of the features' means. Weighted means over bootstrap or split-half
sets then give resampled scores with the same code.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np

Features = dict[str, np.ndarray]
TaskMeans = dict[str, dict[str, float | np.ndarray]]

UNSUPPORTED_KEY = "unsupported"


def sample_unsupported(row: Mapping) -> bool:
    """True if a sample says the model could not run it: `unsupported` at top level or in `details`."""
    details = row.get("details")
    return bool(row.get(UNSUPPORTED_KEY)) or (isinstance(details, Mapping) and bool(details.get(UNSUPPORTED_KEY)))


def is_unsupported(rows: Sequence[Mapping]) -> bool:
    """True if the task reported every sample as unsupported (e.g. the model cannot generate images)."""
    return all(sample_unsupported(row) for row in rows)


def _as_float(value: float | str | list[object] | dict[str, object] | None) -> float:
    """A sample's JSON value as a number: NaN for null, text and nested values."""
    if value is None or isinstance(value, (dict, list, str)):
        return math.nan
    return float(value)


def field(rows: Sequence[Mapping], key: str, missing: Literal["zero", "skip"]) -> np.ndarray:
    """Per-sample values of `key`; an absent/NaN value becomes 0 (`"zero"`, counts as wrong) or NaN (`"skip"`).
    Rows stored by column (with a ``column(key)`` method, as ``reports.results_io.SampleRows``) hand over the
    column instead of building every row."""
    column = getattr(rows, "column", None)
    raw = column(key) if callable(column) else (row.get(key) for row in rows)
    values = np.fromiter(map(_as_float, raw), dtype=float, count=len(rows))
    if missing == "zero":
        values = np.nan_to_num(values, nan=0.0)
    return values


def feature_means(features: Features, weights: np.ndarray | None = None) -> dict[str, float | np.ndarray]:
    """Mean of each feature (NaNs skipped); with a weight matrix of shape (R, n), one weighted mean per row.

    Bootstrap replicates are rows of resampling counts, split halves rows of 0/1 indicators.
    """
    if weights is None:
        return {
            name: float(np.nanmean(values)) if np.isfinite(values).any() else math.nan
            for name, values in features.items()
        }
    names = list(features)
    stacked = np.column_stack([features[name] for name in names])
    finite = np.isfinite(stacked)
    # One pass over the (large) weight matrix: weighted sums and weighted counts together.
    sums = weights @ np.hstack([np.where(finite, stacked, 0.0), finite]).astype(weights.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums[:, : len(names)].astype(float) / sums[:, len(names) :]
    return {name: means[:, i] for i, name in enumerate(names)}


def n_samples(features: Features) -> int:
    """Number of samples behind a task's features."""
    return len(next(iter(features.values())))
