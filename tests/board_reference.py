"""Reference board reading for the maze/sliding parsers, and a corpus of varied and hostile board images.

``reference_fractions`` is the straightforward per-pixel form of the rules that ``BoardReader`` implements
with a per-colour table (the parser before the table existed): float32 distances of every pixel to every
palette colour, a crop from the mean board mask, a one-hot image summed per cell with ``np.add.reduceat``.
The tests and ``bench/scoring_bench.py`` check the fast reader against it bit for bit.
"""

from __future__ import annotations

import io
import random
from collections.abc import Iterator

import numpy as np
from PIL import Image, ImageFilter

from lmms_eval_unify.puzzles.board import BOARD_MARGIN, PARSE_SIDE, BoardReader
from lmms_eval_unify.puzzles.domain import PuzzleDomain, simulate


def _distances(pixels: np.ndarray, palette: tuple) -> np.ndarray:
    colours = np.asarray(palette, dtype=np.float32) / 255.0
    return np.linalg.norm(pixels[:, :, None, :] - colours[None, None, :, :], axis=-1)


def reference_board(reader: BoardReader, image: Image.Image) -> np.ndarray | None:
    """The cropped board as float32 RGB in [0, 1], computed pixel by pixel; ``None`` if no board."""
    image = image.convert("RGB")
    if max(image.size) > PARSE_SIDE:
        image.thumbnail((PARSE_SIDE, PARSE_SIDE), Image.Resampling.NEAREST)
    pixels = np.asarray(image, dtype=np.float32) / 255.0
    d_content = _distances(pixels, reader.content).min(axis=-1)
    d_background = _distances(pixels, reader.background).min(axis=-1)
    mask = d_content + BOARD_MARGIN < d_background
    rows = np.flatnonzero(mask.mean(axis=1) > reader.min_fraction)
    cols = np.flatnonzero(mask.mean(axis=0) > reader.min_fraction)
    if rows.size == 0 or cols.size == 0:
        return None
    top, bottom, left, right = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    height, width = bottom - top, right - left
    side = max(height, width)
    top = max(0, min(top - (side - height) // 2, pixels.shape[0] - side))
    left = max(0, min(left - (side - width) // 2, pixels.shape[1] - side))
    return pixels[top : top + side, left : left + side]


def reference_fractions(reader: BoardReader, board: np.ndarray, n: int) -> np.ndarray:
    """Per-cell label fractions of a :func:`reference_board` (raises ``IndexError`` on some boards < n px)."""
    labels = _distances(board, reader.labels).argmin(axis=-1)
    one_hot = np.eye(len(reader.labels), dtype=np.float64)[labels]
    height, width = labels.shape
    row_edges = np.round(np.arange(n) * height / n).astype(int)
    col_edges = np.round(np.arange(n) * width / n).astype(int)
    counts = np.add.reduceat(np.add.reduceat(one_hot, row_edges, axis=0), col_edges, axis=1)
    return counts / counts.sum(axis=-1, keepdims=True)


def _variants(image: Image.Image, rng: random.Random) -> Iterator[Image.Image]:
    """Renderings a model might return: resampled, compressed, noisy, shifted, rotated, other modes."""
    yield image
    side = rng.randint(40, 1100)
    yield image.resize((side, side), rng.choice([Image.Resampling.BILINEAR, Image.Resampling.BICUBIC]))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=rng.randint(20, 95))
    yield Image.open(buffer)
    noisy = np.asarray(image, dtype=np.int16) + np.random.default_rng(rng.randrange(1 << 30)).integers(
        -12, 13, (image.height, image.width, 3)
    )
    yield Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8))
    page = Image.new("RGB", (image.width + rng.randint(0, 300), image.height + rng.randint(0, 80)), "white")
    page.paste(image, (rng.randint(0, page.width - image.width), rng.randint(0, page.height - image.height)))
    yield page
    yield image.rotate(rng.uniform(-8, 8), resample=Image.Resampling.BICUBIC, expand=True, fillcolor="white")
    yield image.filter(ImageFilter.GaussianBlur(rng.uniform(0.5, 3)))
    yield image.convert(rng.choice(["L", "P", "RGBA", "LA", "CMYK"]))
    yield image.resize((image.width, rng.randint(1, 12)))  # a sliver: boards narrower than the grid


def _hostile(rng: random.Random) -> Iterator[Image.Image]:
    """Images that are no board: noise, blank, one dark pixel, tiny and extreme aspect ratios."""
    size = (rng.randint(1, 400), rng.randint(1, 400))
    yield Image.fromarray(np.random.default_rng(rng.randrange(1 << 30)).integers(0, 256, (*size, 3), np.uint8))
    yield Image.new("RGB", size, "white")
    dot = Image.new("RGB", (rng.randint(1, 300), rng.randint(1, 300)), "white")
    dot.putpixel((rng.randrange(dot.width), rng.randrange(dot.height)), (31, 41, 55))
    yield dot
    yield Image.new("RGB", (rng.randint(1, 9), rng.randint(1, 9)), tuple(rng.randrange(256) for _ in range(3)))
    yield Image.new("RGB", (rng.randint(300, 2000), rng.randint(1, 5)), (228, 26, 28))


def board_corpus(domain: PuzzleDomain, generate, count: int, seed: int = 0) -> list[Image.Image]:
    """``count`` images: rendered states of generated puzzles, their variants, and hostile non-boards."""
    rng = random.Random(seed)
    images: list[Image.Image] = []
    while len(images) < count:
        state, moves = generate(domain, rng)
        for shown in [state, *simulate(domain, state, moves)][: rng.randint(1, 3)]:
            images += _variants(domain.render(shown), rng)
        images += _hostile(rng)
    return images[:count]
