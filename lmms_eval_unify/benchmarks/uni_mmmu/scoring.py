"""Per-sample score of the Uni-MMMU move puzzles (maze, sliding): the shared puzzle scorer of
``lmms_eval_unify.puzzles.scoring`` on the task's ``metadata.domain``. The other tasks' scorers are in their
own modules (``jigsaw.score_jigsaw``, ``geometry.score_geometry``, ``science.score_science``,
``code.score_code``)."""

from __future__ import annotations

from typing import Any

from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.scoring import METRICS, score_move_sequence
from lmms_eval_unify.scorer import raw_scorer
from lmms_eval_unify.visuals import to_pil_images


@raw_scorer(*METRICS)
def score_puzzle(doc: dict, results: list[Any], *, domain: str) -> dict:
    """Text and image step/sample accuracies of one move sequence (the puzzle scorer reads the output and
    handles unusable ones itself)."""
    return score_move_sequence(DOMAINS[domain], doc, results[0], to_pil_images(doc["initial_image"])[0])
