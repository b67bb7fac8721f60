"""``lmms-eval-unify data prepare gapeval --root DIR --out OUT``: the official raw layout -> our datasets.

The official scripts read one folder per question, ``data_<id>/``, holding ``prompt.json`` (an object or a
one-element list: ``category``, ``subcategory``, ``und_prompt`` or ``problem``, ``gen_prompt``, ``reference``
as a string or a list of lines), the input image(s) in ``image/`` (the typo ``inage/`` is accepted, as the
official scripts do) and the reference answer image in ``ref/``. Each question becomes one row of
``OUT/gapeval/<category>/test.parquet`` (schema: ``items.py``). Every item is validated; any problem is listed
and nothing is written.

Official category names map to the paper's four [our inference, as in the facts note]: "Multi Hop" ->
world_knowledge (its image task is pure text-to-image), counting -> numerical_perception, rule_based ->
instruction_following, physics and reasoning -> reasoning; the paper's own names are accepted as well.
"""

from __future__ import annotations

import argparse
import functools
import re
from collections import Counter
from pathlib import Path

from PIL import Image

from lmms_eval_unify import gate
from lmms_eval_unify.benchmarks.gapeval.offline.data import category_path, write_rows
from lmms_eval_unify.benchmarks.gapeval.spec import CATEGORIES
from lmms_eval_unify.data.release import Problems, Release, report, text_field, write_all_or_nothing
from lmms_eval_unify.output.media_reader import DECODE_ERRORS
from lmms_eval_unify.run.provenance import prepared_source

CATEGORY_MAP = {
    "multi_hop": "world_knowledge",
    "counting": "numerical_perception",
    "rule_based": "instruction_following",
    "physics": "reasoning",
    **{c: c for c in CATEGORIES},
}
TEXT_TO_IMAGE = {"multi_hop"}
"""Official categories whose image task has no input image."""
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif"}


class ItemError(ValueError):
    """Why one ``data_<id>`` folder cannot be converted."""


def _norm(category: str) -> str:
    return re.sub(r"[\s\-/]+", "_", category.strip().lower())


def _images(release: Release, folder: Path) -> list[Image.Image]:
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES) if folder.is_dir() else []
    images = []
    for path in files:
        try:
            images.append(release.image(path))
        except (gate.Refused, *DECODE_ERRORS) as exc:
            raise ItemError(f"{path}: unreadable image ({exc})") from exc
    return images


def read_item(folder: Path, release: Release | None = None) -> dict:
    """One question folder of ``release`` (default: the folder's parent) as a row of our schema (``ItemError``
    naming what is wrong). Every file is read through the gate, never outside the release."""
    release = release or Release(folder.parent)
    prompt_file = folder / "prompt.json"
    if not prompt_file.exists() and not prompt_file.is_symlink():
        raise ItemError(f"{folder}: no prompt.json")
    try:
        raw = gate.read_json(prompt_file, "release_file", [release.root])
    except gate.Refused as exc:
        raise ItemError(f"{prompt_file}: {exc.detail} ({exc.reason})") from exc
    if isinstance(raw, list):
        if len(raw) != 1:
            raise ItemError(f"{prompt_file}: a list must hold exactly one object, got {len(raw)}")
        raw = raw[0]
    if not isinstance(raw, dict):
        raise ItemError(f"{prompt_file}: not a JSON object")
    try:
        official = _norm(text_field(raw, "category"))
        reference = raw.get("reference")
        lines = reference if isinstance(reference, list) else [reference]
        row: dict[str, object] = {
            "id": folder.name,
            "subcategory": text_field(raw, "subcategory") or text_field(raw, "category"),
            "und_prompt": text_field(raw, "und_prompt") or text_field(raw, "problem"),
            "gen_prompt": text_field(raw, "gen_prompt"),
            "reference": "\n".join(text_field({"reference": line}, "reference") for line in lines),
        }
    except gate.Refused as exc:
        raise ItemError(f"{prompt_file}: {exc.subject} {exc.detail}") from exc
    if official not in CATEGORY_MAP:
        raise ItemError(f"{prompt_file}: unknown category {raw.get('category')!r}; known: {sorted(CATEGORY_MAP)}")
    row["category"] = CATEGORY_MAP[official]
    missing = [key for key in ("und_prompt", "gen_prompt", "reference") if not str(row[key] or "").strip()]
    if missing:
        raise ItemError(f"{prompt_file}: empty or missing {', '.join(missing)}")
    image_dir = folder / "image" if (folder / "image").is_dir() else folder / "inage"
    references = _images(release, folder / "ref")
    row |= {
        "images": _images(release, image_dir),
        "ref_image": references[0] if references else None,
        "gen_uses_image": official not in TEXT_TO_IMAGE,
    }
    if row["gen_uses_image"] and not row["images"]:
        raise ItemError(f"{folder}: an editing item ({raw['category']}) without an input image in image/")
    return row


def prepare(root: Path, out: Path) -> tuple[list[Path], Counter, list[str]]:
    """(written folders, questions per category, problems); nothing is written when there are problems."""
    folders = sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("data_")) if root.is_dir() else []
    release = Release(root)
    if not folders:
        return [], Counter(), [f"{root}: no data_<id> folders"]
    rows, problems = [], Problems()
    for folder in folders:
        with problems.guard(folder.name):
            try:
                rows.append(read_item(folder, release))
            except ItemError as exc:
                problems.append(str(exc))
    counts = Counter(row["category"] for row in rows)
    if problems:
        return [], counts, problems
    tables = {
        c: functools.partial(_write_category, [r for r in rows if r["category"] == c]) for c in CATEGORIES if counts[c]
    }
    target = category_path(out, CATEGORIES[0]).parent.parent
    return write_all_or_nothing(target, tables, prepared_source(root.resolve())), counts, []


def _write_category(rows: list[dict], folder: Path) -> None:
    write_rows(rows, folder / category_path("", "x").name)


def prepare_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="lmms-eval-unify data prepare gapeval", description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, required=True, help="folder holding the data_<id>/ question folders")
    parser.add_argument("--out", type=Path, required=True, help="local-data folder (LMMS_EVAL_UNIFY_DATA_DIR)")
    args = parser.parse_args(argv)
    written, counts, problems = prepare(args.root, args.out)
    if report(problems):
        return 1
    for category in CATEGORIES:
        print(f"{category}: {counts[category]} questions" + ("" if counts[category] else " (none: task will not run)"))
    for path in written:
        print(path)
    return 0
