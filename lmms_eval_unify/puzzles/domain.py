"""The puzzle-domain interface and the domain-independent algorithms on it.

A domain (maze, sliding puzzle) knows its states, legal moves, how to render a state and how to read a
state back from an image. Everything else — simulation, shortest-path search with path counting, the
random-walk expectation used to check the random baseline — is written once here.
"""

from __future__ import annotations

import json
import random
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from PIL import Image

Grid = tuple[tuple[str, ...], ...]
"""A parsed board: one token per cell; ``"?"`` marks a cell that could not be classified."""

MOVES = ("up", "down", "left", "right")
OFFSETS = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


State = TypeVar("State", bound=Hashable)
"""A domain's state (a maze's ``MazeState``, a sliding board's tuple of tiles)."""


class PuzzleDomain(Protocol[State]):
    """What a procedural puzzle provides to the shared generator, baselines and scorer."""

    @property
    def name(self) -> str: ...

    @property
    def answer_field(self) -> str: ...

    @property
    def length_range(self) -> tuple[int, int]: ...

    def legal_moves(self, state: State) -> list[str]: ...

    def apply(self, state: State, move: str) -> State:
        """The state after ``move``; an illegal move leaves the state unchanged."""

    def render(self, state: State) -> Image.Image: ...

    def grid_of(self, state: State) -> Grid: ...

    def parse_grid(self, image: Image.Image) -> Grid | None:
        """Read the board from an image; ``None`` when no board is found."""

    def state_from_grid(self, grid: Grid) -> State | None: ...


def simulate(domain: PuzzleDomain[State], state: State, moves: Sequence[str]) -> list[State]:
    """States after each move (the initial state excluded), as the official evaluator replays them."""
    states = []
    for move in moves:
        state = domain.apply(state, move)
        states.append(state)
    return states


def read_state(domain: PuzzleDomain[State], image: Image.Image) -> State | None:
    """Parse an image straight into a state, or ``None`` if it is not a well-formed board."""
    grid = domain.parse_grid(image)
    return None if grid is None else domain.state_from_grid(grid)


@dataclass(frozen=True)
class ShortestPaths:
    """Result of a breadth-first search: shortest length, number of distinct shortest paths, one of them."""

    length: int
    count: int
    moves: tuple[str, ...]


def shortest_paths(
    domain: PuzzleDomain[State], start: State, is_goal: Callable[[State], bool], max_depth: int
) -> ShortestPaths | None:
    """BFS from ``start`` counting shortest paths to the nearest goal state (``None`` if none within depth)."""
    depth = {start: 0}
    count = {start: 1}
    parent: dict[State, tuple[State, str]] = {}
    queue = deque([start])
    goal: State | None = None
    while queue:
        state = queue.popleft()
        if is_goal(state):
            goal = state
            break
        if depth[state] >= max_depth:
            continue
        for move in domain.legal_moves(state):
            nxt = domain.apply(state, move)
            if nxt not in depth:
                depth[nxt] = depth[state] + 1
                count[nxt] = count[state]
                parent[nxt] = (state, move)
                queue.append(nxt)
            elif depth[nxt] == depth[state] + 1:
                count[nxt] += count[state]
    if goal is None:
        return None
    # Paths into the goal may still be discovered by states at the goal's depth - 1 left in the queue;
    # they were all expanded before the goal was popped, because BFS pops by non-decreasing depth.
    moves = []
    state = goal
    while state != start:
        state, move = parent[state]
        moves.append(move)
    return ShortestPaths(length=depth[goal], count=count[goal], moves=tuple(reversed(moves)))


def moves_from_field(value: str | Sequence[str]) -> list[str]:
    """Ground-truth moves stored as a JSON string (published parquet) or a list, lower-cased."""
    moves = json.loads(value) if isinstance(value, str) else list(value)
    return [str(move).strip().lower() for move in moves]


def random_walk(domain: PuzzleDomain[State], start: State, rng: random.Random) -> list[str]:
    """The random baseline's moves: a length uniform over ``domain.length_range``, each move uniform over the
    legal moves of the current state."""
    moves, state = [], start
    for _ in range(rng.randint(*domain.length_range)):
        move = rng.choice(domain.legal_moves(state))
        moves.append(move)
        state = domain.apply(state, move)
    return moves


def random_walk_expectation(domain: PuzzleDomain[State], start: State, truth: Sequence[str]) -> dict[str, float]:
    """Exact expected metrics of the random baseline on one instance.

    The baseline draws a length ``L`` uniformly from ``domain.length_range`` and then ``L`` moves, each
    uniform over the legal moves of its current state, rendering the state after every move. The state
    distribution is propagated exactly, so the result is the analytic expectation, not a simulation.
    """
    low, high = domain.length_range
    lengths = range(low, high + 1)
    truth_states = simulate(domain, start, truth)
    n = len(truth)
    distribution = {start: 1.0}
    text_step, img_step = 0.0, 0.0
    for step in range(n):
        p_longer = sum(1 for length in lengths if length > step) / len(lengths)
        text_hit = 0.0
        after_step: dict[State, float] = {}
        for state, p in distribution.items():
            legal = domain.legal_moves(state)
            for move in legal:
                if move == truth[step]:
                    text_hit += p / len(legal)
                after = domain.apply(state, move)
                after_step[after] = after_step.get(after, 0.0) + p / len(legal)
        distribution = after_step
        text_step += p_longer * text_hit
        img_step += p_longer * distribution.get(truth_states[step], 0.0)
    p_follow = 1.0
    state = start
    for move in truth:
        legal = domain.legal_moves(state)
        p_follow = p_follow / len(legal) if move in legal else 0.0
        state = domain.apply(state, move)
    p_sample = p_follow / len(lengths) if low <= n <= high else 0.0
    return {
        "text_step_acc": text_step / n,
        "img_step_acc": img_step / n,
        "text_sample_acc": p_sample,
        "img_sample_acc": p_sample,
    }
