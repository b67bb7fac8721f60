"""Per-sample records (rows of lmms-eval `*_samples_<task>.jsonl`) turned into numeric feature arrays.

A roll-up never reads a sample twice: each task's rows become a few aligned arrays ("features"),
and every score is a function of the features' means. Means over bootstrap or split-half index
sets then give resampled scores with the same code.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np

Features = dict[str, np.ndarray]
TaskMeans = dict[str, dict[str, float | np.ndarray]]

UNSUPPORTED_KEY = "unsupported"


def is_unsupported(rows: Sequence[Mapping]) -> bool:
    """True if the task reported every sample as unsupported (e.g. the model cannot generate images)."""
    return all(bool(row.get(UNSUPPORTED_KEY, False)) for row in rows)


def _as_float(value: object) -> float:
    if value is None or isinstance(value, (dict, list, str)):
        return math.nan
    return float(value)


def field(rows: Sequence[Mapping], key: str, missing: Literal["zero", "skip"]) -> np.ndarray:
    """Per-sample values of `key`; an absent/NaN value becomes 0 (`"zero"`, counts as wrong) or NaN (`"skip"`)."""
    values = np.fromiter((_as_float(row.get(key)) for row in rows), dtype=float, count=len(rows))
    if missing == "zero":
        values = np.nan_to_num(values, nan=0.0)
    return values


def feature_means(features: Features, index: np.ndarray | None = None) -> dict[str, float | np.ndarray]:
    """Mean of each feature; with an index matrix of shape (R, n), one mean per row (NaNs skipped)."""
    if index is None:
        return {
            name: float(np.nanmean(values)) if np.isfinite(values).any() else math.nan
            for name, values in features.items()
        }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN replicate is simply NaN
        return {name: np.nanmean(values[index], axis=1) for name, values in features.items()}


def n_samples(features: Features) -> int:
    """Number of samples behind a task's features."""
    return len(next(iter(features.values())))
