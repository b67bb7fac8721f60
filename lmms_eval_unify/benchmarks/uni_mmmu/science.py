"""Uni-MMMU science (physics, chemistry, biology): scorer, offline item generator, baseline answer space.

Protocol (official ``science.py``): the initial image and the condition; stage 1 the ``<OUTPUT_PROMPT>``
explanation, stage 2 one final-state image with that text in context. Scoring (official ``eval_ummmu.py``):
the whole text is judged against the condition and the ground-truth final-state text (``reasoning_correct``
-> ``reasoning_acc``, ``result_correct`` -> ``text_acc``); the first generated image is judged with the
initial image, the condition and the ground-truth text (``image_correct`` -> ``img_acc``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from PIL import Image, ImageDraw

from lmms_eval_unify.benchmarks.uni_mmmu.judged import Judged, ask, not_judged, score_judged
from lmms_eval_unify.benchmarks.uni_mmmu.spec import JUDGED_METRICS, METRICS
from lmms_eval_unify.instruments import FixedPlan
from lmms_eval_unify.record import ParsedOutput
from lmms_eval_unify.scorer import Score, scorer
from lmms_eval_unify.visuals import to_pil_images

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


# --- offline generator -------------------------------------------------------------------------------

COLOURS = {
    "red": (214, 39, 40),
    "orange": (255, 127, 14),
    "yellow": (238, 210, 2),
    "green": (44, 160, 44),
    "blue": (31, 119, 180),
    "purple": (148, 103, 189),
    "grey": (127, 127, 127),
}
"""Colour names of the generated scenes (also read by the reference judge)."""
POSITIONS = ("top", "middle", "bottom")
SIZE = 240
BACKGROUND = (245, 240, 225)


@dataclass(frozen=True)
class Scenario:
    """A scene: an object of one colour at one height, and what the condition makes of it."""

    level_1: str
    level_2: str
    thing: str
    start: tuple[str, str]  # (colour, position)
    end: tuple[str, str]
    condition: str
    explanation: str


SCENARIOS = (
    Scenario("Physics", "Mechanics", "ball", ("red", "top"), ("red", "bottom"),
             "The shelf holding the ball at the top of the scene is removed.",
             "Without support, gravity accelerates the ball downward until it rests on the floor."),
    Scenario("Chemistry", "Acid-base indicators", "litmus solution", ("purple", "middle"), ("red", "middle"),
             "Hydrochloric acid is added to the purple litmus solution.",
             "Litmus turns red in acidic solution, so the added acid changes its colour."),
    Scenario("Biology", "Plant physiology", "leaf", ("green", "middle"), ("yellow", "middle"),
             "The plant is kept in complete darkness for three weeks.",
             "Without light, chlorophyll is broken down and not replaced, so the leaf yellows."),
    Scenario("Physics", "Thermal", "iron bar", ("grey", "middle"), ("orange", "middle"),
             "The iron bar is heated in a furnace to about 1000 °C.",
             "Hot iron emits visible thermal radiation; near 1000 °C it glows orange."),
    Scenario("Chemistry", "Displacement reactions", "copper sulfate solution", ("blue", "middle"),
             ("green", "middle"), "An iron nail is left in the blue copper(II) sulfate solution for a day.",
             "Iron displaces copper, forming pale green iron(II) sulfate in solution."),
    Scenario("Biology", "Fruit ripening", "tomato", ("green", "bottom"), ("red", "bottom"),
             "The green tomato is left to ripen at room temperature for ten days.",
             "Ripening converts chlorophyll and accumulates lycopene, turning the tomato red."),
)  # fmt: skip


def final_state(thing: str, colour: str, position: str) -> str:
    """The machine-checkable last sentence of a generated ground-truth text."""
    return f"Final state: a {colour} {thing} at the {position} of the scene."


def draw_scene(colour: str, position: str, x_offset: int) -> Image.Image:
    """A floor line and one coloured disc at ``position`` (top/middle/bottom third)."""
    image = Image.new("RGB", (SIZE, SIZE), BACKGROUND)
    draw = ImageDraw.Draw(image)
    draw.line([(0, SIZE - 12), (SIZE, SIZE - 12)], fill=(90, 70, 50), width=4)
    cy = {"top": SIZE // 6, "middle": SIZE // 2, "bottom": SIZE - SIZE // 6 - 8}[position]
    cx, r = SIZE // 2 + x_offset, 28
    draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=COLOURS[colour], outline=(40, 40, 40), width=2)
    return image


def generate_science_items(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` items in the official ``dim_all.json`` sample fields (deterministic in ``seed``), scenarios in
    turn (physics, chemistry, biology, ...); ``final_image`` is the ground-truth final state (the official data has only its text)."""
    rng = random.Random(f"science/{seed}")
    items = []
    for index in range(n):
        scenario = SCENARIOS[index % len(SCENARIOS)]
        offset = rng.randint(-50, 50)
        items.append(
            {
                "id": f"science_{seed}_{index:05d}",
                "level_1_category": scenario.level_1,
                "level_2_category": scenario.level_2,
                "input_prompt": scenario.condition,
                "output_prompt": f"{scenario.explanation} {final_state(scenario.thing, *scenario.end)}",
                "initial_image": draw_scene(*scenario.start, offset),
                "final_image": draw_scene(*scenario.end, offset),
            }
        )
    return items


# --- baseline answer space ---------------------------------------------------------------------------

NO_CHANGE = (
    "<OUTPUT_PROMPT> The condition has no visible effect; the scene stays exactly as it is. </OUTPUT_PROMPT>"
)


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
