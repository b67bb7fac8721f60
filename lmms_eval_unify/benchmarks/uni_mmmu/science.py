"""Uni-MMMU science (physics, chemistry, biology): scorer, baseline answer space.

Protocol (official ``science.py``): the initial image and the condition; stage 1 the ``<OUTPUT_PROMPT>``
explanation, stage 2 one final-state image with that text in context. Scoring (official ``eval_ummmu.py``):
the whole text is judged against the condition and the ground-truth final-state text (``reasoning_correct``
-> ``reasoning_acc``, ``result_correct`` -> ``text_acc``); the first generated image is judged with the
initial image, the condition and the ground-truth text (``image_correct`` -> ``img_acc``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from PIL import Image

from lmms_eval_unify.benchmarks.uni_mmmu.judged import Judged, ask, not_judged, score_judged
from lmms_eval_unify.benchmarks.uni_mmmu.spec import JUDGED_METRICS, METRICS
from lmms_eval_unify.generation.answer_spaces import FixedPlan
from lmms_eval_unify.generation.visuals import to_pil_images
from lmms_eval_unify.output.record import ParsedOutput
from lmms_eval_unify.scoring.scorer import Score, scorer

IMAGE_METRICS, TEXT_METRICS = JUDGED_METRICS["science"]
TASK = "uni_mmmu_science"


def initial_image(doc: dict) -> Image.Image:
    return to_pil_images(doc["initial_image"])[0]


@scorer(*METRICS["science"])
def score_science(doc: dict, parsed: ParsedOutput, *, task: str = TASK) -> Score:
    """Per-sample ``reasoning_acc``, ``text_acc`` (result), ``img_acc``, ``invalid_outputs``; ``details`` also
    records the ``discipline`` (``level_1_category``) for the leaderboard's per-discipline board."""
    condition, reference = str(doc["input_prompt"]), str(doc["output_prompt"])

    def judge_image(images: list[Image.Image]) -> Judged:
        return ask(
            "uni_mmmu.science.image",
            {"img_acc": "image_correct"},
            task,
            variables={"condition": condition, "reference": reference},
            images={"initial": initial_image(doc), "generated": images[0]},
        )

    def judge_text(text: str) -> Judged:
        if not text.strip():
            return not_judged(TEXT_METRICS, "empty answer")
        return ask(
            "uni_mmmu.science.text",
            {"reasoning_acc": "reasoning_correct", "text_acc": "result_correct"},
            task,
            variables={"condition": condition, "reference": reference, "response": text},
        )

    score = score_judged(parsed, IMAGE_METRICS, TEXT_METRICS, judge_image, judge_text)
    score.details["discipline"] = str(doc.get("level_1_category") or "")
    return score


# --- baseline answer space ---------------------------------------------------------------------------

NO_CHANGE = "<OUTPUT_PROMPT> The condition has no visible effect; the scene stays exactly as it is. </OUTPUT_PROMPT>"


def explanation(reference: str) -> str:
    return f"<OUTPUT_PROMPT> {reference} </OUTPUT_PROMPT>"


@dataclass(frozen=True)
class ScienceSpace:
    """Oracle: the ground-truth text and final-state image (``final_image``; documents without one, such as
    the official data, leave the oracle without an image answer). Random: two independent fair coins, the
    ground-truth text or "no visible change", and the final-state image or the unchanged initial image
    (chance 1/2 for each metric when the judge agrees with the ground truth)."""

    def plan(self, doc: dict, inputs: list[Image.Image], rng: random.Random, oracle: bool) -> FixedPlan:
        final = to_pil_images(doc["final_image"])[0] if doc.get("final_image") else None
        reference = explanation(str(doc["output_prompt"]))
        if oracle:
            return FixedPlan(reference, final)
        text = reference if rng.randrange(2) else NO_CHANGE
        return FixedPlan(text, final if final is not None and rng.randrange(2) else initial_image(doc))


SCIENCE = ScienceSpace()
