"""Colour-palette board reading shared by the procedural puzzles (maze, sliding).

The rules follow the released puzzle evaluator (``eval_ummmu.py``): crop the board from the page by telling
board colours from background colours, cut it into an ``n x n`` grid, give every pixel its nearest palette
colour and classify each cell from the fractions of those colours.

Every rule depends on a pixel's colour only, so a :class:`BoardReader` decides it once per distinct 24-bit
colour (with the same float32 arithmetic as a per-pixel computation) and remembers the answer in a lookup
table over all 2**24 colours; reading an image is then one table gather, a crop and one ``bincount``.
"""

from __future__ import annotations

import math
import threading

import numpy as np
from PIL import Image

Rgb = tuple[int, int, int]

PARSE_SIDE = 256
"""Larger images are reduced (nearest neighbour, which keeps palette colours) to this side before parsing."""

BOARD_MARGIN = 0.01
"""A colour is board content when it is closer to a content colour than to any background colour by this."""

_UNSEEN = np.uint8(255)
"""Lookup-table entry of a colour not decided yet (real codes are ``2 * label + is_board`` < 255)."""


def hex_to_rgb(value: str) -> Rgb:
    """``"#1f2937"`` -> ``(31, 41, 55)``."""
    value = value.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def palette_distances(rgb: np.ndarray, palette: tuple[Rgb, ...]) -> np.ndarray:
    """Euclidean distances, in float32 [0, 1] units, of colours ``rgb`` (N, 3) to a palette: (N, K)."""
    colours = np.asarray(palette, dtype=np.float32) / 255.0
    return np.linalg.norm(rgb[:, None, :] - colours[None, :, :], axis=-1)


def reduced_size(width: int, height: int, side: int = PARSE_SIDE) -> tuple[int, int]:
    """The size ``Image.thumbnail((side, side))`` gives an image larger than ``side``: the longer side
    becomes ``side``; the shorter one the floor or ceiling (at least 1) whose aspect is nearer the image's,
    the floor on a tie."""
    aspect = width / height
    if aspect <= 1:
        short = min(math.floor(side * aspect), math.ceil(side * aspect), key=lambda n: abs(aspect - n / side))
        return max(short, 1), side
    short = min(
        math.floor(side / aspect),
        math.ceil(side / aspect),
        key=lambda n: 0 if n == 0 else abs(aspect - side / n),
    )
    return side, max(short, 1)


def colour_keys(image: Image.Image) -> np.ndarray:
    """(H, W) uint32 key of every pixel's colour, ``r | g << 8 | b << 16``, of an RGB image."""
    padded = np.frombuffer(image.tobytes("raw", "RGBX"), dtype="<u4")  # PIL's own 4-byte pixel layout
    return (padded & np.uint32(0xFFFFFF)).reshape(image.height, image.width)


def key_colours(keys: np.ndarray) -> np.ndarray:
    """Float32 RGB in [0, 1], (N, 3), of colour keys from :func:`colour_keys`: the values that
    ``np.asarray(image, dtype=np.float32) / 255.0`` gives those pixels."""
    return np.stack([keys & 255, (keys >> 8) & 255, keys >> 16], axis=-1).astype(np.float32) / 255.0


class BoardReader:
    """Crops a board and counts nearest-palette colours per cell, with a per-colour decision table.

    ``content``/``background`` decide which pixels belong to the board; ``labels`` is the palette cells
    are classified by; a row or column belongs to the board when its share of board pixels exceeds
    ``min_fraction``. The table (16 MiB, allocated on first use) is shared by threads: every entry is
    written with the one value its colour determines, so concurrent fills agree.
    """

    def __init__(self, content: list[Rgb], background: list[Rgb], labels: list[Rgb], min_fraction: float) -> None:
        if len(labels) >= _UNSEEN // 2:
            raise ValueError(f"at most {_UNSEEN // 2 - 1} label colours, got {len(labels)}")
        self.content, self.background, self.labels = tuple(content), tuple(background), tuple(labels)
        self.min_fraction = min_fraction
        self._table: np.ndarray | None = None
        self._lock = threading.Lock()

    def is_board(self, rgb: np.ndarray) -> np.ndarray:
        """Whether colours ``rgb`` (N, 3, float32 in [0, 1]) are board content: nearer a content colour than
        any background colour by :data:`BOARD_MARGIN`."""
        d_content = palette_distances(rgb, self.content).min(axis=-1)
        d_background = palette_distances(rgb, self.background).min(axis=-1)
        return d_content + BOARD_MARGIN < d_background

    def decide(self, keys: np.ndarray) -> np.ndarray:
        """``2 * nearest label + is_board`` (uint8) of colour keys from :func:`colour_keys`, without the table."""
        rgb = key_colours(keys)
        return (2 * palette_distances(rgb, self.labels).argmin(axis=-1) + self.is_board(rgb)).astype(np.uint8)

    def codes(self, keys: np.ndarray) -> np.ndarray:
        """:meth:`decide` of every key, through the table; colours not seen before are decided once."""
        if self._table is None:
            with self._lock:
                if self._table is None:
                    self._table = np.full(1 << 24, _UNSEEN, dtype=np.uint8)
        table = self._table
        codes = np.take(table, keys)
        unseen = codes == _UNSEEN
        if unseen.any():
            new = np.unique(keys[unseen])
            table[new] = self.decide(new)
            codes[unseen] = table[keys[unseen]]
        return codes

    def cell_fractions(self, image: Image.Image, n: int) -> np.ndarray | None:
        """Fraction of pixels nearest to each label colour in every cell of the board's ``n x n`` grid:
        (n, n, K) float64.

        Images over :data:`PARSE_SIDE` are first reduced by nearest neighbour. ``None`` when no board is
        found or the cropped board (so also the image) is narrower than ``n`` pixels.
        """
        if min(image.size) < n:
            return None
        if image.mode != "RGB":
            image = image.convert("RGB")
        if max(image.size) > PARSE_SIDE:  # a new image: the caller's is never changed
            image = image.resize(reduced_size(*image.size), Image.Resampling.NEAREST)
        codes = self.codes(colour_keys(image))
        board = self._crop(codes)
        if board is None or min(board.shape) < n:
            return None
        height, width = board.shape
        row_edges = np.round(np.arange(n) * height / n).astype(int)
        col_edges = np.round(np.arange(n) * width / n).astype(int)
        row_cell = np.searchsorted(row_edges, np.arange(height), side="right") - 1
        col_cell = np.searchsorted(col_edges, np.arange(width), side="right") - 1
        k = len(self.labels)
        dtype = np.min_scalar_type(n * n * k)  # small bins: the per-pixel sums stay narrow
        bins = (row_cell * (n * k)).astype(dtype)[:, None] + (col_cell * k).astype(dtype) + (board >> 1)
        counts = np.bincount(bins.ravel(), minlength=n * n * k).reshape(n, n, k)
        return counts / counts.sum(axis=-1, keepdims=True)

    def _crop(self, codes: np.ndarray) -> np.ndarray | None:
        """The square board: rows/columns whose share of board pixels exceeds ``min_fraction``."""
        is_board = codes & 1
        rows = np.flatnonzero(is_board.sum(axis=1) / is_board.shape[1] > self.min_fraction)
        cols = np.flatnonzero(is_board.sum(axis=0) / is_board.shape[0] > self.min_fraction)
        if rows.size == 0 or cols.size == 0:
            return None
        top, bottom, left, right = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
        height, width = bottom - top, right - left
        side = max(height, width)
        top = max(0, min(top - (side - height) // 2, codes.shape[0] - side))
        left = max(0, min(left - (side - width) // 2, codes.shape[1] - side))
        return codes[top : top + side, left : left + side]
