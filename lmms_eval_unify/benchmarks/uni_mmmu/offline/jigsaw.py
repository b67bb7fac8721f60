"""Offline generator of Uni-MMMU jigsaw items in the official data's fields (images as PIL): the data that
``lmms-eval-unify data generate uni_mmmu`` writes; the scorer and answer space stay in ``uni_mmmu.jigsaw``."""

from __future__ import annotations

import random
from typing import Any

from PIL import Image

GRID = 3
MASK_COLOUR = (0, 0, 0)


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
