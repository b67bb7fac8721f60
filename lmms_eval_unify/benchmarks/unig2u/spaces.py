"""Answer spaces of the UniG2U tasks for ``unify_oracle`` / ``unify_random``.

Every text answer space also "generates" an auxiliary image for GtA stage 1: a copy of the first input
image (or a blank canvas), so both instruments run the Direct and the GtA protocol alike. Maze and sliding
use the shared puzzle spaces (``lmms_eval_unify.puzzles.answer_space:MAZE`` / ``SLIDING``); jigsaw reuses the
shared jigsaw plan (``lmms_eval_unify.puzzles.jigsaw``), with completions built from the published fields
(UniG2U's file has no ground-truth completion images).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PIL import Image

from lmms_eval_unify.benchmarks.unig2u.prompts import babyvision_is_choice, illusion_candidates, vsp_kind
from lmms_eval_unify.benchmarks.unig2u.scoring import LABELS, babyvision_truth, illusion_labels
from lmms_eval_unify.generation.answer_spaces import FixedPlan
from lmms_eval_unify.generation.protocols import Phase
from lmms_eval_unify.generation.visuals import to_pil_images
from lmms_eval_unify.puzzles.jigsaw import JigsawPlan, final_answer_text

# What the random player may say on open answers (chance levels in the tests are computed from these).
CHART_RANDOM_RANGE = (0, 100)
VSP_RANDOM_RANGE = (-3, 3)
COLLISION_RANDOM_TIMES = tuple(k / 2 for k in range(21))
FREE_RANDOM_RANGE = (0, 100)
"""Open answers of the judged subtasks (geometry, physics, BabyVision blanks): a uniform integer."""


def _auxiliary(inputs: list[Image.Image]) -> Image.Image:
    return inputs[0].copy() if inputs else Image.new("RGB", (256, 256), "white")


@dataclass(frozen=True)
class TextSpace:
    """Oracle: ``truth(doc)``; random: ``guess(doc, rng)``; both formatted by ``answer_format``."""

    truth: Callable[[dict], str]
    guess: Callable[[dict, random.Random], str]
    answer_format: str = "{}"

    def plan(self, doc: dict, inputs: list[Image.Image], rng: random.Random, oracle: bool) -> FixedPlan:
        answer = self.truth(doc) if oracle else self.guess(doc, rng)
        return FixedPlan(self.answer_format.format(answer), _auxiliary(inputs))


def _letters(doc: dict) -> Sequence[str]:
    options = doc.get("options")
    return LABELS[: len(options)] if options is not None and len(options) >= 2 else LABELS


def _letter_truth(doc: dict) -> str:
    return str(doc["answer"]).strip().strip("()").upper()[:1]


def _vsp_truth(doc: dict) -> str:
    if vsp_kind(doc) == "collision":
        return f"Car: {float(doc['gt_car'])}\nPerson: {float(doc['gt_person'])}"
    return _path_text(int(doc["gt_north_south"]), int(doc["gt_east_west"]))


def _path_text(north: int, east: int) -> str:
    lines = []
    if north:
        lines.append(f"{'North' if north > 0 else 'South'}: {abs(north)}")
    if east:
        lines.append(f"{'East' if east > 0 else 'West'}: {abs(east)}")
    return "<Output>\n" + "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1))


def _vsp_guess(doc: dict, rng: random.Random) -> str:
    if vsp_kind(doc) == "collision":
        return f"Car: {rng.choice(COLLISION_RANDOM_TIMES)}\nPerson: {rng.choice(COLLISION_RANDOM_TIMES)}"
    return _path_text(rng.randint(*VSP_RANDOM_RANGE), rng.randint(*VSP_RANDOM_RANGE))


def _illusion_space(question: str, subset: str) -> TextSpace:
    return TextSpace(
        truth=lambda doc: illusion_labels(doc["image_name"])[question],
        guess=lambda doc, rng: rng.choice(illusion_candidates(subset)),
    )


def _free_guess(doc: dict, rng: random.Random) -> str:
    return str(rng.randint(*FREE_RANDOM_RANGE))


def _babyvision_guess(doc: dict, rng: random.Random) -> str:
    if babyvision_is_choice(doc):
        return chr(65 + rng.randrange(len(doc["options"])))
    return _free_guess(doc, rng)


MULTIPLE_CHOICE = TextSpace(_letter_truth, lambda doc, rng: rng.choice(list(_letters(doc))), "Answer: {}")
MMSI = TextSpace(_letter_truth, lambda doc, rng: rng.choice(list(LABELS)), "`{}`")
CHARTQA = TextSpace(lambda doc: str(doc["answer"]), lambda doc, rng: str(rng.randint(*CHART_RANDOM_RANGE)))
VSP = TextSpace(_vsp_truth, _vsp_guess)
ILLUSION = {f"{s}_{q}": _illusion_space(q, s) for s in ("icon", "logo", "in") for q in ("scene", "shape")}
ICON_SCENE, ICON_SHAPE = ILLUSION["icon_scene"], ILLUSION["icon_shape"]
LOGO_SCENE, LOGO_SHAPE = ILLUSION["logo_scene"], ILLUSION["logo_shape"]
IN_SCENE, IN_SHAPE = ILLUSION["in_scene"], ILLUSION["in_shape"]
GEOMETRY = TextSpace(lambda doc: str(doc["answer"]), _free_guess, "Step by step, the final answer is {}.")
PHYX = TextSpace(lambda doc: str(doc["answer"]), _free_guess, "\\boxed{{{}}}")
BABYVISION = TextSpace(babyvision_truth, _babyvision_guess, "\\boxed{{{}}}")


def jigsaw_completion(doc: dict, candidate: int) -> Image.Image:
    """The reference 2x2 image with candidate 0 or 1 pasted into its bottom-right cell."""
    reference, patch = to_pil_images([doc["ref_image"], doc[f"cand{candidate}_image"]])
    width, height = reference.size
    completed = reference.copy()
    completed.paste(patch.resize((width - width // 2, height - height // 2)), (width // 2, height // 2))
    return completed


class DirectJigsawPlan(JigsawPlan):
    """The shared jigsaw plan; a Direct request (phase "answer") gets the final choice too."""

    def text(self, phase: Phase) -> str:
        return final_answer_text(self.choice) if phase.name == "answer" else super().text(phase)


@dataclass(frozen=True)
class JigsawSpace:
    """Oracle: the true choice and both completions; random: a uniform choice (chance 0.5) and, per panel, the
    completion with a uniformly drawn candidate."""

    def plan(self, doc: dict, inputs: list[Image.Image], rng: random.Random, oracle: bool) -> DirectJigsawPlan:
        if oracle:
            return DirectJigsawPlan(int(doc["label"]), (jigsaw_completion(doc, 0), jigsaw_completion(doc, 1)))
        panels = (jigsaw_completion(doc, rng.randrange(2)), jigsaw_completion(doc, rng.randrange(2)))
        return DirectJigsawPlan(rng.randrange(2), panels)


JIGSAW = JigsawSpace()
