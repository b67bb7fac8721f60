"""Crisp flat-colour drawings for the offline GapEval items, and what the reference judge reads back from them.

Every fixture picture is made of solid shapes in a fixed palette on a grey background, drawn without
anti-aliasing. Its *content* is the number of separate blobs of each palette colour
(:func:`colour_counts`): two renderings of the same answer (different layout, size, shape placement) have the
same content, a wrong answer does not. The reference judge compares contents, and rejects near pixel copies
of the reference image (GapEval's anti-plagiarism rule).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import numpy as np
from PIL import Image, ImageDraw
from scipy import ndimage

BACKGROUND = (190, 190, 190)
PALETTE = {
    "red": (220, 30, 30),
    "green": (20, 150, 60),
    "blue": (30, 60, 210),
    "yellow": (245, 215, 20),
    "orange": (245, 130, 20),
    "purple": (140, 50, 170),
    "black": (15, 15, 15),
    "white": (255, 255, 255),
}
SHAPES = ("circle", "square", "triangle")
MIN_BLOB_PIXELS = 12
"""Smaller connected regions are edge noise, not objects."""
COPY_THRESHOLD = 2.0
"""Mean absolute pixel difference (0-255) below which an image counts as a copy of the reference."""
SIZE = 256


def _draw_shape(draw: ImageDraw.ImageDraw, shape: str, box: tuple[int, int, int, int], colour: str) -> None:
    fill = PALETTE[colour]
    x0, y0, x1, y1 = box
    if shape == "circle":
        draw.ellipse(box, fill=fill)
    elif shape == "square":
        draw.rectangle(box, fill=fill)
    elif shape == "triangle":
        draw.polygon([((x0 + x1) // 2, y0), (x1, y1), (x0, y1)], fill=fill)
    else:
        raise ValueError(f"unknown shape {shape!r}")


def draw_objects(objects: Sequence[tuple[str, str]], rng: random.Random, size: int = SIZE) -> Image.Image:
    """``(colour, shape)`` objects at random cells of a 5x5 grid (never touching), random sizes and offsets."""
    grid = 5
    if len(objects) > grid * grid:
        raise ValueError(f"at most {grid * grid} objects fit, got {len(objects)}")
    image = Image.new("RGB", (size, size), BACKGROUND)
    draw = ImageDraw.Draw(image)
    cell = size // grid
    for (colour, shape), index in zip(objects, rng.sample(range(grid * grid), len(objects)), strict=False):
        extent = rng.randint(cell // 2, cell - 10)
        x = (index % grid) * cell + rng.randint(3, cell - extent - 3)
        y = (index // grid) * cell + rng.randint(3, cell - extent - 3)
        _draw_shape(draw, shape, (x, y, x + extent, y + extent), colour)
    return image


def draw_counts(counts: Mapping[tuple[str, str], int], rng: random.Random, size: int = SIZE) -> Image.Image:
    """``{(colour, shape): how many}`` drawn by :func:`draw_objects` in random order."""
    objects = [key for key, n in counts.items() for _ in range(n)]
    rng.shuffle(objects)
    return draw_objects(objects, rng, size)


def draw_panels(panels: Sequence[Mapping[tuple[str, str], int]], rng: random.Random) -> Image.Image:
    """Several scenes side by side, left to right, separated by a background gap."""
    tiles = [draw_counts(p, rng, SIZE // 2) for p in panels]
    gap = 12
    image = Image.new("RGB", (len(tiles) * (SIZE // 2 + gap) - gap, SIZE // 2), BACKGROUND)
    for i, tile in enumerate(tiles):
        image.paste(tile, (i * (SIZE // 2 + gap), 0))
    return image


def draw_flag(stripes: Sequence[str], orientation: str, rng: random.Random, disc: str | None = None) -> Image.Image:
    """A tricolour-style flag (``stripes`` colours, ``horizontal``/``vertical``; or a ``disc`` on one field)
    at a random size and position on the background."""
    width = rng.randint(150, 230)
    height = rng.randint(int(width * 0.55), int(width * 0.75))
    image = Image.new("RGB", (SIZE, SIZE), BACKGROUND)
    draw = ImageDraw.Draw(image)
    x0, y0 = rng.randint(4, SIZE - width - 4), rng.randint(4, SIZE - height - 4)
    n = len(stripes)
    for i, colour in enumerate(stripes):
        if orientation == "vertical":
            box = (x0 + i * width // n, y0, x0 + (i + 1) * width // n - 1, y0 + height - 1)
        else:
            box = (x0, y0 + i * height // n, x0 + width - 1, y0 + (i + 1) * height // n - 1)
        draw.rectangle(box, fill=PALETTE[colour])
    if disc:
        radius = int(height * rng.uniform(0.25, 0.32))
        cx, cy = x0 + width // 2, y0 + height // 2
        draw.ellipse((cx - radius, cy - radius, cx + radius, cy + radius), fill=PALETTE[disc])
    return image


def colour_counts(image: Image.Image) -> dict[str, int]:
    """Number of separate blobs of each palette colour (pixels snapped to the nearest palette colour or
    the background; blobs under ``MIN_BLOB_PIXELS`` ignored)."""
    names = ["", *PALETTE]
    colours = np.array([BACKGROUND, *PALETTE.values()], dtype=np.int32)
    pixels = np.asarray(image.convert("RGB"), dtype=np.int32)
    nearest = np.argmin(((pixels[:, :, None, :] - colours[None, None]) ** 2).sum(-1), axis=-1)
    counts = {}
    for index in range(1, len(names)):
        labels, n = ndimage.label(nearest == index)
        if n:
            sizes = np.bincount(labels.ravel())[1:]
            if (big := int((sizes >= MIN_BLOB_PIXELS).sum())) > 0:
                counts[names[index]] = big
    return counts


def is_copy(image: Image.Image, reference: Image.Image) -> bool:
    """Whether ``image`` is (nearly) a pixel copy of ``reference`` (compared at the reference's size)."""
    a = np.asarray(image.convert("RGB").resize(reference.size), dtype=np.float32)
    b = np.asarray(reference.convert("RGB"), dtype=np.float32)
    return float(np.abs(a - b).mean()) < COPY_THRESHOLD
