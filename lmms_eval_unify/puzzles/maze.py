"""Maze navigation: 6x6 perfect mazes in the released data's palette, renderer, parser and generator."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from lmms_eval_unify.puzzles.board import BoardReader, hex_to_rgb
from lmms_eval_unify.puzzles.domain import MOVES, OFFSETS, Grid, shortest_paths

FLOOR = hex_to_rgb("#f4efe6")
WALL = hex_to_rgb("#1f2937")
START = hex_to_rgb("#2563eb")
GOAL = hex_to_rgb("#22c55e")
WHITE = hex_to_rgb("#ffffff")
PATH = hex_to_rgb("#ef4444")
READER = BoardReader(
    content=[WALL, START, GOAL, PATH],
    background=[WHITE, FLOOR],
    labels=[FLOOR, WALL, START, GOAL],
    min_fraction=0.003,
)
"""The official maze parser's board rules: board vs page colours, cell classes and crop threshold."""

WALL_TOKEN, FLOOR_TOKEN, START_TOKEN, GOAL_TOKEN, BOTH_TOKEN, UNKNOWN_TOKEN = "#", ".", "S", "G", "SG", "?"


@dataclass(frozen=True)
class MazeState:
    """Walls (True = wall) of a square grid, the agent's cell and the goal cell, as (row, col)."""

    walls: tuple[tuple[bool, ...], ...]
    agent: tuple[int, int]
    goal: tuple[int, int]

    @property
    def size(self) -> int:
        return len(self.walls)


@dataclass(frozen=True)
class MazeDomain:
    """The maze puzzle. Thresholds are the official parser's (tolerance 0.75; start 0.25x, goal 0.75x)."""

    size: int = 6
    cell_px: int = 64
    margin_px: int = 24
    tolerance: float = 0.75
    fallback_start: float = 0.08
    fallback_goal: float = 0.25
    name: str = "maze"
    answer_field: str = "steps"
    length_range: tuple[int, int] = (2, 10)

    def legal_moves(self, state: MazeState) -> list[str]:
        return [move for move in MOVES if self._target(state, move) is not None]

    def _target(self, state: MazeState, move: str) -> tuple[int, int] | None:
        dr, dc = OFFSETS[move]
        row, col = state.agent[0] + dr, state.agent[1] + dc
        if 0 <= row < state.size and 0 <= col < state.size and not state.walls[row][col]:
            return row, col
        return None

    def apply(self, state: MazeState, move: str) -> MazeState:
        target = self._target(state, move) if move in OFFSETS else None
        return state if target is None else MazeState(state.walls, target, state.goal)

    def grid_of(self, state: MazeState) -> Grid:
        def token(row: int, col: int) -> str:
            if state.walls[row][col]:
                return WALL_TOKEN
            at_agent, at_goal = (row, col) == state.agent, (row, col) == state.goal
            return (
                BOTH_TOKEN
                if at_agent and at_goal
                else START_TOKEN
                if at_agent
                else GOAL_TOKEN
                if at_goal
                else FLOOR_TOKEN
            )

        return tuple(tuple(token(r, c) for c in range(state.size)) for r in range(state.size))

    def render(self, state: MazeState) -> Image.Image:
        """Floor/wall cells, a thick green frame on the goal cell and a blue dot for the agent."""
        cell, margin = self.cell_px, self.margin_px
        side = state.size * cell + 2 * margin
        image = Image.new("RGB", (side, side), WHITE)
        draw = ImageDraw.Draw(image)
        for row in range(state.size):
            for col in range(state.size):
                x0, y0 = margin + col * cell, margin + row * cell
                colour = WALL if state.walls[row][col] else FLOOR
                draw.rectangle([x0, y0, x0 + cell - 1, y0 + cell - 1], fill=colour)
        frame = round(0.2 * cell)
        gy, gx = margin + state.goal[0] * cell, margin + state.goal[1] * cell
        draw.rectangle([gx, gy, gx + cell - 1, gy + cell - 1], fill=GOAL)
        draw.rectangle([gx + frame, gy + frame, gx + cell - 1 - frame, gy + cell - 1 - frame], fill=FLOOR)
        radius = 0.27 * cell
        cy, cx = margin + (state.agent[0] + 0.5) * cell, margin + (state.agent[1] + 0.5) * cell
        draw.ellipse([cx - radius, cy - radius, cx + radius, cy + radius], fill=START)
        return image

    def parse_grid(self, image: Image.Image) -> Grid | None:
        """Official maze parser rules: crop, nearest-palette fractions per cell, thresholded classes."""
        fractions = READER.cell_fractions(image, self.size)
        if fractions is None:
            return None
        floor, wall, start, goal = (fractions[..., k] for k in range(4))
        tol = self.tolerance
        tokens = np.full((self.size, self.size), UNKNOWN_TOKEN, dtype=object)
        tokens[floor >= tol] = FLOOR_TOKEN
        tokens[wall >= tol] = WALL_TOKEN
        is_start, is_goal = start >= 0.25 * tol, goal >= 0.75 * tol
        tokens[is_goal] = GOAL_TOKEN
        tokens[is_start] = START_TOKEN
        tokens[is_start & is_goal] = BOTH_TOKEN
        if not is_start.any() and start.max() >= self.fallback_start:
            idx = np.unravel_index(start.argmax(), start.shape)
            tokens[idx] = BOTH_TOKEN if tokens[idx] == GOAL_TOKEN else START_TOKEN
        if not is_goal.any() and goal.max() >= self.fallback_goal:
            idx = np.unravel_index(goal.argmax(), goal.shape)
            tokens[idx] = BOTH_TOKEN if tokens[idx] == START_TOKEN else GOAL_TOKEN
        return tuple(tuple(str(t) for t in row) for row in tokens)

    def state_from_grid(self, grid: Grid) -> MazeState | None:
        """A state when the grid is well formed: no '?', exactly one agent and one goal."""
        cells = [(r, c, t) for r, row in enumerate(grid) for c, t in enumerate(row)]
        if any(t == UNKNOWN_TOKEN for _, _, t in cells):
            return None
        agents = [(r, c) for r, c, t in cells if t in (START_TOKEN, BOTH_TOKEN)]
        goals = [(r, c) for r, c, t in cells if t in (GOAL_TOKEN, BOTH_TOKEN)]
        if len(agents) != 1 or len(goals) != 1:
            return None
        walls = tuple(tuple(t == WALL_TOKEN for t in row) for row in grid)
        return MazeState(walls, agents[0], goals[0])


def carve_perfect_maze(size: int, rng: random.Random) -> tuple[tuple[bool, ...], ...]:
    """Walls of a loop-free maze carved by depth-first search on odd cells with step two."""
    walls = [[True] * size for _ in range(size)]
    odd = list(range(1, size, 2))
    start = (rng.choice(odd), rng.choice(odd))
    walls[start[0]][start[1]] = False
    stack = [start]
    while stack:
        row, col = stack[-1]
        options = [
            (row + 2 * dr, col + 2 * dc, row + dr, col + dc)
            for dr, dc in OFFSETS.values()
            if 0 < row + 2 * dr < size and 0 < col + 2 * dc < size and walls[row + 2 * dr][col + 2 * dc]
        ]
        if not options:
            stack.pop()
            continue
        nr, nc, wr, wc = rng.choice(options)
        walls[wr][wc] = walls[nr][nc] = False
        stack.append((nr, nc))
    return tuple(tuple(row) for row in walls)


def generate_maze(domain: MazeDomain, rng: random.Random) -> tuple[MazeState, tuple[str, ...]]:
    """A maze with start, goal and its unique shortest path, whose length lies in ``domain.length_range``."""
    low, high = domain.length_range
    while True:
        walls = carve_perfect_maze(domain.size, rng)
        floor = [(r, c) for r in range(domain.size) for c in range(domain.size) if not walls[r][c]]
        agent, goal = rng.sample(floor, 2)
        state = MazeState(walls, agent, goal)

        def at_goal(s: MazeState, goal: tuple[int, int] = goal) -> bool:
            return s.agent == goal

        found = shortest_paths(domain, state, at_goal, max_depth=high)
        if found is not None and found.count == 1 and low <= found.length <= high:
            return state, found.moves
