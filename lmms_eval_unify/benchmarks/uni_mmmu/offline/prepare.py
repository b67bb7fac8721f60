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

from PIL import Image

from lmms_eval_unify import gate
from lmms_eval_unify.benchmarks.uni_mmmu.offline.data import write_rows
from lmms_eval_unify.benchmarks.uni_mmmu.svg import UnsafeSVGError, render_svg
from lmms_eval_unify.data.release import Problems, Release, report, text_field, write_all_or_nothing
from lmms_eval_unify.output.media_reader import DECODE_ERRORS
from lmms_eval_unify.puzzles.domain import Grid
from lmms_eval_unify.puzzles.sliding import SlidingDomain
from lmms_eval_unify.run.provenance import prepared_source

JIGSAW_METADATA = Path("data/jigsaw_dataset_2x2ref/metadata.json")
GEOMETRY_JSON = Path("data/math_data/filtered.json")
SCIENCE_JSON = Path("data/science/dim_all.json")
SVG_METADATA = Path("data/svg/metadata.json")
SLIDING_SUMMARY = Path("data/sliding/summary_steps_le_8.json")
SLIDING = SlidingDomain()
FLIPPED = {"up": "down", "down": "up", "left": "right", "right": "left"}


def _image(
    root: Path, relative: object, problems: list[str], item_id: str, folder: Path | None = None
) -> Image.Image | None:
    """The image at ``relative`` (to the data root or to ``folder`` under it, default the jigsaw folder), read
    through the gate (never outside the root, regular files only); a listed ``Path`` of the root is read as is."""
    release = Release(root)
    try:
        path = relative if isinstance(relative, Path) else release.find(relative, folder or JIGSAW_METADATA.parent)
        if path is None:
            problems.append(f"{item_id}: missing {relative}")
            return None
        return release.image(path)
    except (gate.Refused, *DECODE_ERRORS) as exc:
        problems.append(f"{item_id}: unreadable {relative}: {exc}")
        return None


def _json(root: Path, relative: Path | str) -> Any:
    """A JSON file of the release, read through the gate."""
    return Release(root).json(relative)


def _object(value: object, what: str) -> dict:
    """``value`` if it is a JSON object, else ``gate.Refused`` naming ``what``."""
    if not isinstance(value, dict):
        raise gate.Refused("malformed", what, f"must be an object, got {type(value).__name__}")
    return value


def jigsaw_rows(root: Path, problems: list[str]) -> list[dict[str, Any]]:
    """Rows of the jigsaw dataset from the official metadata; problems are appended to ``problems``."""
    items = _object(_json(root, JIGSAW_METADATA), str(JIGSAW_METADATA))["items"]
    rows = []
    for item in items:
        item_id = text_field(_object(item, "a jigsaw item"), "id", "None")
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
    missing = [key for key in keys if not text_field(item, key).strip()]
    if missing:
        problems.append(f"{item_id}: empty {', '.join(missing)}")
    return not missing


def _sanitised(name: str) -> str:
    """The official case-folder name of a key (``UtilityHelpers.sanitize_filename``)."""
    return re.sub(r"[^a-zA-Z0-9_\-\.]+", "_", (name or "").strip())[:120] or "item"


def geometry_rows(root: Path, problems: list[str]) -> list[dict[str, Any]]:
    """Rows of the geometry dataset (``{big_key: {small_key: item}}``; images relative to ``math_data/``)."""
    data = _object(_json(root, GEOMETRY_JSON), str(GEOMETRY_JSON))
    rows = []
    for big_key, group in data.items():
        for small_key, item in _object(group, big_key).items():
            item_id = f"{_sanitised(big_key)}__{_sanitised(small_key)}"
            item = _object(item, item_id)
            texts = {
                "problem_text_en": text_field(item, "problem_text_en") or text_field(item, "problem_text"),
                "auxiliary_text_en": text_field(item, "auxiliary_text_en"),
                "solution_en": text_field(item, "solution_en") or text_field(item, "solution"),
            }
            ok = _texts(texts, tuple(texts), problems, item_id)
            images = {key: _image(root, text_field(item, key), problems, item_id, GEOMETRY_JSON.parent)
                      for key in ("original_image", "auxiliary_image")}  # fmt: skip
            if not ok or any(image is None for image in images.values()):
                continue
            choices = item.get("choices_en") or []
            listed = choices if isinstance(choices, list) else [choices]
            rows.append({"id": item_id, "type": text_field(item, "type"), **texts,
                         "choices_en": [text_field({"choice": c}, "choice") for c in listed],
                         **images})  # fmt: skip
    return rows


def science_rows(root: Path, problems: list[str]) -> list[dict[str, Any]]:
    """Rows of the science dataset, in the official order (``case_NN`` = row NN, 1-based)."""
    blocks = _json(root, SCIENCE_JSON)
    if not isinstance(blocks, list):
        raise gate.Refused("malformed", SCIENCE_JSON, "must be a JSON list of blocks")
    samples = [
        (block, _object(sample, "a science sample"))
        for block in map(_object, blocks, ["a science block"] * len(blocks))
        for sample in block.get("samples", [])
    ]
    rows = []
    for index, (block, sample) in enumerate(samples, 1):
        item_id = f"case_{index:02d}"
        paths = sample.get("input_image_file_path_list") or []
        ok = _texts(sample, ("input_prompt", "output_prompt"), problems, item_id)
        if not paths:
            problems.append(f"{item_id}: no input image")
            continue
        image = _image(root, paths[0] if isinstance(paths, list) else paths, problems, item_id, SCIENCE_JSON.parent)
        if not ok or image is None:
            continue
        rows.append({"id": item_id, "level_1_category": text_field(block, "level_1_category"),
                     "level_2_category": text_field(block, "level_2_category"),
                     "input_prompt": text_field(sample, "input_prompt").strip(),
                     "output_prompt": text_field(sample, "output_prompt").strip(), "initial_image": image})  # fmt: skip
    return rows


def code_rows(root: Path, problems: list[str]) -> list[dict[str, Any]]:
    """Rows of the code dataset; the reference is the shipped PNG, else the SVG rasterised (as official)."""
    release = Release(root)
    samples = _object(_json(root, SVG_METADATA), str(SVG_METADATA)).get("samples", [])
    rows = []
    for index, sample in enumerate(samples, 1):
        sample = _object(sample, f"svg sample {index}")
        item_id = text_field(sample, "id") or f"noid_{index:02d}"
        svg = text_field(sample, "svg")
        svg_path = release.find(f"{SVG_METADATA.parent}/{svg}") if svg else None
        if svg_path is None:
            problems.append(f"{item_id}: missing svg {sample.get('svg')}")
            continue
        program = release.text(svg_path)
        try:
            rendered = render_svg(program)
        except (UnsafeSVGError, ValueError, OSError) as exc:  # cairosvg raises ValueError/XML errors
            problems.append(f"{item_id}: SVG does not render safely: {exc}")
            continue
        reference = (
            _image(root, sample["png"], problems, item_id, SVG_METADATA.parent) if sample.get("png") else rendered
        )
        if reference is None:
            continue
        rows.append({"id": item_id, "difficulty": text_field(sample, "difficulty"), "svg": program,
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
    """The item's step folder: ``steps_dir`` (or the folder of ``init_png``), under the root or data/sliding
    (``gate.Refused`` when the named folder is not a string, is absolute or leaves the root)."""
    named = text_field(item, "steps_dir") or text_field(item, "step_dir") or text_field(item, "steps_path")
    if named:
        candidates = [named, f"{SLIDING_SUMMARY.parent}/{named}"]
    else:
        initial = text_field(item, "initial_png") or text_field(item, "init_png") or text_field(item, "init")
        candidates = [str(Path(initial).parent), str(SLIDING_SUMMARY.parent / Path(initial).parent)] if initial else []
    return next((path for path in (gate.join(root, c) for c in candidates) if path.is_dir()), None)


def sliding_rows(root: Path, problems: list[str], log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Rows of the sliding dataset with the step images the released scorer parses for its references
    (every ``*.png`` of the step folder but ``*0000*``); move names that the step images contradict and
    move names that are not lower case (the released scorer compares them as stored) are logged."""
    release = Release(root)
    items = _object(_json(root, SLIDING_SUMMARY), str(SLIDING_SUMMARY)).get("items", [])
    rows, warnings = [], []
    for index, item in enumerate(items, 1):
        try:
            folder = _sliding_folder(root, _object(item, f"sliding item {index}"))
        except gate.Refused as refused:
            problems.append(f"sliding item {index}: {refused}")
            continue
        if folder is None:
            problems.append(f"sliding item {index}: no step folder {item.get('steps_dir') or item.get('init_png')}")
            continue
        item_id = folder.name
        match = re.match(r"^(.*?_3x3)_(\d{5})_steps$", item_id)
        named_json = text_field(item, "steps_words_json")
        derived = f"{match.group(1)}_steps_words_{match.group(2)}.json" if match else None
        json_path = release.find(named_json, SLIDING_SUMMARY.parent) if named_json else None
        if json_path is None and derived:
            json_path = release.find(str((folder.parent / derived).relative_to(release.root.resolve())))
        frames = sorted(folder.glob("*.png"))
        initials = [frame for frame in frames if "0000" in frame.name]
        if json_path is None or len(initials) != 1:
            problems.append(
                f"{item_id}: need one *0000*.png and the steps_words json (found {len(initials)}, {json_path})"
            )
            continue
        moves = _object(release.json(json_path), json_path.name).get("steps_words")
        if not isinstance(moves, list) or not moves:
            problems.append(f"{item_id}: {json_path.name} has no steps_words list")
            continue
        read = {frame: _image(root, frame, problems, item_id) for frame in frames}
        images = {frame: image for frame, image in read.items() if image is not None}
        if len(images) < len(read):
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
        for path in write_all_or_nothing(Path(out_dir) / "uni_mmmu", writers, prepared_source(Path(root).resolve())):
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
