"""GapEval sets in the local-data layout ``<out>/gapeval/<category>/test.parquet`` (schema: ``items.py``).

``generate`` writes offline items of all four categories; ``prepare.py`` converts the official raw layout
(``lmms-eval-unify data prepare gapeval --root DIR --out OUT``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets

from lmms_eval_unify.benchmarks.gapeval.offline.items import make_items
from lmms_eval_unify.benchmarks.gapeval.spec import CATEGORIES
from lmms_eval_unify.data.fixtures import FileListener, Written, png_cell, write_dataset

SPLIT = "test"
FEATURES = {
    "id": datasets.Value("string"),
    "category": datasets.Value("string"),
    "subcategory": datasets.Value("string"),
    "und_prompt": datasets.Value("string"),
    "gen_prompt": datasets.Value("string"),
    "reference": datasets.Value("string"),
    "images": datasets.Sequence(datasets.Image()),
    "ref_image": datasets.Image(),
    "gen_uses_image": datasets.Value("bool"),
}
OFFLINE_FEATURES = {
    "answer_pool": datasets.Sequence(datasets.Value("string")),
    "pool_images": datasets.Sequence(datasets.Image()),
}
IMAGE_LISTS = ("images", "pool_images")


def category_path(out_dir: str | Path, category: str) -> Path:
    return Path(out_dir) / "gapeval" / category / f"{SPLIT}.parquet"


def write_rows(rows: list[dict[str, Any]], path: Path, root: Path | None = None) -> Path:
    """Rows in the GapEval schema (PIL images, image cells or ``None``) as one parquet file (confined to
    ``root``: ``fixtures.write_dataset``)."""
    features = {**FEATURES, **{k: v for k, v in OFFLINE_FEATURES.items() if k in rows[0]}}
    encoded = [
        {
            key: [png_cell(im) for im in row[key]]
            if key in IMAGE_LISTS
            else (None if row[key] is None else png_cell(row[key]))
            if key == "ref_image"
            else row[key]
            for key in features
        }
        for row in rows
    ]
    return write_dataset(datasets.Dataset.from_list(encoded, features=datasets.Features(features)), path, root)


def generate(out_dir: str | Path, n: int, seed: int = 0, on_file: FileListener | None = None) -> list[Path]:
    """``n`` offline items of every category; ``on_file`` hears each file as it is written."""
    written = Written(on_file)
    for category in CATEGORIES:
        written.add(
            write_rows(make_items(category, n, seed), category_path(out_dir, category), Path(out_dir) / "gapeval")
        )
    return written.paths
