"""Uni-MMMU jigsaw: choice parser, scorer and baseline answer space.

Public names reused by other benchmarks (UniG2U ``unig2u_jigsaw``): :func:`parse_jigsaw_choice`,
:func:`score_jigsaw`, :data:`JIGSAW` (answer space), :func:`jigsaw_completions`.

Official scoring (``eval_ummmu.py``): text = first ``<FINAL_ANSWER_JSON>{...}</FINAL_ANSWER_JSON>`` whose
``choice`` is 0 or 1 (the string "0" fails) and equals ``label``; image = exactly two generated images,
DreamSim distance of image k to the ground-truth completion with candidate k, item distance (d0 + d1)/2,
penalty distance 1.0 for a wrong count or an unreadable image; score 1 - mean distance. The per-sample
``img_score`` = 1 - item distance, so its mean is the official dataset score.
"""

from __future__ import annotations

import json
import os
import random
import re
from dataclasses import dataclass
from typing import Any

from PIL import Image

from lmms_eval_unify import metrics
from lmms_eval_unify.benchmarks.uni_mmmu.spec import METRICS
from lmms_eval_unify.generation.protocols import Phase
from lmms_eval_unify.generation.visuals import to_pil_images
from lmms_eval_unify.output.record import OutputFailure, ParsedOutput
from lmms_eval_unify.scoring.scorer import Score, scorer

METRICS_ENV = "LMMS_EVAL_UNIFY_UNI_MMMU_METRICS"
"""JSON mapping family -> MetricConfig fields for the Uni-MMMU scorers, e.g.
``{"dreamsim": {"backbone": "clip_vitl14", "weights": "/tmp/tiny", "device": "cpu"}}`` (tests);
unset = the paper's DreamSim ensemble."""

JIGSAW_METRICS = METRICS["jigsaw"]
FINAL_ANSWER = re.compile(r"<FINAL_ANSWER_JSON>\s*({.*?})\s*</FINAL_ANSWER_JSON>", re.IGNORECASE | re.DOTALL)


def metric_config(family: str) -> dict | None:
    """The configured metric fields of ``family`` from ``LMMS_EVAL_UNIFY_UNI_MMMU_METRICS`` (None = defaults)."""
    raw = os.environ.get(METRICS_ENV)
    return json.loads(raw).get(family) if raw else None


def parse_jigsaw_choice(text: str) -> int | None:
    """The ``choice`` (0 or 1) of the FIRST ``<FINAL_ANSWER_JSON>`` block, else None (official
    ``re.search``: a first block that is not valid JSON gives None even if a later one is)."""
    match = FINAL_ANSWER.search(text or "")
    if not match:
        return None
    try:
        data = json.loads(match.group(1))
    except json.JSONDecodeError:
        return None
    choice = data.get("choice") if isinstance(data, dict) else None
    return int(choice) if not isinstance(choice, (str, list, dict)) and choice in (0, 1) else None


def jigsaw_completions(doc: dict) -> tuple[Image.Image, Image.Image]:
    """Ground-truth completed 2x2 images for candidate 0 and candidate 1 (in that order)."""
    right, wrong = to_pil_images([doc["gt_completed_image"], doc["gt_wrong_image"]])
    return (right, wrong) if int(doc["label"]) == 0 else (wrong, right)


@scorer(*JIGSAW_METRICS)
def score_jigsaw(doc: dict, parsed: ParsedOutput) -> Score:
    """Per-sample ``img_score`` and ``text_acc`` of one usable jigsaw output (a missing DreamSim checkpoint
    raises); a wrong image count or an unreadable image is penalised with distance 1 and named."""
    choice = parse_jigsaw_choice(parsed.text)
    details: dict[str, Any] = {"choice": choice}
    text_acc = float(choice is not None and choice == int(doc["label"]))
    loaded = parsed.load_images(expected=2)
    images = None if isinstance(loaded, OutputFailure) else loaded
    if isinstance(loaded, OutputFailure):
        details["image_failure"] = loaded.detail
    scored = metrics.jigsaw_dreamsim_score(
        [images], [jigsaw_completions(doc)], config=metric_config("dreamsim")
    )
    details["distance"] = scored.distances[0]
    invalid = loaded.reason if isinstance(loaded, OutputFailure) else ""
    return Score({"img_score": 1.0 - scored.distances[0], "text_acc": text_acc}, invalid, details)


# --- baseline answer space ---------------------------------------------------------------------------


def final_answer_text(choice: int) -> str:
    return f'<FINAL_ANSWER_JSON>{{"choice": {choice}, "rationale": "seam continuity"}}</FINAL_ANSWER_JSON>'


@dataclass(frozen=True)
class JigsawPlan:
    """Item (k) = a completed 2x2 image per candidate, then the final choice."""

    choice: int
    panels: tuple[Image.Image, Image.Image]

    def text(self, phase: Phase) -> str:
        return final_answer_text(self.choice) if phase.name == "final" else f"Item ({phase.step})."

    def image(self, phase: Phase) -> Image.Image:
        return self.panels[(phase.step or 1) - 1]


@dataclass(frozen=True)
class JigsawSpace:
    """Oracle: the true choice and both true completions. Random: a uniform choice and, per panel, the
    completion of a uniformly drawn candidate (text chance 0.5)."""

    def plan(self, doc: dict, inputs: list[Image.Image], rng: random.Random, oracle: bool) -> JigsawPlan:
        completions = jigsaw_completions(doc)
        if oracle:
            return JigsawPlan(int(doc["label"]), completions)
        return JigsawPlan(rng.randrange(2), (completions[rng.randrange(2)], completions[rng.randrange(2)]))


JIGSAW = JigsawSpace()
