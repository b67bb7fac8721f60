"""The released Uni-MMMU maze/sliding parsers computed pixel by pixel: our ``official.py`` before its per-colour
table (float32 distances of every pixel to every palette colour, a crop from the board mask, one boolean mean
per cell and label). The tests and ``bench/puzzle_scorer_cost.py`` check the fast parsers against it bit for bit.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from lmms_eval_unify.benchmarks.uni_mmmu.official import (
    BOTH,
    FLOOR,
    GOAL,
    MARGIN_PX,
    MAZE_FALLBACK_GOAL,
    MAZE_FALLBACK_START,
    MAZE_SIZE,
    MAZE_TOLERANCE,
    SLIDING_SIZE,
    SLIDING_TOLERANCE,
    START,
    UNKNOWN,
    WALL,
    ReleasedMaze,
)
from lmms_eval_unify.puzzles import maze, sliding
from lmms_eval_unify.puzzles.board import Rgb, palette_distances
from lmms_eval_unify.puzzles.domain import Grid


def image_to_array(image: Image.Image) -> np.ndarray:
    """RGB float32 array in [0, 1] of shape (H, W, 3), as the released parser reads an image."""
    return np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0


def nearest_palette_distance(pixels: np.ndarray, palette: list[Rgb]) -> np.ndarray:
    """Distance of every pixel to its nearest palette colour: (H, W)."""
    return palette_distances(pixels.reshape(-1, 3), tuple(palette)).min(axis=-1).reshape(pixels.shape[:2])


def nearest_palette_index(pixels: np.ndarray, palette: list[Rgb]) -> np.ndarray:
    """Index of every pixel's nearest palette colour: (H, W)."""
    return palette_distances(pixels.reshape(-1, 3), tuple(palette)).argmin(axis=-1).reshape(pixels.shape[:2])


def crop_box(
    pixels: np.ndarray, content_distance: np.ndarray, background_distance: np.ndarray, min_fraction: float,
    swap_clamp: bool,
) -> tuple[int, int, int, int]:  # fmt: skip
    """(top, left, bottom, right) of the released board crop; slice ``pixels[top:bottom, left:right]``."""
    height, width = pixels.shape[:2]
    mask = content_distance + 0.01 < background_distance
    rows = np.flatnonzero(mask.mean(axis=1) > min_fraction)
    cols = np.flatnonzero(mask.mean(axis=0) > min_fraction)
    top, bottom = (int(rows[0]), int(rows[-1])) if rows.size else (0, height - 1)
    left, right = (int(cols[0]), int(cols[-1])) if cols.size else (0, width - 1)
    top, left = max(0, top - MARGIN_PX), max(0, left - MARGIN_PX)
    bottom, right = min(height - 1, bottom + MARGIN_PX), min(width - 1, right + MARGIN_PX)
    side = max(bottom - top + 1, right - left + 1)
    centre_row, centre_col, half = (top + bottom) // 2, (left + right) // 2, side // 2
    row_limit, col_limit = (width, height) if swap_clamp else (height, width)
    top = max(0, centre_row - half)
    bottom = min(row_limit, top + side)
    left = max(0, centre_col - half)
    right = min(col_limit, left + side)
    return bottom - side, right - side, bottom, right


def cell_labels(board: np.ndarray, palette: list[Rgb], n: int) -> list[list[np.ndarray | None]]:
    """Nearest-palette label of every pixel per cell, cut at ``round(i * side / n)``; ``None`` = empty cell."""
    height, width = board.shape[:2]
    labels = nearest_palette_index(board, palette) if board.size else None
    rows = [int(round(i * (height / n))) for i in range(n + 1)]
    cols = [int(round(j * (width / n))) for j in range(n + 1)]
    return [
        [
            None if labels is None or rows[i + 1] <= rows[i] or cols[j + 1] <= cols[j]
            else labels[rows[i] : rows[i + 1], cols[j] : cols[j + 1]]
            for j in range(n)
        ]
        for i in range(n)
    ]  # fmt: skip


def fractions_of(tile: np.ndarray, k: int) -> np.ndarray:
    """Share of each label in a cell, as float32 like the released code."""
    return np.array([(tile == label).mean() for label in range(k)], dtype=np.float32)


def maze_box(pixels: np.ndarray) -> tuple[int, int, int, int]:
    return crop_box(
        pixels,
        nearest_palette_distance(pixels, [maze.WALL, maze.START, maze.GOAL, maze.PATH]),
        nearest_palette_distance(pixels, [maze.WHITE, maze.FLOOR]),
        0.003,
        swap_clamp=True,
    )


def maze_parse(image: Image.Image) -> ReleasedMaze:
    """The released maze parser, pixel by pixel."""
    pixels = image_to_array(image)
    top, left, bottom, right = maze_box(pixels)
    cells = cell_labels(pixels[top:bottom, left:right], [maze.FLOOR, maze.WALL, maze.START, maze.GOAL], MAZE_SIZE)
    tol = MAZE_TOLERANCE
    grid = [[UNKNOWN] * MAZE_SIZE for _ in range(MAZE_SIZE)]
    fractions = np.zeros((MAZE_SIZE, MAZE_SIZE, 4), dtype=np.float32)
    start = goal = None
    for r in range(MAZE_SIZE):
        for c in range(MAZE_SIZE):
            tile = cells[r][c]
            if tile is None:
                continue
            floor, wall, start_share, goal_share = fractions[r, c] = fractions_of(tile, 4)
            is_start, is_goal = start_share >= tol * 0.25, goal_share >= tol * 0.75
            if is_start:
                start = (r, c)
            if is_goal:
                goal = (r, c)
            grid[r][c] = (
                BOTH if is_start and is_goal else START if is_start else GOAL if is_goal
                else WALL if wall >= tol else FLOOR if floor >= tol else UNKNOWN
            )  # fmt: skip
    if start is None:
        best = np.unravel_index(np.argmax(fractions[..., 2]), (MAZE_SIZE, MAZE_SIZE))
        if fractions[best[0], best[1], 2] >= MAZE_FALLBACK_START:
            start = (int(best[0]), int(best[1]))
            grid[start[0]][start[1]] = START
    if goal is None:
        best = np.unravel_index(np.argmax(fractions[..., 3]), (MAZE_SIZE, MAZE_SIZE))
        if fractions[best[0], best[1], 3] >= MAZE_FALLBACK_GOAL:
            goal = (int(best[0]), int(best[1]))
            grid[goal[0]][goal[1]] = BOTH if grid[goal[0]][goal[1]] == START else GOAL
    if start is not None and start == goal:
        grid[start[0]][start[1]] = BOTH
    return ReleasedMaze(tuple(tuple(row) for row in grid), start, goal)


def sliding_grid(image: Image.Image) -> Grid:
    """The released sliding parser, pixel by pixel."""
    pixels = image_to_array(image)
    white_distance = np.linalg.norm(pixels - np.ones(3), axis=-1)  # float64, as the released code
    top, left, bottom, right = crop_box(
        pixels, nearest_palette_distance(pixels, sliding.PALETTE), white_distance, 0.002, swap_clamp=False
    )
    cells = cell_labels(pixels[top:bottom, left:right], sliding.PALETTE, SLIDING_SIZE)
    grid = []
    for row in cells:
        tokens = []
        for tile in row:
            if tile is None:
                tokens.append(UNKNOWN)
                continue
            shares = fractions_of(tile, len(sliding.PALETTE))
            best = int(shares.argmax())
            tokens.append(UNKNOWN if float(shares[best]) < SLIDING_TOLERANCE else str(best + 1))
        grid.append(tuple(tokens))
    return tuple(grid)
