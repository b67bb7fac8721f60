"""Offline Uni-MMMU sets in the local-data layout (``<out>/uni_mmmu/<subtask>/test.parquet``)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import datasets
from PIL import Image

from lmms_eval_unify.benchmarks.uni_mmmu.jigsaw import generate_jigsaw_items
from lmms_eval_unify.puzzles.dataset import write_uni_mmmu_puzzles


def _png(image: Image.Image) -> dict:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return {"bytes": buffer.getvalue(), "path": None}


def write_rows(rows: list[dict[str, Any]], path: Path) -> Path:
    """Rows as parquet: ``*_image`` PIL values as image columns, ints as int64, the rest as strings."""
    features = datasets.Features(
        {
            key: datasets.Image()
            if key.endswith("_image")
            else datasets.Value("int64" if isinstance(value, int) else "string")
            for key, value in rows[0].items()
        }
    )
    encoded = [{k: _png(v) if isinstance(v, Image.Image) else v for k, v in row.items()} for row in rows]
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(encoded, features=features).to_parquet(str(path))
    return path


def generate(out_dir: str | Path, n: int, seed: int = 0) -> list[Path]:
    """``n`` items of every generated subtask."""
    root = Path(out_dir) / "uni_mmmu"
    return [
        *write_uni_mmmu_puzzles(out_dir, n, n, seed),
        write_rows(generate_jigsaw_items(n, seed), root / "jigsaw" / "test.parquet"),
    ]


def prepare_main(argv: list[str]) -> int:
    """``lmms-eval-unify data prepare uni_mmmu ...`` (see ``lmms_eval_unify.benchmarks.uni_mmmu.prepare``)."""
    from lmms_eval_unify.benchmarks.uni_mmmu.prepare import prepare_main as main

    return main(argv)
