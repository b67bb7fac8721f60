"""Offline Uni-MMMU sets in the local-data layout (``<out>/uni_mmmu/<subtask>/test.parquet``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lmms_eval_unify.benchmarks.uni_mmmu.offline.code import generate_code_items
from lmms_eval_unify.benchmarks.uni_mmmu.offline.geometry import generate_geometry_items
from lmms_eval_unify.benchmarks.uni_mmmu.offline.science import generate_science_items
from lmms_eval_unify.data.fixtures import FileListener, Written, write_parquet
from lmms_eval_unify.puzzles.dataset import write_puzzles
from lmms_eval_unify.puzzles.jigsaw import generate_jigsaw_items


def write_rows(rows: list[dict[str, Any]], path: Path, root: Path | None = None) -> Path:
    """Rows as parquet (confined to ``root``): ``*_image`` PIL values as image columns, ``*_images`` as image
    lists, ints as int64, the rest as strings."""
    return write_parquet(
        rows,
        path,
        images=tuple(key for key in rows[0] if key.endswith("_image")),
        image_lists=tuple(key for key in rows[0] if key.endswith("_images")),
        root=root,
    )


ITEM_GENERATORS = {
    "jigsaw": generate_jigsaw_items,
    "geometry": generate_geometry_items,
    "science": generate_science_items,
    "code": generate_code_items,
}
"""Subtask -> ``(n, seed) -> rows``, beside the maze and sliding puzzles."""


def generate(out_dir: str | Path, n: int, seed: int = 0, on_file: FileListener | None = None) -> list[Path]:
    """``n`` items of every generated subtask; ``on_file`` hears each file as it is written."""
    root = Path(out_dir) / "uni_mmmu"
    written = Written(on_file)
    written.add(*write_puzzles(root, n, n, seed))
    for subtask, make_items in ITEM_GENERATORS.items():
        written.add(write_rows(make_items(n, seed), root / subtask / "test.parquet", root))
    return written.paths
