"""Per-sample score of the Uni-MMMU move puzzles (maze, sliding): the shared puzzle scorer of
``lmms_eval_unify.puzzles.scoring`` on the task's ``metadata.domain``, or the released evaluator's rules
(``official.py``). The other tasks' scorers are in their own modules (``jigsaw.score_jigsaw``,
``geometry.score_geometry``, ``science.score_science``, ``code.score_code``)."""

from __future__ import annotations

from typing import Any

from lmms_eval_unify.benchmarks.uni_mmmu.official import score_released
from lmms_eval_unify.generation.visuals import to_pil_images
from lmms_eval_unify.puzzles.scoring import METRICS, score_puzzle_sample
from lmms_eval_unify.scoring.scorer import raw_scorer


@raw_scorer(*METRICS)
def score_puzzle(doc: dict, results: list[Any], *, domain: str, variant: str = "corrected") -> dict:
    """Text and image step/sample accuracies of one move sequence (the puzzle scorer reads the output and
    handles unusable ones itself). ``variant: official`` applies the released evaluator's parser and
    reference boards (``official.py``; sliding references from ``step_images``)."""
    if variant == "corrected":
        return score_puzzle_sample(domain, doc, results[0])
    if variant != "official":
        raise ValueError(f"unknown scoring variant {variant!r}; choose corrected or official")
    initial = to_pil_images(doc["initial_image"])[0]
    steps = doc.get("step_images")
    return score_released(domain, doc, results[0], initial, None if steps is None else to_pil_images(steps))
