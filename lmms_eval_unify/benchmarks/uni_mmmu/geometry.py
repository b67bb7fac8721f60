"""Uni-MMMU geometry with auxiliary lines: scorer and baseline answer space.

Protocol (official ``math_geo.py``): stage 1 draws the auxiliary lines on the base figure (one image),
stage 2 writes the solution with that overlay in context. Scoring (official ``eval_ummmu.py``): the first
generated image is judged by the VLM overlay judge against the base figure, the ground-truth overlay and
the auxiliary-line instructions (``overlay_ok`` -> ``img_acc``); the whole text by the LLM judge against the
problem and the ground-truth solution (``text_ok`` = rigorous AND correct -> ``text_acc``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from string import Template

from PIL import Image

from lmms_eval_unify.benchmarks.uni_mmmu.judged import Judged, ask, not_judged, score_judged
from lmms_eval_unify.benchmarks.uni_mmmu.spec import JUDGED_METRICS, METRICS
from lmms_eval_unify.generation.answer_spaces import FixedPlan
from lmms_eval_unify.generation.visuals import to_pil_images
from lmms_eval_unify.output.record import ParsedOutput
from lmms_eval_unify.scoring.scorer import Score, scorer

IMAGE_METRICS, TEXT_METRICS = JUDGED_METRICS["geometry"]
TASK = "uni_mmmu_geometry"


def choices(doc: dict) -> list[str]:
    """``choices_en`` as a list (a JSON string or a list in the parquet)."""
    raw = doc.get("choices_en")
    if isinstance(raw, str):
        raw = json.loads(raw) if raw.strip().startswith("[") else [raw] if raw.strip() else []
    return [str(c) for c in raw or []]


def problem_text(doc: dict) -> str:
    return doc.get("problem_text_en") or doc.get("problem_text") or "(no problem text)"


def solution_text(doc: dict) -> str:
    return doc.get("solution_en") or doc.get("solution") or ""


def task_type(doc: dict) -> str:
    """The official text judge's problem type: CALCULATION when ``type`` starts with "calc", else PROVING."""
    return "CALCULATION" if str(doc.get("type") or "").lower().startswith("calc") else "PROVING"


def prompt(doc: dict, template: str) -> str:
    """The official template with ``$PROBLEM_TEXT``, ``$CHOICES_TEXT`` and ``$AUX_EN`` filled in."""
    listed = choices(doc)
    return Template(template).safe_substitute(
        PROBLEM_TEXT=problem_text(doc),
        CHOICES_TEXT="\n".join(listed) if listed else "(no choices)",
        AUX_EN=(doc.get("auxiliary_text_en") or "").strip(),
    )


@scorer(*METRICS["geometry"])
def score_geometry(doc: dict, parsed: ParsedOutput, *, task: str = TASK) -> Score:
    """Per-sample ``img_acc``, ``text_acc``, ``invalid_outputs`` (two judgements, cached by the judge layer)."""
    original, reference = to_pil_images([doc["original_image"], doc["auxiliary_image"]])

    def judge_overlay(images: list[Image.Image]) -> Judged:
        return ask(
            "uni_mmmu.geometry.image",
            {"img_acc": "overlay_ok"},
            task,
            variables={"instructions": doc.get("auxiliary_text_en") or "(none)"},
            images={"original": original, "reference": reference, "generated": images[0]},
        )

    def judge_solution(text: str) -> Judged:
        if not text.strip():
            return not_judged(TEXT_METRICS, "empty answer")
        variables = {"task_type": task_type(doc), "problem": problem_text(doc), "solution": solution_text(doc),
                     "response": text}  # fmt: skip
        return ask("uni_mmmu.geometry.text", {"text_acc": "text_ok"}, task, variables=variables)

    return score_judged(parsed, IMAGE_METRICS, TEXT_METRICS, judge_overlay, judge_solution)


# --- baseline answer space ---------------------------------------------------------------------------


def final_answer(choice: str) -> str:
    """The value of a choice such as ``"B. 2.4"``."""
    return choice.split(". ", 1)[-1]


@dataclass(frozen=True)
class GeometrySpace:
    """Oracle: the ground-truth overlay and solution. Random: the ground-truth overlay or the unchanged base
    figure (a forgotten overlay) with probability 1/2 each, and a solution ending in a uniformly drawn choice
    (chance 1/k with k choices, 1/4 on the generated items; no choices -> an unfinished solution, chance 0)."""

    def plan(self, doc: dict, inputs: list[Image.Image], rng: random.Random, oracle: bool) -> FixedPlan:
        original, overlay = to_pil_images([doc["original_image"], doc["auxiliary_image"]])
        if oracle:
            return FixedPlan(solution_text(doc), overlay)
        listed = choices(doc)
        ending = f"**Final answer: {final_answer(rng.choice(listed))}**" if listed else "No conclusion."
        image = overlay if rng.randrange(2) else original
        return FixedPlan(f"Using the auxiliary line, the required length follows. {ending}", image)


GEOMETRY = GeometrySpace()
