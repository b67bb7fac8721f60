"""Synthetic GapEval samples at the paper's size: test and bench support (``lmms_eval_unify.testing``),
never used by a run."""

from __future__ import annotations

import numpy as np

from lmms_eval_unify.benchmarks.gapeval import paper as ge
from lmms_eval_unify.testing.synthetic import bits, unsupported_rows

SIZE = 150


def rows(skill: float, rng: np.random.Generator, generates_images: bool = True) -> dict[str, list[dict]]:
    """{task: rows} of both directions of every category; without image generation, generation is unsupported."""
    tasks = {}
    for category in ge.CATEGORIES:
        und, gen = ge.task_names(category)
        tasks[und] = [{"correct": a} for a in bits(rng, skill, SIZE)]
        tasks[gen] = (
            [{"correct": a} for a in bits(rng, skill * 0.7, SIZE)] if generates_images else unsupported_rows(SIZE)
        )
    return tasks
