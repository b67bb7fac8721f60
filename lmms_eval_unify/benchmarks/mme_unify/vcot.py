"""FrozenLake-style VCoT mazes (MME-Unify "Visual CoT"): generator, shortest path, renderer.

A maze is a square grid of land and holes with a start and a goal. Reference data follow the official
schema: ``Action`` = the shortest path's moves plus "Finish", ``Coordinate[i]`` = 1-indexed [row, col] of the
position BEFORE ``Action[i]``, and one state image per move (``Step_k`` = the board after move k).
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass

from PIL import Image, ImageDraw

MOVES = {"Up": (-1, 0), "Down": (1, 0), "Left": (0, -1), "Right": (0, 1)}
Cell = tuple[int, int]
CELL_PX = 32
LAND, HOLE, GOAL, PLAYER, GRID = (173, 216, 230), (40, 60, 110), (60, 170, 80), (220, 40, 40), (255, 255, 255)


@dataclass(frozen=True)
class Lake:
    """A grid (``size``²) with holes, a start and a goal (cells are 0-indexed (row, col))."""

    size: int
    holes: frozenset[Cell]
    start: Cell
    goal: Cell

    def free(self, cell: Cell) -> bool:
        row, col = cell
        return 0 <= row < self.size and 0 <= col < self.size and cell not in self.holes


def step(cell: Cell, move: str) -> Cell:
    d_row, d_col = MOVES[move]
    return cell[0] + d_row, cell[1] + d_col


def shortest_path(lake: Lake) -> list[str] | None:
    """Moves of a shortest hole-free path from start to goal (BFS, fixed move order), or None."""
    previous: dict[Cell, tuple[Cell, str] | None] = {lake.start: None}
    queue = deque([lake.start])
    while queue:
        cell = queue.popleft()
        if cell == lake.goal:
            moves = []
            while (came_from := previous[cell]) is not None:
                cell, move = came_from
                moves.append(move)
            return moves[::-1]
        for move in MOVES:
            nxt = step(cell, move)
            if lake.free(nxt) and nxt not in previous:
                previous[nxt] = (cell, move)
                queue.append(nxt)
    return None


def random_lake(size: int, rng: random.Random, min_moves: int = 2, max_moves: int = 7) -> tuple[Lake, list[str]]:
    """A solvable lake whose shortest path has ``min_moves``..``max_moves`` moves (official: 2..7)."""
    cells = [(r, c) for r in range(size) for c in range(size)]
    while True:
        start, goal = rng.sample(cells, 2)
        others = [c for c in cells if c not in (start, goal)]
        holes = frozenset(rng.sample(others, rng.randint(1, max(1, size * size // 4))))
        lake = Lake(size, holes, start, goal)
        path = shortest_path(lake)
        if path is not None and min_moves <= len(path) <= max_moves:
            return lake, path


def render(lake: Lake, player: Cell) -> Image.Image:
    """The board with the player (red disc) at ``player``: land light blue, holes dark, goal green."""
    px = lake.size * CELL_PX
    image = Image.new("RGB", (px, px), GRID)
    draw = ImageDraw.Draw(image)
    for row in range(lake.size):
        for col in range(lake.size):
            colour = HOLE if (row, col) in lake.holes else GOAL if (row, col) == lake.goal else LAND
            x, y = col * CELL_PX, row * CELL_PX
            draw.rectangle([x + 1, y + 1, x + CELL_PX - 2, y + CELL_PX - 2], fill=colour)
    x, y = player[1] * CELL_PX, player[0] * CELL_PX
    draw.ellipse([x + 7, y + 7, x + CELL_PX - 8, y + CELL_PX - 8], fill=PLAYER)
    return image


def positions(lake: Lake, moves: list[str]) -> list[Cell]:
    """Player cells after each move."""
    cells, cell = [], lake.start
    for move in moves:
        cell = step(cell, move)
        cells.append(cell)
    return cells


def official_record(lake: Lake, moves: list[str]) -> dict:
    """``Action``, ``Coordinate`` (1-indexed [row, col] before each action) and the step images."""
    before = [lake.start, *positions(lake, moves)]
    return {
        "actions": [*moves, "Finish"],
        "coordinates": [[r + 1, c + 1] for r, c in before],
        "step_images": [render(lake, cell) for cell in positions(lake, moves)],
        "initial_image": render(lake, lake.start),
    }
