"""Uni-MMMU jigsaw: offline item generator, choice parser, scorer and baseline answer space.

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
from lmms_eval_unify.protocols import Phase
from lmms_eval_unify.record import OutputFailure, ParsedOutput
from lmms_eval_unify.scorer import Score, scorer
from lmms_eval_unify.visuals import to_pil_images

METRICS_ENV = "LMMS_EVAL_UNIFY_UNI_MMMU_METRICS"
"""JSON mapping family -> MetricConfig fields for the Uni-MMMU scorers, e.g.
``{"dreamsim": {"backbone": "clip_vitl14", "weights": "/tmp/tiny", "device": "cpu"}}`` (tests);
unset = the paper's DreamSim ensemble."""

JIGSAW_METRICS = METRICS["jigsaw"]
FINAL_ANSWER = re.compile(r"<FINAL_ANSWER_JSON>\s*({.*?})\s*</FINAL_ANSWER_JSON>", re.IGNORECASE | re.DOTALL)
GRID = 3
MASK_COLOUR = (0, 0, 0)


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


# --- offline generator -------------------------------------------------------------------------------


def _patches(photo: Image.Image, cell: int) -> list[list[Image.Image]]:
    side = min(photo.size)
    square = photo.convert("RGB").crop((0, 0, side, side)).resize((cell * GRID, cell * GRID), Image.BICUBIC)
    return [
        [square.crop((c * cell, r * cell, (c + 1) * cell, (r + 1) * cell)) for c in range(GRID)]
        for r in range(GRID)
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
