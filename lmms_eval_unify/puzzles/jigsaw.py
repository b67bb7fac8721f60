"""The 2x2 jigsaw: a reference with its bottom-right cell hidden, two candidate patches, one of which fits.

Items carry the released jigsaw data's fields: ``ref_image``, ``cand0_image``, ``cand1_image``, ``label`` (index
of the true candidate) and the reference completions ``gt_completed_image`` / ``gt_wrong_image``. Here:
the item generator (images as PIL), the parser of the answer's choice, and the baseline answer space.
A model answers ``<FINAL_ANSWER_JSON>{"choice": 0 or 1, ...}</FINAL_ANSWER_JSON>``; the released evaluator
reads the ``choice`` of the first such block (``re.search``), which must be the integer 0 or 1.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

from PIL import Image

from lmms_eval_unify.generation.protocols import Phase
from lmms_eval_unify.generation.visuals import to_pil_images

GRID = 3
MASK_COLOUR = (0, 0, 0)
FINAL_ANSWER = re.compile(r"<FINAL_ANSWER_JSON>\s*({.*?})\s*</FINAL_ANSWER_JSON>", re.IGNORECASE | re.DOTALL)


# --- items ---------------------------------------------------------------------------------------------


def _patches(photo: Image.Image, cell: int) -> list[list[Image.Image]]:
    side = min(photo.size)
    square = photo.convert("RGB").crop((0, 0, side, side)).resize((cell * GRID, cell * GRID), Image.Resampling.BICUBIC)
    return [
        [square.crop((c * cell, r * cell, (c + 1) * cell, (r + 1) * cell)) for c in range(GRID)] for r in range(GRID)
    ]


def compose_2x2(cells: list[Image.Image]) -> Image.Image:
    """Top-left, top-right, bottom-left, bottom-right cells as one 2x2 image."""
    cell = cells[0].size[0]
    canvas = Image.new("RGB", (2 * cell, 2 * cell))
    for index, image in enumerate(cells):
        canvas.paste(image, ((index % 2) * cell, (index // 2) * cell))
    return canvas


def make_jigsaw_item(photo: Image.Image, rng: random.Random, cell: int = 64) -> dict[str, Any]:
    """One item: crop ``photo`` to a 3x3 grid, keep the top-left 2x2 with the bottom-right cell masked; the
    true patch and a distractor from the patches outside that 2x2 are the candidates, in random order."""
    grid = _patches(photo, cell)
    kept = [grid[0][0], grid[0][1], grid[1][0]]
    truth = grid[1][1]
    outside = [grid[r][c] for r in range(GRID) for c in range(GRID) if r == GRID - 1 or c == GRID - 1]
    distractor = rng.choice(outside)
    label = rng.randrange(2)
    candidates = [truth, distractor] if label == 0 else [distractor, truth]
    return {
        "ref_image": compose_2x2([*kept, Image.new("RGB", (cell, cell), MASK_COLOUR)]),
        "cand0_image": candidates[0],
        "cand1_image": candidates[1],
        "label": label,
        "gt_completed_image": compose_2x2([*kept, truth]),
        "gt_wrong_image": compose_2x2([*kept, distractor]),
    }


def sample_photos() -> list[Image.Image]:
    """Colour photographs bundled with scikit-image (no download)."""
    from skimage import data

    names = ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry", "retina", "colorwheel")
    return [Image.fromarray(getattr(data, name)()).convert("RGB") for name in names]


def generate_jigsaw_items(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` items (deterministic in ``seed``), photos cycled, random crop offsets and distractors."""
    rng = random.Random(f"jigsaw/{seed}")
    photos = sample_photos()
    items = []
    for index in range(n):
        photo = photos[index % len(photos)]
        side = min(photo.size)
        crop = rng.randint(side // 2, side)
        left, top = rng.randint(0, photo.size[0] - crop), rng.randint(0, photo.size[1] - crop)
        item = make_jigsaw_item(photo.crop((left, top, left + crop, top + crop)), rng)
        items.append({"id": f"jigsaw_{seed}_{index:05d}", **item})
    return items


# --- answers -------------------------------------------------------------------------------------------


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


# --- baseline answer space ---------------------------------------------------------------------------


def final_answer_text(choice: int) -> str:
    """The final answer block naming ``choice``, as the baselines write it."""
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
"""The answer space of items that carry their reference completions (``gt_completed_image``, ``gt_wrong_image``)."""
