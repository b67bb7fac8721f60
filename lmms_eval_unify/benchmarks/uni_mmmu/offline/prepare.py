"""Convert the official Uni-MMMU eval data (``tar -xf data.tar`` of HF ``Vchitect/Uni-MMMU-Eval``) into our
task datasets: jigsaw (``data/jigsaw_dataset_2x2ref/metadata.json``), geometry
(``data/math_data/filtered.json``), science (``data/science/dim_all.json``) and code
(``data/svg/metadata.json``). A subtask whose source file is absent is skipped with a note. Every referenced
file is checked; missing or unreadable files, bad labels, missing texts and unsafe SVGs are reported and the
item is skipped (exit 1). Maze and sliding come from the Hub copy or ``data generate``."""

from __future__ import annotations

import argparse
import functools
import json
import re
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from lmms_eval_unify.benchmarks.release import Problems, report, write_all_or_nothing
from lmms_eval_unify.benchmarks.uni_mmmu.offline.data import write_rows
from lmms_eval_unify.benchmarks.uni_mmmu.svg import UnsafeSVGError, render_svg

JIGSAW_METADATA = Path("data/jigsaw_dataset_2x2ref/metadata.json")
GEOMETRY_JSON = Path("data/math_data/filtered.json")
SCIENCE_JSON = Path("data/science/dim_all.json")
SVG_METADATA = Path("data/svg/metadata.json")


def _image(
    root: Path, relative: str, problems: list[str], item_id: str, folder: Path | None = None
) -> Image.Image | None:
    """The image at ``relative`` (to the data root or to ``folder`` under it, default the jigsaw folder)."""
    candidates = [root / relative, root / (folder or JIGSAW_METADATA.parent) / relative]
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


def _texts(item: dict, keys: tuple[str, ...], problems: list[str], item_id: str) -> bool:
    missing = [key for key in keys if not str(item.get(key) or "").strip()]
    if missing:
        problems.append(f"{item_id}: empty {', '.join(missing)}")
    return not missing


def _sanitised(name: str) -> str:
    """The official case-folder name of a key (``UtilityHelpers.sanitize_filename``)."""
    return re.sub(r"[^a-zA-Z0-9_\-\.]+", "_", (name or "").strip())[:120] or "item"


def geometry_rows(root: Path, problems: list[str]) -> list[dict[str, Any]]:
    """Rows of the geometry dataset (``{big_key: {small_key: item}}``; images relative to ``math_data/``)."""
    data = json.loads((root / GEOMETRY_JSON).read_text(encoding="utf-8"))
    rows = []
    for big_key, group in data.items():
        for small_key, item in group.items():
            item_id = f"{_sanitised(big_key)}__{_sanitised(small_key)}"
            texts = {
                "problem_text_en": item.get("problem_text_en") or item.get("problem_text") or "",
                "auxiliary_text_en": item.get("auxiliary_text_en") or "",
                "solution_en": item.get("solution_en") or item.get("solution") or "",
            }
            ok = _texts(texts, tuple(texts), problems, item_id)
            images = {key: _image(root, str(item.get(key) or ""), problems, item_id, GEOMETRY_JSON.parent)
                      for key in ("original_image", "auxiliary_image")}  # fmt: skip
            if not ok or any(image is None for image in images.values()):
                continue
            choices = item.get("choices_en") or []
            rows.append({"id": item_id, "type": str(item.get("type") or ""), **texts,
                         "choices_en": [str(c) for c in choices] if isinstance(choices, list) else [str(choices)],
                         **images})  # fmt: skip
    return rows


def science_rows(root: Path, problems: list[str]) -> list[dict[str, Any]]:
    """Rows of the science dataset, in the official order (``case_NN`` = row NN, 1-based)."""
    blocks = json.loads((root / SCIENCE_JSON).read_text(encoding="utf-8"))
    samples = [(block, sample) for block in blocks for sample in block.get("samples", [])]
    rows = []
    for index, (block, sample) in enumerate(samples, 1):
        item_id = f"case_{index:02d}"
        paths = sample.get("input_image_file_path_list") or []
        ok = _texts(sample, ("input_prompt", "output_prompt"), problems, item_id)
        if not paths:
            problems.append(f"{item_id}: no input image")
            continue
        image = _image(root, str(paths[0]), problems, item_id, SCIENCE_JSON.parent)
        if not ok or image is None:
            continue
        rows.append({"id": item_id, "level_1_category": str(block.get("level_1_category") or ""),
                     "level_2_category": str(block.get("level_2_category") or ""),
                     "input_prompt": sample["input_prompt"].strip(), "output_prompt": sample["output_prompt"].strip(),
                     "initial_image": image})  # fmt: skip
    return rows


def code_rows(root: Path, problems: list[str]) -> list[dict[str, Any]]:
    """Rows of the code dataset; the reference is the shipped PNG, else the SVG rasterised (as official)."""
    folder = root / SVG_METADATA.parent
    samples = json.loads((root / SVG_METADATA).read_text(encoding="utf-8")).get("samples", [])
    rows = []
    for index, sample in enumerate(samples, 1):
        item_id = str(sample.get("id") or f"noid_{index:02d}")
        svg_path = folder / str(sample.get("svg") or "")
        if not sample.get("svg") or not svg_path.is_file():
            problems.append(f"{item_id}: missing svg {sample.get('svg')}")
            continue
        program = svg_path.read_text(encoding="utf-8")
        try:
            rendered = render_svg(program)
        except (UnsafeSVGError, ValueError, OSError) as exc:  # cairosvg raises ValueError/XML errors
            problems.append(f"{item_id}: SVG does not render safely: {exc}")
            continue
        reference = (
            _image(root, str(sample["png"]), problems, item_id, SVG_METADATA.parent)
            if sample.get("png")
            else rendered
        )
        if reference is None:
            continue
        rows.append({"id": item_id, "difficulty": str(sample.get("difficulty") or ""), "svg": program,
                     "gt_image": reference})  # fmt: skip
    return rows


SUBTASKS = {
    "jigsaw": (JIGSAW_METADATA, jigsaw_rows),
    "geometry": (GEOMETRY_JSON, geometry_rows),
    "science": (SCIENCE_JSON, science_rows),
    "code": (SVG_METADATA, code_rows),
}


def prepare(root: str | Path, out_dir: str | Path) -> list[str]:
    """Read every subtask found under ``root``, then write ``<out>/uni_mmmu/<subtask>/test.parquet`` for all of
    them, or nothing when any item is invalid; returns the problems (no subtask at all is a problem)."""
    problems = Problems()
    tables: dict[str, list[dict[str, Any]]] = {}
    for name, (source, rows_of) in SUBTASKS.items():
        if not (Path(root) / source).is_file():
            print(f"{name}: {source} not found, skipped")
            continue
        subtask_problems = Problems()
        with subtask_problems.guard(f"{name} ({source})"):
            tables[name] = rows_of(Path(root), subtask_problems)
        print(f"{name}: {len(tables.get(name, []))} valid items, {len(subtask_problems)} problems")
        problems += subtask_problems
    if not tables and not problems:
        problems.append(f"no Uni-MMMU data under {root} (expected e.g. {JIGSAW_METADATA})")
    if not problems:
        writers = {name: functools.partial(_write, rows) for name, rows in tables.items() if rows}
        for path in write_all_or_nothing(Path(out_dir) / "uni_mmmu", writers):
            print(f"wrote {path}")
    return problems


def _write(rows: list[dict[str, Any]], folder: Path) -> None:
    write_rows(rows, folder / "test.parquet")


def prepare_main(argv: list[str]) -> int:
    """``lmms-eval-unify data prepare uni_mmmu --root DIR --out DIR``; exit 1 if any item is invalid."""
    parser = argparse.ArgumentParser(prog="lmms-eval-unify data prepare uni_mmmu", description=__doc__)
    parser.add_argument("--root", required=True, help="folder holding the extracted data/ of Uni-MMMU-Eval")
    parser.add_argument("--out", required=True, help="LMMS_EVAL_UNIFY_DATA_DIR to write")
    args = parser.parse_args(argv)
    return report(prepare(args.root, args.out))
