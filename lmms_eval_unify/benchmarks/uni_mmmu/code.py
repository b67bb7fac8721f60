"""Uni-MMMU code rendering (SVG): scorer and baseline answer space.

Protocol (official ``code_rendering.py``): the SVG source; stage 1 the ``<RENDER_SUMMARY>`` text ("now
thinking, do not generate image now"), stage 2 one rendered image with that text in context. Scoring
(official ``eval_ummmu.py``): the first ``<RENDER_SUMMARY>…</RENDER_SUMMARY>`` is judged against the
reference rendering (``text_semantic_match`` -> ``text_acc``; no summary -> 0 without a judge call); every
generated image is judged against the reference (``shape_color_accuracy``, ``position_accuracy``, integers
0–5) and the image with the highest sum counts (``shape_color_score``, ``position_score``, raw 0–5; the
leaderboard maps them to 0–100). ``details.image.verdict`` is the official verdict of the kept scores.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from PIL import Image

from lmms_eval_unify.benchmarks.uni_mmmu.judged import Judged, ask, not_judged, score_judged
from lmms_eval_unify.benchmarks.uni_mmmu.spec import JUDGED_METRICS, METRICS
from lmms_eval_unify.benchmarks.uni_mmmu.svg import (
    COLOUR_NAMES,
    render_svg,
)
from lmms_eval_unify.generation.answer_spaces import FixedPlan
from lmms_eval_unify.generation.visuals import to_pil_images
from lmms_eval_unify.output.record import ParsedOutput
from lmms_eval_unify.scoring.scorer import Score, scorer

IMAGE_METRICS, TEXT_METRICS = JUDGED_METRICS["code"]
TASK = "uni_mmmu_code"
SUMMARY = re.compile(r"<RENDER_SUMMARY>\s*(.*?)\s*</RENDER_SUMMARY>", re.IGNORECASE | re.DOTALL)


def render_summary(text: str) -> str:
    """The first ``<RENDER_SUMMARY>`` block, stripped ("" when there is none), as the official evaluator."""
    match = SUMMARY.search(text or "")
    return match.group(1).strip() if match else ""


def verdict(shape_color: float, position: float) -> str:
    """Official verdict: match if both >= 4; partial if both >= 2 or one >= 4 and the other >= 1."""
    if shape_color >= 4 and position >= 4:
        return "match"
    if (shape_color >= 2 and position >= 2) or (max(shape_color, position) >= 4 and min(shape_color, position) >= 1):
        return "partial"
    return "mismatch"


def reference_image(doc: dict) -> Image.Image:
    """The ground-truth rendering (``gt_image``), else the SVG rasterised safely."""
    return to_pil_images(doc["gt_image"])[0] if doc.get("gt_image") else render_svg(doc["svg"])


@scorer(*METRICS["code"])
def score_code(doc: dict, parsed: ParsedOutput, *, task: str = TASK) -> Score:
    """Per-sample ``text_acc``, ``shape_color_score``, ``position_score`` (0–5), ``invalid_outputs``."""
    reference = reference_image(doc)

    def judge_images(images: list[Image.Image]) -> Judged:
        fields = {"shape_color_score": "shape_color_accuracy", "position_score": "position_accuracy"}
        judged = [
            ask("uni_mmmu.code.image", fields, task, images={"reference": reference, "generated": image})
            for image in images
        ]
        best = max(judged, key=lambda j: j.metrics["shape_color_score"] + j.metrics["position_score"])
        invalid = next((j.invalid for j in judged if j.invalid), "")
        log = {**best.log, "verdict": verdict(*best.metrics.values()), "judged_images": len(judged)}
        return Judged(best.metrics, invalid, log)

    def judge_summary(text: str) -> Judged:
        summary = render_summary(text)
        if not summary:
            return not_judged(TEXT_METRICS, "no <RENDER_SUMMARY> block")
        return ask(
            "uni_mmmu.code.text",
            {"text_acc": "text_semantic_match"},
            task,
            variables={"summary": summary},
            images={"reference": reference},
        )

    return score_judged(parsed, IMAGE_METRICS, TEXT_METRICS, judge_images, judge_summary, first_image_only=False)


# --- baseline answer space ---------------------------------------------------------------------------


def summary_text(summary: str) -> str:
    return f"<RENDER_SUMMARY>{summary}</RENDER_SUMMARY>"


def recoloured(summary: str, rng: random.Random) -> str:
    """``summary`` with one named palette colour replaced by a palette colour it does not mention."""
    named = [hex_code for hex_code in COLOUR_NAMES if hex_code in summary]
    unused = [hex_code for hex_code in COLOUR_NAMES if hex_code not in summary]
    if not named or not unused:
        return ""
    old, new = rng.choice(named), rng.choice(unused)
    return summary.replace(f"{COLOUR_NAMES[old]} ({old})", f"{COLOUR_NAMES[new]} ({new})")


@dataclass(frozen=True)
class CodeSpace:
    """Oracle: the ground-truth summary (``summary``; documents without one get no summary) and rendering.
    Random: two independent fair coins, the true summary or one with a colour swapped for an unused palette
    colour, and the true rendering or an empty white canvas (chance 1/2 for ``text_acc`` and 2.5 of 5 for
    each image score when the judge agrees with the ground truth)."""

    def plan(self, doc: dict, inputs: list[Image.Image], rng: random.Random, oracle: bool) -> FixedPlan:
        summary = str(doc.get("summary") or "")
        render = reference_image(doc)
        if oracle:
            return FixedPlan(summary_text(summary) if summary else "", render)
        text = summary if rng.randrange(2) or not summary else recoloured(summary, rng)
        blank = Image.new("RGB", render.size, "white")
        return FixedPlan(summary_text(text) if text else "", render if rng.randrange(2) else blank)


CODE = CodeSpace()
