"""Offline generator of Uni-MMMU science items in the official data's fields (images as PIL): the data that
``lmms-eval-unify data generate uni_mmmu`` writes; the scorer and answer space stay in ``uni_mmmu.science``."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from PIL import Image, ImageDraw

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
    turn (physics, chemistry, biology, ...); ``final_image`` is the ground-truth final state (the official data
    has only its text)."""
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
