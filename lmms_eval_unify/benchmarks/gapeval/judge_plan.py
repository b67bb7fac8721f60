"""The judgements a GapEval task asks per sample (``lmms-eval-unify judge estimate``): one, with the template of
the item's category and direction (``scoring.score_und`` / ``score_gen``), and the task's ``metadata.judge``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval_unify.benchmarks.gapeval.spec import DIRECTIONS, judge_template
from lmms_eval_unify.judges.estimate import PlannedJudgement


def planned_judgements(task: str, metadata: Mapping[str, Any], doc: Mapping[str, Any]) -> list[PlannedJudgement]:
    """Understanding: the question's images and the reference image; generation: the original images of an
    editing item, the one generated image and the reference image."""
    direction = task.rsplit("_", 1)[-1]
    if direction not in DIRECTIONS:
        raise ValueError(f"{task} is not a GapEval task (<category>_und or <category>_gen)")
    inputs, reference = len(doc.get("images") or []), int(doc.get("ref_image") is not None)
    generation = (inputs if doc["gen_uses_image"] else 0) + 1
    images = inputs + reference if direction == "und" else generation + reference
    return [PlannedJudgement(judge_template(doc["category"], direction), images, metadata.get("judge"))]
