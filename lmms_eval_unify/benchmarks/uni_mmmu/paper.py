"""Uni-MMMU per-task metrics on Table 2's 0-100 scale.

Accuracies in [0, 1] and the Jigsaw image score (1 - penalised DreamSim distance) are multiplied by
100; the Code shape/colour and position judge scores (0-5) are mapped linearly to 0-100 (x 20).
Maze and Sliding report step-level and sample-level values ("step/sample").

The paper's "Avg." column matches no formula over its own columns (see docs/scoring.md), so we
print `Avg. (ours)`: the unweighted mean of the 14 columns with step-level Maze/Sliding values.
It is our own summary and is not comparable to the paper's Avg.

The paper's eight tasks include three science disciplines that Table 2 pools into the Sci. columns (one
`uni_mmmu_science` task here). We also break Sci. R/T/I down by discipline, read from each sample's
`details.discipline` (the doc's `level_1_category`); the paper prints no such table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import overload

import numpy as np

from lmms_eval_unify.benchmarks.uni_mmmu.spec import STEP_TASKS, TASKS, task_name  # noqa: F401 - re-exported
from lmms_eval_unify.scoring.aggregate import FloatOrArray, Score
from lmms_eval_unify.scoring.samples import Features, TaskMeans, field

JUDGE_SCALE_MAX = 5.0
# Table 2 column -> (task, per-sample metric); "step/sample" columns have a `_step` and a `_sample` part.
COLUMNS: dict[str, tuple[str, str]] = {
    "Jig. I": ("jigsaw", "img_score"),
    "Jig. T": ("jigsaw", "text_acc"),
    "Maze I": ("maze", "img"),
    "Maze T": ("maze", "text"),
    "Slid. I": ("sliding", "img"),
    "Slid. T": ("sliding", "text"),
    "Geo I": ("geometry", "img_acc"),
    "Geo T": ("geometry", "text_acc"),
    "Sci. R": ("science", "reasoning_acc"),
    "Sci. T": ("science", "text_acc"),
    "Sci. I": ("science", "img_acc"),
    "C. T": ("code", "text_acc"),
    "C. S": ("code", "shape_color_score"),
    "C. P": ("code", "position_score"),
}
JUDGE_SCALED = {"shape_color_score", "position_score"}
OUR_AVG = "Avg. (ours)"
DISCIPLINES = ("Physics", "Chemistry", "Biology")
# "Physics R" -> ("Physics", "reasoning_acc"): the Sci. columns restricted to one discipline.
DISCIPLINE_COLUMNS: dict[str, tuple[str, str]] = {
    f"{d} {column.split()[-1]}": (d, metric)
    for d in DISCIPLINES
    for column, (task, metric) in COLUMNS.items()
    if task == "science"
}


@overload
def normalised(metric: str, value: None) -> None: ...
@overload
def normalised(metric: str, value: FloatOrArray) -> FloatOrArray: ...
def normalised(metric: str, value: Score) -> Score:
    """A per-task metric on Table 2's 0-100 scale."""
    if value is None:
        return None
    return value * (100.0 / JUDGE_SCALE_MAX if metric in JUDGE_SCALED else 100.0)


def metric_keys(task: str) -> list[str]:
    """Per-sample metric keys a task must report (`text_step_acc`, ... for Maze/Sliding)."""
    keys = [metric for t, metric in COLUMNS.values() if t == task]
    if task in STEP_TASKS:
        return [f"{k}_{level}_acc" for k in keys for level in ("step", "sample")]
    return keys


def our_average(row: Mapping[str, Score]) -> Score:
    """Our documented mean: the 14 columns (step-level for Maze/Sliding), only if all are present."""
    values = [row.get(_step_key(col)) for col in COLUMNS]
    known = [v for v in values if v is not None]
    if len(known) < len(values):
        return None
    return sum(known) / len(known)


def _step_key(column: str) -> str:
    return f"{column} step" if COLUMNS[column][0] in STEP_TASKS else column


def discipline(row: Mapping) -> str:
    """A science sample's discipline as its record's `details` give it, capitalised (`physics` and ` Physics`
    both read `Physics`, since the official data's casing is unverified); "" if absent."""
    details = row.get("details")
    return str(details.get("discipline") or "").strip().capitalize() if isinstance(details, Mapping) else ""


def task_features(task: str, rows: Sequence[Mapping]) -> Features:
    """Per-sample metrics of one task on the 0-100 scale (missing values count as 0); science adds one
    feature per discipline column, NaN (skipped) on the other disciplines' samples."""
    features = {key: normalised(key, field(rows, key, "zero")) for key in metric_keys(task)}
    if task == "science":
        labels = np.array([discipline(row) for row in rows], dtype=object)
        for column, (name, metric) in DISCIPLINE_COLUMNS.items():
            features[column] = np.where(labels == name, features[metric], np.nan)
    return features


def table2_row(means: TaskMeans) -> dict[str, Score]:
    """Table 2 row: every column, Maze/Sliding as `<col> step` and `<col> sample`, `Avg. (ours)`, and the
    science discipline columns (`Physics R`, ...; None without disciplines)."""
    row: dict[str, Score] = {}
    for column, (task, metric) in COLUMNS.items():
        m = means.get(task_name(task), {})
        if task in STEP_TASKS:
            row[f"{column} step"] = m.get(f"{metric}_step_acc")
            row[f"{column} sample"] = m.get(f"{metric}_sample_acc")
        else:
            row[column] = m.get(metric)
    row[OUR_AVG] = our_average(row)
    science = means.get(task_name("science"), {})
    row.update({column: science.get(column) for column in DISCIPLINE_COLUMNS})
    return row
