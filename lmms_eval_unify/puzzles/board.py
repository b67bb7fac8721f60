"""Colour-palette board reading shared by the procedural puzzles (maze, sliding).

The rules follow the official Uni-MMMU evaluator: crop the board from the page by telling board colours
from background colours, cut it into an ``n x n`` grid, give every pixel its nearest palette colour and
classify each cell from the fractions of those colours. Everything is vectorised with numpy.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

Rgb = tuple[int, int, int]

PARSE_SIDE = 256
"""Larger images are reduced (nearest neighbour, which keeps palette colours) to this side before parsing."""


def hex_to_rgb(value: str) -> Rgb:
    """``"#1f2937"`` -> ``(31, 41, 55)``."""
    value = value.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def image_to_array(image: Image.Image) -> np.ndarray:
    """RGB float array in [0, 1] of shape (H, W, 3)."""
    return np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0


def _distinct_colour_distances(pixels: np.ndarray, palette: list[Rgb]) -> tuple[np.ndarray, np.ndarray]:
    """Euclidean RGB distances (in [0, 1] units) of the distinct pixel colours to the palette, (U, K), and the
    (H, W) index of every pixel's colour among them.

    Pixels from ``image_to_array`` hold 8-bit levels and boards have few distinct colours, so distances are
    computed once per distinct colour (bit-identical to the per-pixel computation); other inputs get one row
    per pixel.
    """
    colours = np.asarray(palette, dtype=np.float32) / 255.0
    levels = np.rint(pixels * 255.0).astype(np.uint32)
    if not np.array_equal(levels.astype(np.float32) / 255.0, pixels):
        flat = pixels.reshape(-1, 3)
        distances = np.linalg.norm(flat[:, None, :] - colours[None, :, :], axis=-1)
        return distances, np.arange(flat.shape[0]).reshape(pixels.shape[:2])
    keys = (levels[..., 0] << 16) | (levels[..., 1] << 8) | levels[..., 2]
    distinct = np.unique(keys)  # a sort plus searchsorted is ~10x faster than unique(return_inverse=True)
    rgb = (
        np.stack([distinct >> 16, (distinct >> 8) & 255, distinct & 255], axis=-1).astype(np.float32) / 255.0
    )
    return np.linalg.norm(rgb[:, None, :] - colours[None, :, :], axis=-1), np.searchsorted(distinct, keys)


def nearest_palette_distance(pixels: np.ndarray, palette: list[Rgb]) -> np.ndarray:
    """Distance of every pixel to its nearest palette colour: (H, W)."""
    distances, index = _distinct_colour_distances(pixels, palette)
    return distances.min(axis=-1)[index]


def nearest_palette_index(pixels: np.ndarray, palette: list[Rgb]) -> np.ndarray:
    """Index of every pixel's nearest palette colour: (H, W)."""
    distances, index = _distinct_colour_distances(pixels, palette)
    return distances.argmin(axis=-1)[index]


def crop_board(
    pixels: np.ndarray, content: list[Rgb], background: list[Rgb], min_fraction: float
) -> np.ndarray | None:
    """Crop the square board: rows/columns whose share of board-coloured pixels exceeds ``min_fraction``.

    A pixel is board content when it is closer (by a 0.01 margin) to a content colour than to any
    background colour. Returns ``None`` when no board is found.
    """
    d_content = nearest_palette_distance(pixels, content)
    d_background = nearest_palette_distance(pixels, background)
    mask = d_content + 0.01 < d_background
    rows = np.flatnonzero(mask.mean(axis=1) > min_fraction)
    cols = np.flatnonzero(mask.mean(axis=0) > min_fraction)
    if rows.size == 0 or cols.size == 0:
        return None
    top, bottom, left, right = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    height, width = bottom - top, right - left
    side = max(height, width)
    top = max(0, min(top - (side - height) // 2, pixels.shape[0] - side))
    left = max(0, min(left - (side - width) // 2, pixels.shape[1] - side))
    return pixels[top : top + side, left : left + side]


def cell_colour_fractions(board: np.ndarray, palette: list[Rgb], n: int) -> np.ndarray:
    """Fraction of pixels nearest to each palette colour in every cell of an ``n x n`` grid: (n, n, K)."""
    labels = nearest_palette_index(board, palette)
    one_hot = np.eye(len(palette), dtype=np.float64)[labels]
    height, width = labels.shape
    row_edges = np.round(np.arange(n) * height / n).astype(int)
    col_edges = np.round(np.arange(n) * width / n).astype(int)
    counts = np.add.reduceat(np.add.reduceat(one_hot, row_edges, axis=0), col_edges, axis=1)
    return counts / counts.sum(axis=-1, keepdims=True)
