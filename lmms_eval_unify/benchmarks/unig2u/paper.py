"""UniG2U-Bench roll-ups: per-category accuracy, sample-weighted overall, G2U gains (Eq. 5-6).

Scores are accuracies in percent. Subtask names are the columns of the paper's Tables 11/12; the
subtask sample sizes are the paper's (they reproduce all 294 category cells of Table 4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import reduce

import numpy as np

from lmms_eval_unify.benchmarks.unig2u.spec import CATEGORY_TITLES, task_name
from lmms_eval_unify.benchmarks.unig2u.spec import SUBTASKS as SPEC_SUBTASKS
from lmms_eval_unify.scoring.aggregate import Score, difference, weighted_mean
from lmms_eval_unify.scoring.samples import Features, TaskMeans, field

# category title -> {subtask: paper sample size}; Table 4 column order.
CATEGORY_SUBTASKS: dict[str, dict[str, int]] = {
    title: {name: s.n for name, s in SPEC_SUBTASKS.items() if s.category == group}
    for group, title in CATEGORY_TITLES.items()
}
CATEGORY_SIZES: dict[str, int] = {c: sum(s.values()) for c, s in CATEGORY_SUBTASKS.items()}
CATEGORIES = tuple(CATEGORY_SUBTASKS)
SUBTASKS = tuple(s for subs in CATEGORY_SUBTASKS.values() for s in subs)
OVERALL = "Overall"
DELTA = "Δ"
TABLE4_COLUMNS = (*CATEGORIES, OVERALL, DELTA)
PROTOCOLS = ("direct", "gta")
# GtA variants of Eq. 5 (task-name suffixes): one generated artifact, or a closed-loop agentic rollout.
GTA_VARIANTS = ("_gta", "_gta_agentic")


# --- pure scoring functions ----------------------------------------------------------------------


def category_scores(subtask_scores: Mapping[str, Score], sizes: Mapping[str, Mapping[str, float]]) -> dict:
    """Per-category accuracy = sample-weighted mean of its subtasks (`None` if any subtask is missing)."""
    return {cat: weighted_mean(subtask_scores, subs) for cat, subs in sizes.items()}


def unig2u_overall(category: Mapping[str, Score], sizes: Mapping[str, float] = CATEGORY_SIZES) -> Score:
    """Overall = sample-weighted mean over the seven categories (paper sizes 200,200,200,537,100,500,1263)."""
    return weighted_mean(category, sizes)


def g2u_gain(model: Mapping[str, Score], reference: Mapping[str, Score]) -> dict[str, Score]:
    """Per-column gain `model - reference` (e.g. unified model minus its paired base VLM)."""
    return {key: difference(value, reference.get(key)) for key, value in model.items()}


def delta_direct(direct: Mapping[str, Score], base: Mapping[str, Score]) -> dict[str, Score]:
    """Eq. 6: Δ_Direct = Perf_Direct(unified) - Perf(base VLM), per category and overall."""
    return g2u_gain(direct, base)


def delta_gta(gta: Mapping[str, Score], direct: Mapping[str, Score]) -> dict[str, Score]:
    """Eq. 6: Δ_GtA = Perf_GtA(unified) - Perf_Direct(unified), per category and overall."""
    return g2u_gain(gta, direct)


def best_of_gta(variants: Sequence[Mapping[str, Score]]) -> dict[str, Score]:
    """Eq. 5: Perf_GtA = max over GtA variants (one-shot, agentic), taken per dataset (column).

    A variant that lacks a column does not compete for it.
    """
    best: dict[str, Score] = {}
    for key in {k for v in variants for k in v}:
        present = [score for v in variants if (score := v.get(key)) is not None]
        best[key] = reduce(np.maximum, present) if present else None
    return best


# --- per-sample records -> rows ------------------------------------------------------------------


def task_features(rows: Sequence[Mapping]) -> Features:
    """Per-sample accuracy in percent (`acc` in [0, 1]; a missing value or judge failure counts as 0)."""
    return {"acc": 100.0 * field(rows, "acc", "zero")}


def protocol_row(means: TaskMeans, suffix: str, sizes: Mapping[str, int] | None = None) -> dict[str, Score]:
    """One protocol's row ('' = Direct): the 30 subtasks, the 7 categories (Table 4) and Overall.

    `sizes` maps task name -> number of samples scored (default: the paper's sizes). Weighting by a
    run's own counts equals the paper's weighting when the full benchmark was run.
    """
    row = {s: means.get(task_name(s, suffix), {}).get("acc") for s in SUBTASKS}
    weights = {
        cat: {s: (sizes or {}).get(task_name(s, suffix), n) for s, n in subs.items()}
        for cat, subs in CATEGORY_SUBTASKS.items()
    }
    row.update(category_scores(row, weights))
    row[OVERALL] = unig2u_overall(row, {cat: sum(w.values()) for cat, w in weights.items()})
    return row
