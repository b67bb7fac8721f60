"""Write generated Uni-MMMU maze/sliding sets with the published data's field names.

Layout: ``<out>/uni_mmmu/<maze|sliding>/test.parquet`` (the local-data layout of ``lmms_eval_unify.task``).
Fields as in the published copies: maze ``initial_image`` + ``steps`` (JSON list), sliding
``initial_image`` + ``steps_words``; we also write ``id`` and, for sliding, the goal image ``final_image``.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable
from pathlib import Path

import datasets
from PIL import Image

from lmms_eval_unify.puzzles.domain import PuzzleDomain
from lmms_eval_unify.puzzles.maze import MazeDomain, generate_maze
from lmms_eval_unify.puzzles.sliding import SOLVED, SlidingDomain, generate_sliding


def _png(image: Image.Image) -> dict:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return {"bytes": buffer.getvalue(), "path": None}


def _write(rows: list[dict], path: Path) -> Path:
    features = datasets.Features(
        {key: datasets.Image() if key.endswith("_image") else datasets.Value("string") for key in rows[0]}
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(path))
    return path


def _puzzle_rows(
    domain: PuzzleDomain, generate: Callable, count: int, seed: int, goal_image: Image.Image | None
) -> list[dict]:
    rng = random.Random(f"{domain.name}/{seed}")
    rows = []
    for index in range(count):
        state, moves = generate(domain, rng)
        row = {"id": f"{domain.name}_{seed}_{index:05d}", "initial_image": _png(domain.render(state))}
        row[domain.answer_field] = json.dumps(list(moves))
        if goal_image is not None:
            row["final_image"] = _png(goal_image)
        rows.append(row)
    return rows


def write_uni_mmmu_puzzles(out_dir: str | Path, n_maze: int, n_sliding: int, seed: int = 0) -> list[Path]:
    """Generate ``n_maze`` mazes and ``n_sliding`` sliding puzzles (deterministic in ``seed``)."""
    root = Path(out_dir) / "uni_mmmu"
    maze, sliding = MazeDomain(), SlidingDomain()
    return [
        _write(_puzzle_rows(maze, generate_maze, n_maze, seed, None), root / "maze" / "test.parquet"),
        _write(
            _puzzle_rows(sliding, generate_sliding, n_sliding, seed, sliding.render(SOLVED)),
            root / "sliding" / "test.parquet",
        ),
    ]
