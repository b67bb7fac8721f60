"""Convert the official Uni-MMMU eval data (``tar -xf data.tar`` of HF ``Vchitect/Uni-MMMU-Eval``) into our
task datasets. Implemented: jigsaw (``data/jigsaw_dataset_2x2ref/metadata.json``). Every referenced file
is checked; missing or unreadable files and bad labels are reported and the item is skipped (exit 1)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from lmms_eval_unify.benchmarks.uni_mmmu.data import write_rows

JIGSAW_METADATA = Path("data/jigsaw_dataset_2x2ref/metadata.json")


def _image(root: Path, relative: str, problems: list[str], item_id: str) -> Image.Image | None:
    candidates = [root / relative, root / JIGSAW_METADATA.parent / relative]
    for path in candidates:
        if path.is_file():
            try:
                with Image.open(path) as handle:
                    return handle.convert("RGB")
            except (UnidentifiedImageError, OSError) as exc:
                problems.append(f"{item_id}: unreadable {relative}: {exc}")
                return None
    problems.append(f"{item_id}: missing {relative}")
    return None


def jigsaw_rows(root: Path, problems: list[str]) -> list[dict[str, Any]]:
    """Rows of the jigsaw dataset from the official metadata; problems are appended to ``problems``."""
    items = json.loads((root / JIGSAW_METADATA).read_text())["items"]
    rows = []
    for item in items:
        item_id = str(item.get("id"))
        if item.get("label") not in (0, 1) or len(item.get("candidate_paths", [])) != 2:
            problems.append(f"{item_id}: label must be 0/1 and there must be two candidates")
            continue
        paths = {
            "ref_image": item["ref_panel"]["ref_image_path"],
            "cand0_image": item["candidate_paths"][0],
            "cand1_image": item["candidate_paths"][1],
            "gt_completed_image": item["gt_completed_2x2_path"],
            "gt_wrong_image": item["gt_wrong_2x2_path"],
        }
        images = {key: _image(root, value, problems, item_id) for key, value in paths.items()}
        if any(image is None for image in images.values()):
            continue
        rows.append({"id": item_id, "label": int(item["label"]), **images})
    return rows


def prepare(root: str | Path, out_dir: str | Path) -> list[str]:
    """Write ``<out>/uni_mmmu/jigsaw/test.parquet``; returns the problems found (empty = all valid)."""
    problems: list[str] = []
    rows = jigsaw_rows(Path(root), problems)
    if rows:
        write_rows(rows, Path(out_dir) / "uni_mmmu" / "jigsaw" / "test.parquet")
    print(f"jigsaw: {len(rows)} items written, {len(problems)} problems")
    for problem in problems:
        print(f"  {problem}")
    return problems


def prepare_main(argv: list[str]) -> int:
    """``lmms-eval-unify data prepare uni_mmmu --root DIR --out DIR``; exit 1 if any item is invalid."""
    parser = argparse.ArgumentParser(prog="lmms-eval-unify data prepare uni_mmmu", description=__doc__)
    parser.add_argument("--root", required=True, help="folder holding the extracted data/ of Uni-MMMU-Eval")
    parser.add_argument("--out", required=True, help="LMMS_EVAL_UNIFY_DATA_DIR to write")
    args = parser.parse_args(argv)
    return 1 if prepare(args.root, args.out) else 0
