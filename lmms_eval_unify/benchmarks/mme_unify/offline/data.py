"""MME-Unify data in the local-data layout (``<out>/mme_unify/<subtask>/test.parquet``).

``generate(out_dir, n, seed)`` writes offline fixture data for the implemented subtasks with known answers:
scikit-image sample photos (which photo is shown / which edit was applied / how many patches differ),
rendered geometry diagrams with auxiliary lines, short PyAV videos and FrozenLake-style VCoT mazes.

Prepared schema (one row per official item; official field -> our column):
- understanding: ``question``, ``choice`` (labels embedded), ``answer``, ``image`` (list of images; VPU: ``video``,
  a file path), ``category``, ``subcategory``, ``source``, ``question_id``.
- IEE/CSQ/AL/SD: ``question``, ``choice``, ``answer``, ``inputs`` (input images: IEE ``data.image``, AL ``data.image``,
  SD ``img_a``/``img_b``; CSQ none) and ``candidates`` (reference image first, then the three negatives, the
  order of the official dicts: IEE ``edited_image, fake_image1..3``; CSQ ``image, fake_image1..3``;
  AL ``image_Auxiliary_lines, ..._negative1..3``; SD ``img_diff_a, img_diff_a_negative1..3``).
- VCoT: ``actions``, ``coordinates`` (JSON strings, as released: 1-indexed [row, col] before each action),
  ``step_images`` (``Step_0..``), ``initial_image`` (the board before the first move), ``grid_size``.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

from PIL import Image, ImageDraw, ImageOps

from lmms_eval_unify.benchmarks.mme_unify import vcot
from lmms_eval_unify.benchmarks.mme_unify.spec import GENERATION, UNDERSTANDING, UNIFY_QA, VIDEO_UNDERSTANDING
from lmms_eval_unify.data.fixtures import FileListener, Written, sample_photo, write_parquet
from lmms_eval_unify.writes import write_bytes

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "camera", "coins")
PHOTO_NAMES = ("astronaut", "coffee", "cat", "rocket", "camera", "coins")
LABEL_STYLES = ("{}. {}", "{}: {}", "({}) {}", "（{}）{}")
LABELS = "ABCD"
EDITS = {
    "Convert the photo to grayscale.": lambda im: ImageOps.grayscale(im).convert("RGB"),
    "Flip the photo horizontally.": ImageOps.mirror,
    "Flip the photo upside down.": ImageOps.flip,
    "Invert the colours of the photo.": ImageOps.invert,
}
EDIT_EXPLANATIONS = {
    "Convert the photo to grayscale.": "the colourful photo became black and white",
    "Flip the photo horizontally.": "the scene is mirrored so left and right are swapped",
    "Flip the photo upside down.": "the scene is turned upside down",
    "Invert the colours of the photo.": "every colour is replaced by its negative",
}


def photo(index: int, size: int = 96) -> Image.Image:
    """scikit-image sample photo number ``index`` of ``PHOTO_NAMES`` (RGB, ``size``²)."""
    return sample_photo(PHOTOS[index], size)


def labelled(texts: list[str], labels: str, style: str) -> list[str]:
    return [style.format(label, text) for label, text in zip(labels, texts, strict=True)]


def _photo_question(rng: random.Random, n_options: int) -> tuple[int, list[int]]:
    options = rng.sample(range(len(PHOTO_NAMES)), n_options)
    return options[rng.randrange(n_options)], options


def _mc_row(i: int, rng: random.Random, question: str, n_options: int = 4) -> tuple[dict, int]:
    shown, options = _photo_question(rng, n_options)
    style = LABEL_STYLES[i % len(LABEL_STYLES)]
    row = {
        "question_id": i + 1,
        "question": question,
        "choice": labelled([PHOTO_NAMES[o] for o in options], LABELS, style),
        "answer": LABELS[options.index(shown)],
        "category": "object recognition",
        "subcategory": "photo",
        "source": "generated",
    }
    return row, shown


def write_video(path: Path, frames: list[Image.Image], fps: int = 8, root: Path | None = None) -> Path:
    """An H.264 (or MPEG-4) mp4 of the frames, encoded with PyAV and written through the write gate (confined to
    ``root``; default the file's folder)."""
    import av

    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format="mp4") as container:
        stream = container.add_stream("mpeg4", rate=fps)
        stream.width, stream.height = frames[0].size
        stream.pix_fmt = "yuv420p"
        for frame in frames:
            for packet in stream.encode(av.VideoFrame.from_image(frame)):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return write_bytes(path, buffer.getvalue(), path.parent if root is None else root)


def understanding_rows(subtask: str, n: int, rng: random.Random, media_dir: Path) -> list[dict]:
    rows = []
    for i in range(n):
        if subtask == "SIPU":
            row, shown = _mc_row(i, rng, "Which object is shown in the image?")
            row["image"] = [photo(shown)]
        elif subtask == "MITIU":
            row, shown = _mc_row(i, rng, "The first picture <img> is a distractor. Which object is shown in <img>?")
            distractor = next(k for k in range(len(PHOTO_NAMES)) if PHOTO_NAMES[k] not in str(row["choice"]))
            row["image"] = [photo(distractor), photo(shown)]
            row["data_type"], row["level"] = "Interleaved Image", "L1"
        else:
            row, shown = _mc_row(i, rng, "Which object is shown throughout the video?")
            frames = [photo(shown).rotate(angle) for angle in range(0, 24, 2)]
            row["video"] = str(write_video(media_dir / f"vpu_{i:04d}.mp4", frames, root=media_dir.parents[1]))
        rows.append(row)
    return rows


def iee_rows(n: int, rng: random.Random) -> list[dict]:
    rows = []
    instructions = list(EDITS)
    for i in range(n):
        source = photo(rng.randrange(len(PHOTO_NAMES)))
        order = rng.sample(range(4), 4)  # order[0] is the instruction applied
        labels = "".join(rng.sample(LABELS, 4))  # labels shuffled in list order, correct option first
        texts = [EDIT_EXPLANATIONS[instructions[k]] for k in order]
        rows.append(
            {
                "question_id": i + 1,
                "question": instructions[order[0]],
                "choice": labelled(texts, labels, "{}: {}"),
                "answer": labels[0],
                "inputs": [source],
                "candidates": [EDITS[instructions[k]](source) for k in order],
                "subcategory": "global",
            }
        )
    return rows


def csq_rows(n: int, rng: random.Random) -> list[dict]:
    rows = []
    for i in range(n):
        shown, options = _photo_question(rng, 4)
        rows.append(
            {
                "id": i + 1,
                "question": f"Which of these is a {PHOTO_NAMES[shown]}?",
                "choice": labelled([PHOTO_NAMES[o] for o in options], LABELS, "{}: {}"),
                "answer": LABELS[options.index(shown)],
                "inputs": [],
                "candidates": [photo(shown)] + [photo(o) for o in options if o != shown],
            }
        )
    return rows


def _triangle(base: int, height: int, line: tuple[str, str] | None) -> Image.Image:
    """Isosceles triangle ABC (apex A) with an optional auxiliary line between two named points."""
    image = Image.new("RGB", (128, 128), "white")
    draw = ImageDraw.Draw(image)
    scale = 100 / max(base, height)
    points = {
        "A": (64, 14),
        "B": (64 - base * scale / 2, 14 + height * scale),
        "C": (64 + base * scale / 2, 14 + height * scale),
    }
    points["D"] = ((points["B"][0] + points["C"][0]) / 2, points["B"][1])
    points["M"] = ((points["A"][0] + points["C"][0]) / 2, (points["A"][1] + points["C"][1]) / 2)
    draw.polygon([points["A"], points["B"], points["C"]], outline="black", width=2)
    for name, xy in points.items():
        if name in "ABC" or (line and name in line):
            draw.text((xy[0] + 3, xy[1] - 10), name, fill="black")
    if line:
        draw.line([points[line[0]], points[line[1]]], fill="red", width=2)
    return image


def al_rows(n: int, rng: random.Random) -> list[dict]:
    rows = []
    for i in range(n):
        half, height = rng.choice([(3, 4), (5, 12), (8, 15), (6, 8)])
        side = int(round((half * half + height * height) ** 0.5))
        values = [height, *rng.sample([v for v in range(2, 20) if v != height], 3)]
        rng.shuffle(values)
        rows.append(
            {
                "id": i + 1,
                "question": f"In triangle ABC, AB = AC = {side} and BC = {2 * half}. "
                "Draw the altitude AD from A to BC. How long is AD?",
                "choice": labelled([str(v) for v in values], LABELS, "{}: {}"),
                "answer": LABELS[values.index(height)],
                "inputs": [_triangle(2 * half, height, None)],
                "candidates": [
                    _triangle(2 * half, height, line) for line in (("A", "D"), ("B", "M"), ("M", "D"), ("C", "M"))
                ],
                "subcategory": "Math_Reasoning",
            }
        )
    return rows


def sd_rows(n: int, rng: random.Random) -> list[dict]:
    rows = []
    cells = [(r, c) for r in range(4) for c in range(4)]
    for i in range(n):
        img_a = photo(rng.randrange(len(PHOTO_NAMES)))
        counts = rng.sample(range(1, 7), 4)
        patch_sets = [rng.sample(cells, k) for k in counts]
        img_b = img_a.copy()
        draw = ImageDraw.Draw(img_b)
        diffs = []
        for patches in patch_sets:
            diff = Image.new("RGB", img_a.size, "white")
            for r, c in patches:
                box = (c * 24, r * 24, c * 24 + 24, r * 24 + 24)
                diff.paste(img_a.crop(box), box[:2])
            diffs.append(diff)
        for r, c in patch_sets[0]:
            draw.ellipse((c * 24 + 4, r * 24 + 4, c * 24 + 20, r * 24 + 20), fill=(255, 0, 255))
        values = sorted(counts)
        rows.append(
            {
                "id": i + 1,
                "question": "How many differences are there between the two images?",
                "choice": labelled([str(v) for v in values], LABELS, "{}: {}"),
                "answer": LABELS[values.index(counts[0])],
                "inputs": [img_a, img_b],
                "candidates": diffs,
            }
        )
    return rows


def vcot_rows(n: int, rng: random.Random) -> list[dict]:
    rows = []
    for i in range(n):
        size = (3, 4, 5)[i % 3]
        lake, moves = vcot.random_lake(size, rng)
        record = vcot.official_record(lake, moves)
        rows.append(
            {
                "id": i + 1,
                "subcategory": f"data_{size}x{size}",
                "grid_size": size,
                "actions": record["actions"],
                "coordinates": [json.dumps(c) for c in record["coordinates"]],
                "initial_image": record["initial_image"],
                "step_images": record["step_images"],
            }
        )
    return rows


def _clip_frames(image: Image.Image, n_frames: int = 24) -> list[Image.Image]:
    """A short pan over ``image`` (the frames differ, so key-frame sampling has something to find)."""
    return [image.rotate(3 * i) for i in range(n_frames)]


def generation_rows(subtask: str, n: int, rng: random.Random, media_dir: Path) -> list[dict]:
    rows = []
    instructions = list(EDITS)
    for i in range(n):
        shown = rng.randrange(len(PHOTO_NAMES))
        source = photo(shown)
        caption = f"a photo of a {PHOTO_NAMES[shown]}"
        row = {"id": i + 1, "category": subtask, "source": "generated", "Text_Prompt": caption}
        if subtask == "FIR":
            row.update(Text_Prompt=" ", image=source)
        elif subtask == "TIE":
            instruction = rng.choice(instructions)
            row.update(Text_Prompt=instruction, image=source, edited_image=EDITS[instruction](source))
        elif subtask == "TIG":
            row["image"] = source
        else:
            video = write_video(
                media_dir / f"{subtask.lower()}_{i:04d}.mp4", _clip_frames(source), root=media_dir.parents[1]
            )
            if subtask != "TVG":
                row["image"] = source
            # the release has TVG items without a reference video (data: {}): one per generated set
            row["video"] = "" if subtask == "TVG" and i == n - 1 else str(video)
        rows.append(row)
    return rows


UNIFY_QA_ROWS = {"IEE": iee_rows, "CSQ": csq_rows, "AL": al_rows, "SD": sd_rows}
"""The row builder of each unify QA subtask of the spec."""


def generate(out_dir: str | Path, n: int, seed: int = 0, on_file: FileListener | None = None) -> list[Path]:
    """``n`` items of every generated subtask (see the module docstring); ``on_file`` hears each parquet file
    as it is written."""
    root = Path(out_dir) / "mme_unify"
    rng = random.Random(seed)
    written = Written(on_file)
    for subtask in UNDERSTANDING:
        rows = understanding_rows(subtask, n, rng, root / subtask.lower() / "media")
        lists = ("image",) if subtask not in VIDEO_UNDERSTANDING else ()
        written.add(write_parquet(rows, root / subtask.lower() / "test.parquet", image_lists=lists, root=root))
    for subtask in GENERATION:
        rows = generation_rows(subtask, n, rng, root / subtask.lower() / "media")
        images = tuple(k for k in ("image", "edited_image") if k in rows[0])
        written.add(write_parquet(rows, root / subtask.lower() / "test.parquet", images=images, root=root))
    for subtask in UNIFY_QA:
        rows = UNIFY_QA_ROWS[subtask](n, rng)
        path = root / subtask.lower() / "test.parquet"
        written.add(write_parquet(rows, path, image_lists=("inputs", "candidates"), root=root))
    written.add(
        write_parquet(
            vcot_rows(n, rng),
            root / "vcot" / "test.parquet",
            images=("initial_image",),
            image_lists=("step_images",),
            root=root,
        )
    )
    return written.paths
