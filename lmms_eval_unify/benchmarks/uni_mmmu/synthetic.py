"""Synthetic Uni-MMMU samples at the paper's sizes: test and bench support (``lmms_eval_unify.testing``),
never used by a run."""

from __future__ import annotations

import numpy as np

from lmms_eval_unify.benchmarks.uni_mmmu import paper as um

SIZES = {"jigsaw": 150, "maze": 150, "sliding": 150, "geometry": 140, "science": 180, "code": 115}


def task_rows(task: str, n: int, skill: float, rng: np.random.Generator) -> list[dict]:
    """Per-sample records of one Uni-MMMU task (Maze/Sliding: sample-level never above step-level)."""
    rows = []
    for _ in range(n):
        row: dict[str, float] = {}
        for key in um.metric_keys(task):
            if key.endswith("_sample_acc"):
                row[key] = float(row[key.replace("_sample_", "_step_")] == 1.0)
            elif key.endswith("_step_acc"):
                row[key] = float(min(1.0, rng.binomial(6, skill) / 5))
            elif key in um.JUDGE_SCALED:
                row[key] = float(rng.binomial(5, skill))
            else:
                row[key] = float(rng.random() < skill) if key != "img_score" else float(rng.uniform(0, skill))
        rows.append(row)
    return rows


def rows(skill: float, rng: np.random.Generator, generates_images: bool = True) -> dict[str, list[dict]]:
    """{task: rows} of every task (``generates_images`` changes nothing: every task is drawn as scored)."""
    return {um.task_name(t): task_rows(t, n, skill, rng) for t, n in SIZES.items()}
