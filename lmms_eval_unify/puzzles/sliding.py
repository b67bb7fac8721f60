"""Sliding puzzle: 3x3 8-puzzle in ColorBrewer Set1, red = empty; moves name the tile's direction."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from lmms_eval_unify.puzzles.board import BoardReader, hex_to_rgb
from lmms_eval_unify.puzzles.domain import MOVES, OFFSETS, Grid, shortest_paths

PALETTE = [
    hex_to_rgb(h)
    for h in (
        "#e41a1c",
        "#377eb8",
        "#4daf4a",
        "#984ea3",
        "#ff7f00",
        "#ffff33",
        "#a65628",
        "#f781bf",
        "#999999",
    )
]
WHITE = hex_to_rgb("#ffffff")
READER = BoardReader(content=PALETTE, background=[WHITE], labels=PALETTE, min_fraction=0.002)
"""The official sliding parser's board rules: tiles against a white page, cells by tile colour."""
EMPTY = 1
"""Tile labels are 1..9 in palette order; label 1 (red) is the empty space."""

SlidingState = tuple[int, ...]
"""Row-major labels of the 3x3 board."""

SOLVED: SlidingState = (2, 3, 4, 5, 6, 7, 8, 9, EMPTY)
"""Our generator's goal: tiles 2..9 in reading order, the empty space bottom-right."""


@dataclass(frozen=True)
class SlidingDomain:
    """The 8-puzzle. A move "up" slides the tile below the empty space up into it."""

    size: int = 3
    cell_px: int = 96
    margin_px: int = 24
    tolerance: float = 0.80
    name: str = "sliding"
    answer_field: str = "steps_words"
    length_range: tuple[int, int] = (2, 8)

    def _empty_after(self, state: SlidingState, move: str) -> int | None:
        """Index the empty space moves to: opposite to the tile's direction; ``None`` if illegal."""
        dr, dc = OFFSETS[move]
        row, col = divmod(state.index(EMPTY), self.size)
        row, col = row - dr, col - dc
        return row * self.size + col if 0 <= row < self.size and 0 <= col < self.size else None

    def legal_moves(self, state: SlidingState) -> list[str]:
        return [move for move in MOVES if self._empty_after(state, move) is not None]

    def apply(self, state: SlidingState, move: str) -> SlidingState:
        target = self._empty_after(state, move) if move in OFFSETS else None
        if target is None:
            return state
        board = list(state)
        empty = board.index(EMPTY)
        board[empty], board[target] = board[target], board[empty]
        return tuple(board)

    def grid_of(self, state: SlidingState) -> Grid:
        return tuple(tuple(str(t) for t in state[r * self.size : (r + 1) * self.size]) for r in range(self.size))

    def render(self, state: SlidingState) -> Image.Image:
        """Solid colour tiles without borders or numbers on a white page."""
        cell, margin = self.cell_px, self.margin_px
        side = self.size * cell + 2 * margin
        image = Image.new("RGB", (side, side), WHITE)
        draw = ImageDraw.Draw(image)
        for index, label in enumerate(state):
            row, col = divmod(index, self.size)
            x0, y0 = margin + col * cell, margin + row * cell
            draw.rectangle([x0, y0, x0 + cell - 1, y0 + cell - 1], fill=PALETTE[label - 1])
        return image

    def parse_grid(self, image: Image.Image) -> Grid | None:
        """Official sliding parser rules: crop against white, majority colour per cell if >= tolerance."""
        fractions = READER.cell_fractions(image, self.size)
        if fractions is None:
            return None
        labels = np.where(fractions.max(axis=-1) >= self.tolerance, (fractions.argmax(axis=-1) + 1).astype(str), "?")
        return tuple(tuple(str(t) for t in row) for row in labels)

    def state_from_grid(self, grid: Grid) -> SlidingState | None:
        """A state when every cell is read and every label appears exactly once."""
        cells = [t for row in grid for t in row]
        if "?" in cells or sorted(cells) != [str(k) for k in range(1, self.size**2 + 1)]:
            return None
        return tuple(int(t) for t in cells)


def generate_sliding(domain: SlidingDomain, rng: random.Random) -> tuple[SlidingState, tuple[str, ...]]:
    """Scramble the solved board by random moves; keep it if its optimal solution is unique and in range."""
    low, high = domain.length_range
    while True:
        state = SOLVED
        for _ in range(rng.randint(low, 3 * high)):
            state = domain.apply(state, rng.choice(domain.legal_moves(state)))
        found = shortest_paths(domain, state, lambda s: s == SOLVED, max_depth=high)
        if found is not None and found.count == 1 and low <= found.length <= high:
            return state, found.moves
