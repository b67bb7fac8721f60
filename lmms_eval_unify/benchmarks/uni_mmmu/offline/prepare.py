"""Convert the official Uni-MMMU eval data (``tar -xf data.tar`` of HF ``Vchitect/Uni-MMMU-Eval``) into our
task datasets: jigsaw (``data/jigsaw_dataset_2x2ref/metadata.json``), geometry
(``data/math_data/filtered.json``), science (``data/science/dim_all.json``) and code
(``data/svg/metadata.json``) and sliding (``data/sliding/summary_steps_le_8.json``, with the step images the
official variant scores against). A subtask whose source file is absent is skipped with a note. Every
referenced file is checked; missing or unreadable files, bad labels, missing texts and unsafe SVGs are
reported and nothing is written (exit 1). Sliding items whose step images do not show their move names
played out are listed as warnings (written all the same). Maze comes from the Hub copy or ``data generate``."""

from __future__ import annotations

import argparse
import functools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from lmms_eval_unify.benchmarks.release import Problems, report, write_all_or_nothing
from lmms_eval_unify.benchmarks.uni_mmmu.offline.data import write_rows
from lmms_eval_unify.benchmarks.uni_mmmu.svg import UnsafeSVGError, render_svg
from lmms_eval_unify.puzzles.domain import Grid
from lmms_eval_unify.puzzles.sliding import SlidingDomain

JIGSAW_METADATA = Path("data/jigsaw_dataset_2x2ref/metadata.json")
GEOMETRY_JSON = Path("data/math_data/filtered.json")
SCIENCE_JSON = Path("data/science/dim_all.json")
SVG_METADATA = Path("data/svg/metadata.json")
SLIDING_SUMMARY = Path("data/sliding/summary_steps_le_8.json")
SLIDING = SlidingDomain()
FLIPPED = {"up": "down", "down": "up", "left": "right", "right": "left"}


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
            _image(root, str(sample["png"]), problems, item_id, SVG_METADATA.parent) if sample.get("png") else rendered
        )
        if reference is None:
            continue
        rows.append({"id": item_id, "difficulty": str(sample.get("difficulty") or ""), "svg": program,
                     "gt_image": reference})  # fmt: skip
    return rows


def _replayed(domain: SlidingDomain, initial: Grid | None, moves: list[str]) -> list[Grid] | None:
    state = None if initial is None else domain.state_from_grid(initial)
    if state is None:
        return None
    boards = []
    for move in moves:
        state = domain.apply(state, move)
        boards.append(domain.grid_of(state))
    return boards


def sliding_step_disagreement(
    initial: Image.Image,
    moves: list[str],
    step_images: list[Image.Image],
) -> str | None:
    """Why the step images are not the initial board played with ``moves`` (tile directions, any case);
    ``None`` when they agree. Says so when the moves with up/down and left/right swapped would agree."""
    domain = SLIDING
    shown = [domain.parse_grid(image) for image in step_images]
    named = [str(move).lower() for move in moves]
    expected = _replayed(domain, domain.parse_grid(initial), named)
    if expected is None:
        return "the initial image is not a readable board"
    if len(shown) != len(named):
        return f"{len(named)} moves but {len(shown)} step images"
    wrong = [index for index, (a, b) in enumerate(zip(expected, shown, strict=True), 1) if a != b]
    if not wrong:
        return None
    flipped = _replayed(domain, domain.parse_grid(initial), [FLIPPED.get(m, m) for m in named]) == shown
    return f"step images {wrong} differ from the moves {named}" + (
        " (they agree with up/down and left/right swapped)" if flipped else ""
    )


def _sliding_folder(root: Path, item: dict) -> Path | None:
    """The item's step folder: ``steps_dir`` (or the folder of ``init_png``), under the root or data/sliding."""
    named = item.get("steps_dir") or item.get("step_dir") or item.get("steps_path")
    if named:
        candidates = [root / named, root / SLIDING_SUMMARY.parent / named]
    else:
        initial = item.get("initial_png") or item.get("init_png") or item.get("init") or ""
        candidates = [(root / initial).parent, (root / SLIDING_SUMMARY.parent / initial).parent] if initial else []
    return next((path for path in candidates if path.is_dir()), None)


def sliding_rows(root: Path, problems: list[str], log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Rows of the sliding dataset with the step images the released scorer parses for its references
    (every ``*.png`` of the step folder but ``*0000*``); move names that the step images contradict and
    move names that are not lower case (the released scorer compares them as stored) are logged."""
    items = json.loads((root / SLIDING_SUMMARY).read_text(encoding="utf-8")).get("items", [])
    rows, warnings = [], []
    for index, item in enumerate(items, 1):
        folder = _sliding_folder(root, item)
        if folder is None:
            problems.append(f"sliding item {index}: no step folder {item.get('steps_dir') or item.get('init_png')}")
            continue
        item_id = folder.name
        match = re.match(r"^(.*?_3x3)_(\d{5})_steps$", item_id)
        named_json = item.get("steps_words_json")
        derived = f"{match.group(1)}_steps_words_{match.group(2)}.json" if match else None
        json_paths = [root / named_json, root / SLIDING_SUMMARY.parent / named_json] if named_json else []
        json_path = next((p for p in [*json_paths, folder.parent / str(derived)] if p.is_file()), None)
        frames = sorted(folder.glob("*.png"))
        initials = [frame for frame in frames if "0000" in frame.name]
        if json_path is None or len(initials) != 1:
            problems.append(
                f"{item_id}: need one *0000*.png and the steps_words json (found {len(initials)}, {json_path})"
            )
            continue
        moves = json.loads(json_path.read_text(encoding="utf-8")).get("steps_words")
        if not isinstance(moves, list) or not moves:
            problems.append(f"{item_id}: {json_path.name} has no steps_words list")
            continue
        images = {frame: _image(root, str(frame), problems, item_id) for frame in frames}
        if any(image is None for image in images.values()):
            continue
        steps = [images[frame] for frame in frames if "0000" not in frame.name]
        disagreement = sliding_step_disagreement(images[initials[0]], moves, steps)
        if disagreement:
            warnings.append(f"{item_id}: {disagreement}")
        if any(str(move) != str(move).lower() for move in moves):
            warnings.append(
                f"{item_id}: move names {moves} are not lower case (official text scores compare as stored)"
            )
        rows.append({"id": item_id, "steps_words": json.dumps(moves), "initial_image": images[initials[0]],
                     "final_image": images[frames[-1]], "step_images": steps})  # fmt: skip
    for warning in warnings:
        log(f"WARNING sliding {warning}")
    if warnings:
        log(f"sliding: {len(warnings)} warning(s); the items are written, the default task replays the moves, "
            "the official task scores against the step images")  # fmt: skip
    return rows


SUBTASKS = {
    "jigsaw": (JIGSAW_METADATA, jigsaw_rows),
    "geometry": (GEOMETRY_JSON, geometry_rows),
    "science": (SCIENCE_JSON, science_rows),
    "code": (SVG_METADATA, code_rows),
    "sliding": (SLIDING_SUMMARY, sliding_rows),
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
