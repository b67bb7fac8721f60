"""Offline Uni-MMMU sets in the local-data layout (``<out>/uni_mmmu/<subtask>/test.parquet``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lmms_eval_unify.benchmarks.fixtures import write_parquet
from lmms_eval_unify.benchmarks.uni_mmmu.offline.code import generate_code_items
from lmms_eval_unify.benchmarks.uni_mmmu.offline.geometry import generate_geometry_items
from lmms_eval_unify.benchmarks.uni_mmmu.offline.science import generate_science_items
from lmms_eval_unify.puzzles.dataset import write_puzzles
from lmms_eval_unify.puzzles.jigsaw import generate_jigsaw_items


def write_rows(rows: list[dict[str, Any]], path: Path) -> Path:
    """Rows as parquet: ``*_image`` PIL values as image columns, ``*_images`` as image lists, ints as int64,
    the rest as strings."""
    return write_parquet(
        rows,
        path,
        images=tuple(key for key in rows[0] if key.endswith("_image")),
        image_lists=tuple(key for key in rows[0] if key.endswith("_images")),
    )


def generate(out_dir: str | Path, n: int, seed: int = 0) -> list[Path]:
    """``n`` items of every generated subtask."""
    root = Path(out_dir) / "uni_mmmu"
    return [
        *write_puzzles(root, n, n, seed),
        write_rows(generate_jigsaw_items(n, seed), root / "jigsaw" / "test.parquet"),
        write_rows(generate_geometry_items(n, seed), root / "geometry" / "test.parquet"),
        write_rows(generate_science_items(n, seed), root / "science" / "test.parquet"),
        write_rows(generate_code_items(n, seed), root / "code" / "test.parquet"),
    ]
