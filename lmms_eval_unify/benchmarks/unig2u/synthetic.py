"""Synthetic UniG2U samples at the paper's sizes: test and bench support (``lmms_eval_unify.testing``),
never used by a run."""

from __future__ import annotations

import numpy as np

from lmms_eval_unify.benchmarks.unig2u import paper as ug
from lmms_eval_unify.testing.synthetic import bits


def rows(skill: float, rng: np.random.Generator, generates_images: bool = True) -> dict[str, list[dict]]:
    """{task: rows} of every subtask, direct and (with image generation) its GtA variant."""
    tasks = {}
    for subs in ug.CATEGORY_SUBTASKS.values():
        for s, n in subs.items():
            tasks[ug.task_name(s)] = [{"acc": a} for a in bits(rng, skill, n)]
            if generates_images:
                tasks[ug.task_name(s, "_gta")] = [{"acc": a} for a in bits(rng, skill * rng.uniform(0.8, 1.2), n)]
    return tasks
