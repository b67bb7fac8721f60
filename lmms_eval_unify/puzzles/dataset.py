"""Write generated maze/sliding sets with the released puzzle data's field names.

Fields as in the published copies: maze ``initial_image`` + ``steps`` (JSON list), sliding
``initial_image`` + ``steps_words``; we also write ``id`` and, for sliding, the goal image ``final_image``
and ``step_images``, the boards after each move (the release's step PNGs, which its scorer compares against).
A benchmark passes its own folder or file names (``write_puzzles`` / ``write_puzzle_set``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Hashable
from pathlib import Path

import datasets
import numpy as np
from PIL import Image

from lmms_eval_unify.data.fixtures import write_parquet
from lmms_eval_unify.puzzles.domain import (
    PuzzleDomain,
    moves_from_field,
    random_walk,
    random_walk_expectation,
    read_state,
    simulate,
)
from lmms_eval_unify.puzzles.maze import MazeDomain, generate_maze
from lmms_eval_unify.puzzles.scoring import METRICS, sequence_accuracy
from lmms_eval_unify.puzzles.sliding import SOLVED, SlidingDomain, generate_sliding


def _write_images(rows: list[dict], path: Path, root: Path | None) -> Path:
    """``*_image`` columns are images, ``*_images`` image lists, the rest strings (the published field types)."""
    return write_parquet(
        rows,
        path,
        images=tuple(key for key in rows[0] if key.endswith("_image")),
        image_lists=tuple(key for key in rows[0] if key.endswith("_images")),
        root=root,
    )


def _puzzle_rows(
    domain: PuzzleDomain, generate: Callable, count: int, seed: int, goal_image: Image.Image | None = None
) -> list[dict]:
    """Generated items; with a ``goal_image`` (sliding) also the goal and the boards after each move."""
    rng = random.Random(f"{domain.name}/{seed}")
    rows = []
    for index in range(count):
        state, moves = generate(domain, rng)
        row = {"id": f"{domain.name}_{seed}_{index:05d}", "initial_image": domain.render(state)}
        row[domain.answer_field] = json.dumps(list(moves))
        if goal_image is not None:
            row["final_image"] = goal_image
            row["step_images"] = [domain.render(s) for s in simulate(domain, state, moves)]
        rows.append(row)
    return rows


def write_puzzle_set(domain: str, count: int, seed: int, path: str | Path, root: str | Path | None = None) -> Path:
    """Generate ``count`` items of the ``maze`` or ``sliding`` puzzle (deterministic in ``seed``) into the
    parquet file ``path`` (through the write gate, confined to ``root``; default the file's folder)."""
    if domain == "maze":
        rows = _puzzle_rows(MazeDomain(), generate_maze, count, seed)
    elif domain == "sliding":
        sliding = SlidingDomain()
        rows = _puzzle_rows(sliding, generate_sliding, count, seed, sliding.render(SOLVED))
    else:
        raise ValueError(f"unknown puzzle {domain!r}; choose maze or sliding")
    return _write_images(rows, Path(path), None if root is None else Path(root))


def write_puzzles(root: str | Path, n_maze: int, n_sliding: int, seed: int = 0) -> list[Path]:
    """Generate ``n_maze`` mazes and ``n_sliding`` sliding puzzles (deterministic in ``seed``) as
    ``<root>/maze/test.parquet`` and ``<root>/sliding/test.parquet``."""
    root = Path(root)
    return [
        write_puzzle_set("maze", n_maze, seed, root / "maze" / "test.parquet", root),
        write_puzzle_set("sliding", n_sliding, seed, root / "sliding" / "test.parquet", root),
    ]


def _puzzle_items(domain: PuzzleDomain, parquet_path: str | Path) -> list[tuple[Hashable, list[str]]]:
    """(initial state, true moves) of every item of a generated or prepared set."""
    items = []
    for row in datasets.Dataset.from_parquet(str(parquet_path)):
        start = read_state(domain, row["initial_image"].convert("RGB"))
        if start is None:
            raise ValueError(f"{parquet_path}: item {row.get('id')} has an unreadable initial board")
        items.append((start, moves_from_field(row[domain.answer_field])))
    return items


def random_baseline_expectation(domain: PuzzleDomain, parquet_path: str | Path) -> dict[str, float]:
    """Analytic expected scores of ``unify_random`` on a generated or prepared set (mean over its items)."""
    items = _puzzle_items(domain, parquet_path)
    totals: dict[str, float] = {}
    for start, truth in items:
        for key, value in random_walk_expectation(domain, start, truth).items():
            totals[key] = totals.get(key, 0.0) + value
    return {key: value / len(items) for key, value in totals.items()}


def random_baseline_band(
    domain: PuzzleDomain, parquet_path: str | Path, seeds: int = 1000, level: float = 0.95, runs: int = 1
) -> dict[str, tuple[float, float]]:
    """Central ``level`` interval of ``unify_random``'s set-level scores (each the mean of ``runs`` runs with
    different seeds) across ``seeds`` independent simulated draws.

    One run of the random player is one draw from a distribution around the analytic expectation; on a few
    dozen items its spread is wide, so a single seed can sit far from chance. Each simulated run draws every
    item's walk as the player does (``random_walk``) and scores it as the scorer does (``sequence_accuracy``
    on moves and on boards); boards are compared as states, since the player's renders parse exactly.
    """
    items = _puzzle_items(domain, parquet_path)
    truth_grids = [[domain.grid_of(s) for s in simulate(domain, start, truth)] for start, truth in items]
    draws = np.zeros((seeds, len(METRICS)))
    for seed in range(seeds):
        rng = random.Random(f"band/{domain.name}/{seed}")
        for _ in range(runs):
            for (start, truth), grids in zip(items, truth_grids, strict=True):
                moves = random_walk(domain, start, rng)
                played = [domain.grid_of(s) for s in simulate(domain, start, moves)]
                draws[seed] += (*sequence_accuracy(moves, truth), *sequence_accuracy(played, grids))
    draws /= len(items) * runs
    tail = (1.0 - level) / 2
    low, high = np.quantile(draws, [tail, 1.0 - tail], axis=0)
    return {metric: (float(lo), float(hi)) for metric, lo, hi in zip(METRICS, low, high, strict=True)}
