"""Convert the official MME-Unify release into the local-data layout, validating every referenced file.

Annotations: the JSON files of the GitHub repository's ``Unify_Dataset/`` (found by file name anywhere under
``--annotations``). Media: the Hub dataset ``wulin222/MME-Unify`` (paths in the JSONs are relative to it).
Known oddities handled and reported: ``.jfif`` files referenced as ``.jpg``; TVG items with ``data: {}``
(kept, without reference video; the scorer skips them); malformed VCoT coordinates (kept as released);
non-unique ids (rows keep their list index as ``index``).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from lmms_eval_unify.benchmarks.fixtures import write_parquet

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
    """Resolves relative media paths under the media root and records what is missing or renamed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.missing: list[str] = []
        self.renamed: Counter = Counter()

    def resolve(self, relative: str) -> str | None:
        path = self.root / relative
        if path.is_file():
            return str(path)
        for alternative in (path.with_suffix(".jfif"), path.with_suffix(".jpg"), path.with_suffix(".png")):
            if alternative.is_file():
                self.renamed[f"{path.suffix}->{alternative.suffix}"] += 1
                return str(alternative)
        self.missing.append(relative)
        return None


def _find(annotations: Path, name: str) -> Path:
    found = sorted(annotations.rglob(name))
    if not found:
        raise FileNotFoundError(
            f"{name} not found under {annotations} (expected the release's Unify_Dataset/)"
        )
    return found[0]


def _all_resolved(media: MediaIndex, paths: list[str]) -> list[str] | None:
    resolved = [media.resolve(p) for p in paths]
    return None if any(r is None for r in resolved) else resolved


def understanding_rows(items: list[dict], media: MediaIndex) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {k: [] for k in UNDERSTANDING_FOLDERS.values()}
    for index, item in enumerate(items):
        subtask = UNDERSTANDING_FOLDERS.get(Path(item["image"][0]).parts[0])
        if subtask is None:
            raise ValueError(f"understanding item {index}: unknown media folder of {item['image'][0]!r}")
        paths = _all_resolved(media, list(item["image"]))
        if paths is None:
            continue
        row = {
            "index": index,
            "question_id": int(item["question_id"]),
            "question": item["question"],
            "choice": list(item["choice"]),
            "answer": item["answer"],
            "category": item.get("category", ""),
            "subcategory": item.get("subcategory", ""),
            "source": item.get("source", ""),
        }
        if subtask == "vpu":
            row["video"] = paths[0]
        else:
            row["image"] = paths
        if subtask == "mitiu":
            row["data_type"], row["level"] = item.get("data_type", ""), item.get("level", "")
        out[subtask].append(row)
    return out


def generation_rows(items: list[dict], media: MediaIndex) -> tuple[dict[str, list[dict]], int]:
    out: dict[str, list[dict]] = {k: [] for k in GENERATION_CATEGORIES.values()}
    no_reference = 0
    for index, item in enumerate(items):
        subtask = GENERATION_CATEGORIES[item["category"]]
        data = item.get("data") or {}
        row = {
            "index": index,
            "id": int(item.get("id", index)),
            "category": item["category"],
            "source": item.get("source", ""),
            "Text_Prompt": item.get("Text_Prompt", ""),
        }
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


def unify_rows(subtask: str, items: list[dict], media: MediaIndex) -> list[dict]:
    rows = []
    for index, item in enumerate(items):
        data = item["data"]
        if subtask == "vcot":
            steps = sorted((k for k in data if k.startswith("Step_")), key=lambda k: int(k.split("_")[1]))
            paths = _all_resolved(media, [data[k] for k in steps])
            if paths is None:
                continue
            size = int(str(item.get("subcategory", "data_3x3")).rsplit("_", 1)[-1].split("x")[0])
            rows.append(
                {
                    "index": index,
                    "id": int(item.get("id", index)),
                    "subcategory": item.get("subcategory", ""),
                    "grid_size": size,
                    "actions": list(data["Action"]),
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
                "question": item.get("question", "How many differences are there between img_a and img_b?"),
                "choice": list(item["choice"]),
                "answer": item["answer"],
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
    "tie": ("image", "edited_image"),
    "tig": ("image",),
    "vcot": ("initial_image",),
}


def _as_images(rows: list[dict], keys: tuple[str, ...], lists: tuple[str, ...]) -> list[dict]:
    from PIL import Image

    def load(path: str) -> Image.Image:
        with Image.open(path) as handle:
            return handle.convert("RGB")

    for row in rows:
        row.update({k: load(row[k]) for k in keys})
        row.update({k: [load(p) for p in row[k]] for k in lists})
    return rows


def prepare(
    annotations: str | Path, media_root: str | Path, out_dir: str | Path, log: Callable = print
) -> int:
    """Write ``<out>/mme_unify/<subtask>/test.parquet``; returns the number of missing media files."""
    annotations, media = Path(annotations), MediaIndex(Path(media_root))
    tables: dict[str, list[dict]] = {}
    tables.update(
        understanding_rows(json.loads(_find(annotations, "Understanding_Unified.json").read_text()), media)
    )
    generation, no_reference = generation_rows(
        json.loads(_find(annotations, "Generation_Unified.json").read_text()), media
    )
    tables.update(generation)
    for subtask, name in UNIFY_FILES.items():
        tables[subtask] = unify_rows(subtask, json.loads(_find(annotations, name).read_text()), media)
    root = Path(out_dir) / "mme_unify"
    for subtask, rows in tables.items():
        log(f"{subtask}: {len(rows)} items")
        if not rows:
            continue
        lists = IMAGE_LISTS.get(subtask, ("inputs", "candidates") if subtask in CANDIDATES else ())
        keys = IMAGES.get(subtask, ("image",) if subtask in ("civg", "vp") else ())
        write_parquet(
            _as_images(rows, keys, lists), root / subtask / "test.parquet", images=keys, image_lists=lists
        )
    log(f"TVG items without reference video (skipped when scoring): {no_reference}")
    log(f"VCoT items with malformed coordinates: {malformed_coordinates(tables['vcot'])}")
    for change, count in media.renamed.items():
        log(f"media found under another extension ({change}): {count}")
    for path in media.missing:
        log(f"MISSING {path}")
    log(f"missing media files: {len(media.missing)} (their items were left out)")
    return len(media.missing)


def prepare_main(argv: list[str]) -> int:
    """``lmms-eval-unify data prepare mme_unify --annotations DIR --media DIR --out DIR``; exit 1 if files miss."""
    parser = argparse.ArgumentParser(prog="lmms-eval-unify data prepare mme_unify", description=__doc__)
    parser.add_argument("--annotations", required=True, help="the GitHub repository's Unify_Dataset/ folder")
    parser.add_argument("--media", required=True, help="local copy of the Hub dataset wulin222/MME-Unify")
    parser.add_argument("--out", required=True, help="LMMS_EVAL_UNIFY_DATA_DIR to write")
    args = parser.parse_args(argv)
    return 1 if prepare(args.annotations, args.media, args.out) else 0
