"""Convert the official MME-Unify release into the local-data layout, validating every referenced file.

Annotations: the JSON files of the GitHub repository's ``Unify_Dataset/`` (found by file name anywhere under
``--annotations``). Media: the Hub dataset ``wulin222/MME-Unify`` (paths in the JSONs are relative to it).
Videos are linked (or copied) into each subtask's ``media/`` folder, so every file a row names lies inside the
data folder (task data loading refuses any other). Known oddities handled and reported: ``.jfif`` files
referenced as ``.jpg``; TVG items with ``data: {}`` (kept, without reference video; the scorer skips them);
malformed VCoT coordinates (kept as released); non-unique ids (rows keep their list index as ``index``).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from lmms_eval_unify import gate
from lmms_eval_unify.data.fixtures import write_parquet
from lmms_eval_unify.data.release import Problems, Release, report, text_field, text_list, write_all_or_nothing
from lmms_eval_unify.run.provenance import prepared_source

UNIFY_FILES = {
    "iee": "Unified_Explanation.json",
    "csq": "Common_Sense_Question.json",
    "al": "Auxiliary_Lines..json",
    "sd": "Spot_Diff.json",
    "vcot": "Visual_CoT.json",
}
UNDERSTANDING_FOLDERS = {
    "Single_Image_Perception_and_Understanding": "sipu",
    "Multiple_Images_and_Text_Interlaced": "mitiu",
    "Video_Perception_and_Understanding": "vpu",
}
GENERATION_CATEGORIES = {
    "Fine-Grained_Image_Reconstruction": "fir",
    "Text-Image_Editing": "tie",
    "Text-Image_Generation": "tig",
    "Conditional_Image_to_Video_Generation": "civg",
    "Text-to-Video_Generation": "tvg",
    "Video prediction": "vp",
}
CANDIDATES = {
    "iee": ("edited_image", "fake_image1", "fake_image2", "fake_image3"),
    "csq": ("image", "fake_image1", "fake_image2", "fake_image3"),
    "al": (
        "image_Auxiliary_lines",
        "image_Auxiliary_lines_negative1",
        "image_Auxiliary_lines_negative2",
        "image_Auxiliary_lines_negative3",
    ),
    "sd": ("img_diff_a", "img_diff_a_negative1", "img_diff_a_negative2", "img_diff_a_negative3"),
}
INPUTS = {"iee": ("image",), "csq": (), "al": ("image",), "sd": ("img_a", "img_b")}


class MediaIndex:
    """Resolves relative media paths under the media root (through the gate: a path that is not a string, is
    absolute or leaves the media root raises ``gate.Refused``) and records what is missing or renamed."""

    def __init__(self, root: Path) -> None:
        self.release = Release(root)
        self.missing: list[str] = []
        self.renamed: Counter = Counter()

    def resolve(self, relative: object) -> str | None:
        found = self.release.find(relative)
        if found is not None:
            return str(found)
        suffix = Path(str(relative)).suffix
        for alternative in (".jfif", ".jpg", ".png"):
            found = self.release.find(str(Path(str(relative)).with_suffix(alternative)))
            if found is not None:
                self.renamed[f"{suffix}->{alternative}"] += 1
                return str(found)
        self.missing.append(str(relative))
        return None


def _find(annotations: Path, name: str) -> Path:
    found = sorted(path for path in annotations.rglob(name) if not path.is_dir())
    if not found:
        raise FileNotFoundError(f"{name} not found under {annotations} (expected the release's Unify_Dataset/)")
    return found[0]


def _all_resolved(media: MediaIndex, paths: list[object]) -> list[str] | None:
    resolved = [media.resolve(p) for p in paths]
    found = [r for r in resolved if r is not None]
    return found if len(found) == len(resolved) else None


def understanding_rows(items: list[dict], media: MediaIndex, problems: Problems) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {k: [] for k in UNDERSTANDING_FOLDERS.values()}
    for index, item in enumerate(items):
        with problems.guard(f"Understanding_Unified.json item {index}"):
            images = text_list(item, "image")
            subtask = UNDERSTANDING_FOLDERS.get(Path(images[0]).parts[0]) if images else None
            if subtask is None:
                raise ValueError(f"understanding item {index}: unknown media folder of {images[:1]!r}")
            paths = _all_resolved(media, list(images))
            if paths is None:
                continue
            row = {
                "index": index,
                "question_id": int(item["question_id"]),
                "question": text_field(item, "question"),
                "choice": text_list(item, "choice"),
                "answer": text_field(item, "answer"),
                "category": text_field(item, "category"),
                "subcategory": text_field(item, "subcategory"),
                "source": text_field(item, "source"),
            }
            if subtask == "vpu":
                row["video"] = paths[0]
            else:
                row["image"] = paths
            if subtask == "mitiu":
                row["data_type"], row["level"] = text_field(item, "data_type"), text_field(item, "level")
            out[subtask].append(row)
    return out


def generation_rows(items: list[dict], media: MediaIndex, problems: Problems) -> tuple[dict[str, list[dict]], int]:
    out: dict[str, list[dict]] = {k: [] for k in GENERATION_CATEGORIES.values()}
    no_reference = 0
    for index, item in enumerate(items):
        with problems.guard(f"Generation_Unified.json item {index}"):
            subtask = GENERATION_CATEGORIES[text_field(item, "category")]
            data = item.get("data") or {}
            if not isinstance(data, dict):
                raise gate.Refused("malformed", "data", f"must be an object, got {type(data).__name__}")
            row = {
                "index": index,
                "id": int(item.get("id", index)),
                "category": item["category"],
                "source": text_field(item, "source"),
                "subcategory": text_field(item, "subcategory"),
                "Text_Prompt": text_field(item, "Text_Prompt"),
            }
            if subtask == "tie":  # the mask of the 200 mask-guided edits (None for the other 400)
                row["mask_img"] = media.resolve(data["mask_img"]) if data.get("mask_img") else None
            if subtask == "tvg":
                if not data.get("image"):
                    no_reference += 1
                    row["video"] = ""
                else:
                    resolved = media.resolve(data["image"])  # TVG's reference .mp4 is stored under "image"
                    if resolved is None:
                        continue
                    row["video"] = resolved
                out[subtask].append(row)
                continue
            fields = {"fir": ("image",), "tie": ("image", "edited_image"), "tig": ("image",)}.get(
                subtask, ("image", "video")
            )
            paths = _all_resolved(media, [data[f] for f in fields])
            if paths is None:
                continue
            row.update(dict(zip(fields, paths, strict=True)))
            out[subtask].append(row)
    return out, no_reference


def unify_rows(subtask: str, items: list[dict], media: MediaIndex, problems: Problems) -> list[dict]:
    rows = []
    for index, item in enumerate(items):
        with problems.guard(f"{UNIFY_FILES[subtask]} item {index}"):
            data = item["data"]
            if not isinstance(data, dict):
                raise gate.Refused("malformed", "data", f"must be an object, got {type(data).__name__}")
            if subtask == "vcot":
                steps = sorted((k for k in data if k.startswith("Step_")), key=lambda k: int(k.split("_")[1]))
                paths = _all_resolved(media, [data[k] for k in steps])
                if paths is None:
                    continue
                size = int(text_field(item, "subcategory", "data_3x3").rsplit("_", 1)[-1].split("x")[0])
                rows.append(
                    {
                        "index": index,
                        "id": int(item.get("id", index)),
                        "subcategory": text_field(item, "subcategory"),
                        "grid_size": size,
                        "actions": text_list(data, "Action"),
                        "coordinates": [json.dumps(c) for c in data["Coordinate"]],
                        "step_images": paths,
                        # the release has no separate initial map; Step_0 is shown (inferred, see the fidelity note)
                        "initial_image": paths[0],
                    }
                )
                continue
            inputs = _all_resolved(media, [data[k] for k in INPUTS[subtask]])
            candidates = _all_resolved(media, [data[k] for k in CANDIDATES[subtask]])
            if inputs is None or candidates is None:
                continue
            rows.append(
                {
                    "index": index,
                    "id": int(item.get("question_id", item.get("id", index))),
                    "question": text_field(item, "question", "How many differences are there between img_a and img_b?"),
                    "choice": text_list(item, "choice"),
                    "answer": text_field(item, "answer"),
                    "inputs": inputs,
                    "candidates": candidates,
                }
            )
    return rows


def malformed_coordinates(rows: list[dict]) -> int:
    """VCoT items with a coordinate that is not a pair of integers (e.g. ``[1.3]``)."""
    return sum(any(not _is_cell(json.loads(c)) for c in row["coordinates"]) for row in rows)


def _is_cell(value: object) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value)


IMAGE_LISTS: dict[str, tuple[str, ...]] = {"sipu": ("image",), "mitiu": ("image",), "vcot": ("step_images",)}
IMAGES: dict[str, tuple[str, ...]] = {
    "fir": ("image",),
    "tie": ("image", "edited_image", "mask_img"),
    "tig": ("image",),
    "vcot": ("initial_image",),
}


def _as_images(rows: list[dict], keys: tuple[str, ...], lists: tuple[str, ...], media: Release) -> list[dict]:
    from PIL import Image

    def load(path: str | None) -> Image.Image | None:
        return None if path is None else media.image(path)

    for row in rows:
        row.update({k: load(row[k]) for k in keys})
        row.update({k: [load(p) for p in row[k]] for k in lists})
    return rows


def _image_columns(subtask: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(single-image columns, image-list columns) of a subtask's table."""
    lists = IMAGE_LISTS.get(subtask, ("inputs", "candidates") if subtask in CANDIDATES else ())
    keys = IMAGES.get(subtask, ("image",) if subtask in ("civg", "vp") else ())
    return keys, lists


def _write_subtask(subtask: str, rows: list[dict], media: Release, final: Path, folder: Path) -> None:
    """Write the subtask's table into ``folder`` (staged; it becomes ``final``): images embedded, videos linked
    (or copied) into its ``media/`` so every file a row names lies inside the data folder."""
    keys, lists = _image_columns(subtask)
    for row in rows:
        if row.get("video"):
            name = f"{row['index']:05d}_{Path(row['video']).name}"
            (folder / "media").mkdir(exist_ok=True)
            _link_or_copy(Path(row["video"]), folder / "media" / name)
            row["video"] = str(final / "media" / name)
    write_parquet(_as_images(rows, keys, lists, media), folder / "test.parquet", images=keys, image_lists=lists)


def _link_or_copy(source: Path, target: Path) -> None:
    """A hard link of ``source`` at ``target``, or a copy across file systems."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _load_json(annotations: Path, name: str) -> list[dict]:
    items = Release(annotations).json(_find(annotations, name).relative_to(annotations))
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise gate.Refused("malformed", name, "must be a JSON list of objects")
    return items


def prepare(annotations: str | Path, media_root: str | Path, out_dir: str | Path, log: Callable = print) -> list[str]:
    """Validate the whole release, then write ``<out>/mme_unify/<subtask>/test.parquet`` for every subtask, or
    nothing when there is any problem (missing or unreadable media, malformed items); returns the problems."""
    annotations, media = Path(annotations), MediaIndex(Path(media_root))
    problems = Problems()
    tables: dict[str, list[dict]] = {}
    no_reference = 0
    with problems.guard("Understanding_Unified.json"):
        tables.update(understanding_rows(_load_json(annotations, "Understanding_Unified.json"), media, problems))
    with problems.guard("Generation_Unified.json"):
        generation, no_reference = generation_rows(_load_json(annotations, "Generation_Unified.json"), media, problems)
        tables.update(generation)
    for subtask, name in UNIFY_FILES.items():
        with problems.guard(name):
            tables[subtask] = unify_rows(subtask, _load_json(annotations, name), media, problems)
    problems += [f"missing media file {path}" for path in media.missing]
    for subtask, rows in tables.items():
        keys, lists = _image_columns(subtask)
        for row in rows:
            paths = [row[k] for k in keys if row.get(k)] + [p for k in lists for p in row.get(k, [])]
            for path in paths:
                problems.check_image(media.release, path, f"{subtask} item {row['index']}")
    for subtask, rows in tables.items():
        log(f"{subtask}: {len(rows)} items")
    log(f"TVG items without reference video (skipped when scoring): {no_reference}")
    log(f"VCoT items with malformed coordinates: {malformed_coordinates(tables.get('vcot', []))}")
    for change, count in media.renamed.items():
        log(f"media found under another extension ({change}): {count}")
    if not problems:
        target = Path(out_dir).resolve() / "mme_unify"
        writers = {
            s: functools.partial(_write_subtask, s, rows, media.release, target / s)
            for s, rows in tables.items()
            if rows
        }
        for path in write_all_or_nothing(target, writers, prepared_source(annotations.resolve())):
            log(f"wrote {path}")
    return problems


def prepare_main(argv: list[str]) -> int:
    """``lmms-eval-unify data prepare mme_unify --annotations DIR --media DIR --out DIR``; exit 1 on any problem."""
    parser = argparse.ArgumentParser(prog="lmms-eval-unify data prepare mme_unify", description=__doc__)
    parser.add_argument("--annotations", required=True, help="the GitHub repository's Unify_Dataset/ folder")
    parser.add_argument("--media", required=True, help="local copy of the Hub dataset wulin222/MME-Unify")
    parser.add_argument("--out", required=True, help="LMMS_EVAL_UNIFY_DATA_DIR to write")
    args = parser.parse_args(argv)
    return report(prepare(args.annotations, args.media, args.out))
