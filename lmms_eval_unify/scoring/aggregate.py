"""Arithmetic shared by all roll-ups.

Every function accepts plain floats or numpy arrays of bootstrap replicates (element-wise), and
`None` for a score the model does not have (an unsupported or missing subtask).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

import numpy as np

Value = float | np.ndarray
"""A score the model has: one number, or an array of bootstrap replicates."""
Score = Value | None
FloatOrArray = TypeVar("FloatOrArray", float, np.ndarray)
"""An element-wise transform's input and output: a float stays a float, an array stays an array."""


def mean_missing_as_zero(scores: Sequence[Score]) -> Score:
    """Mean of `scores` with missing (`None`) ones counted as 0; `None` if all are missing.

    This is the papers' rule for averaging over subtasks a model cannot do (MME-U Table 2:
    DALL-E-3's generation score is 51.40 / 6 = 8.57).
    """
    if all(s is None for s in scores):
        return None
    return sum((0.0 if s is None else s) for s in scores) / len(scores)


def weighted_mean(scores: Mapping[str, Score], sizes: Mapping[str, float]) -> Score:
    """Sample-weighted mean of `scores` over the keys of `sizes`; `None` if any part is missing."""
    parts = [scores.get(key) for key in sizes]
    known = [p for p in parts if p is not None]
    if len(known) < len(parts):
        return None
    total = float(sum(sizes.values()))
    return sum(p * (sizes[key] / total) for p, key in zip(known, sizes, strict=True))


def difference(score: Score, reference: Score) -> Score:
    """`score - reference`, or `None` if either is missing."""
    if score is None or reference is None:
        return None
    return score - reference
