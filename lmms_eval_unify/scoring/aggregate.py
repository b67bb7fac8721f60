"""Arithmetic shared by all roll-ups.

Every function accepts plain floats or numpy arrays of bootstrap replicates (element-wise), and
`None` for a score the model does not have (an unsupported or missing subtask).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

Score = float | np.ndarray | None


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
    if any(p is None for p in parts):
        return None
    total = float(sum(sizes.values()))
    return sum(p * (sizes[key] / total) for p, key in zip(parts, sizes, strict=True))


def difference(score: Score, reference: Score) -> Score:
    """`score - reference`, or `None` if either is missing."""
    if score is None or reference is None:
        return None
    return score - reference
