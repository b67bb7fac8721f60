"""Offline UniG2U fixture data with the published files' names and fields.

``generate(out_dir, n, seed)`` writes ``<out>/unig2u/<published relative path>`` for every implemented
subtask (the Hub repository's own layout, read by ``UniG2UTask`` under ``LMMS_EVAL_UNIFY_DATA_DIR``):
matplotlib bar charts with known values (ChartQA), grid maps with known displacements / arrival times (VSP),
scikit-image sample photos for the multiple-choice and IllusionBench items (the question asks which photo
is shown, so the answer is known), and Uni-MMMU mazes and sliding puzzles from ``lmms_eval_unify.puzzles``.
"""

from __future__ import annotations

import io
import random
import shutil
import string
import tempfile
from collections.abc import Callable
from pathlib import Path

import datasets
import numpy as np
from PIL import Image, ImageDraw

from lmms_eval_unify.benchmarks.unig2u.prompts import SCENES, SHAPES
from lmms_eval_unify.benchmarks.unig2u.subtasks import (
    ILLUSION_SUBSETS,
    MMSI,
    MMSI_FILES,
    REALUNIFY_FILES,
    VISUAL_PUZZLES,
)
from lmms_eval_unify.puzzles.dataset import write_uni_mmmu_puzzles

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "camera", "coins")


def photo(name: str, size: int = 128) -> Image.Image:
    """A scikit-image sample photo (RGB, ``size``²)."""
    from skimage import data as samples

    array = getattr(samples, name)()
    image = Image.fromarray(np.asarray(array)).convert("RGB")
    return image.resize((size, size))


def _png(image: Image.Image) -> dict:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return {"bytes": buffer.getvalue(), "path": None}


def _write(
    rows: list[dict], path: Path, images: tuple[str, ...] = (), image_lists: tuple[str, ...] = ()
) -> Path:
    features = {}
    for key, value in rows[0].items():
        if key in images:
            features[key] = datasets.Image()
        elif key in image_lists:
            features[key] = datasets.Sequence(datasets.Image())
        elif isinstance(value, list):
            features[key] = datasets.Sequence(datasets.Value("string"))
        elif isinstance(value, bool):
            features[key] = datasets.Value("bool")
        elif isinstance(value, int):
            features[key] = datasets.Value("int64")
        elif isinstance(value, float):
            features[key] = datasets.Value("float64")
        else:
            features[key] = datasets.Value("string")
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows, features=datasets.Features(features)).to_parquet(str(path))
    return path


def _which_photo(rng: random.Random) -> tuple[str, list[str], str]:
    """A photo name, four option names (one of them it) and the correct letter."""
    names = rng.sample(PHOTOS, 4)
    shown = rng.choice(names)
    return shown, names, "ABCD"[names.index(shown)]


def _options_text(names: list[str]) -> str:
    return "\n".join(f"{label}. {name}" for label, name in zip("ABCD", names, strict=True))


def realunify_rows(n: int, rng: random.Random, task_type: str) -> list[dict]:
    rows = []
    for i in range(n):
        shown, names, answer = _which_photo(rng)
        question = "Which scikit-image sample photo is shown?"
        prompt = (
            f"{question}\n{_options_text(names)}\nAnswer with the option's letter from the given choices."
        )
        rows.append({"image": _png(photo(shown)), "question": question, "evaluation_prompt": prompt,
                     "answer": answer, "task_type": task_type, "index": i})  # fmt: skip
    return rows


def mmsi_rows(n: int, rng: random.Random, question_type: str) -> list[dict]:
    rows = []
    for i in range(n):
        shown, names, answer = _which_photo(rng)
        other = rng.choice([p for p in PHOTOS if p != shown])
        options = ", ".join(f"{label}: {name}" for label, name in zip("ABCD", names, strict=True))
        question = f"Which sample photo is shown in the second image?\nOptions: {options}"
        rows.append({"images": [_png(photo(other)), _png(photo(shown))], "question": question, "answer": answer,
                     "question_type": question_type, "id": i})  # fmt: skip
    return rows


def visual_puzzles_rows(n: int, rng: random.Random, category: str) -> list[dict]:
    rows = []
    for i in range(n):
        shown, names, answer = _which_photo(rng)
        rows.append({"image": _png(photo(shown)), "question": "Which sample photo is this?", "options": names,
                     "answer": answer, "category": category, "id": f"{category}_{i}"})  # fmt: skip
    return rows


def illusion_rows(n: int, rng: random.Random, subset: str) -> list[dict]:
    shapes = [s.strip().replace(" ", "_") for s in SHAPES[subset].split(",")]
    scenes = [s.strip() for s in SCENES.split(",")]
    rows = []
    for i in range(n):
        shape, scene = rng.choice(shapes), rng.choice(scenes)
        image = photo(rng.choice(PHOTOS))
        ImageDraw.Draw(image).text((8, 8), f"{shape}\n{scene}", fill="white")
        name = f"{shape.lower()}-{i}-{scene}-Easy-1.5-90.png"
        rows.append({"image_name": name, "image": {**_png(image), "path": name}})
    return rows


def chart(labels: list[str], values: list[int]) -> Image.Image:
    """A bar chart with the values printed on the bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(3, 2.4), dpi=80)
    bars = axis.bar(labels, values, color="#4C72B0")
    axis.bar_label(bars)
    axis.set_title("Sales by product")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return Image.open(buffer).convert("RGB")


def chartqa_rows(n: int, rng: random.Random) -> list[dict]:
    rows = []
    for i in range(n):
        labels = rng.sample(list(string.ascii_uppercase), 4)
        values = [rng.randint(1, 99) for _ in labels]
        k = rng.randrange(4)
        rows.append({"image": _png(chart(labels, values)), "question": f"What is the value of product {labels[k]}?",
                     "answer": str(values[k]), "type": "human_test" if i % 2 else "augmented"})  # fmt: skip
    return rows


def grid_map(size: int, marks: dict[tuple[int, int], tuple[str, str]]) -> Image.Image:
    """A ``size``×``size`` street grid with lettered markers ``{(row, col): (letter, colour)}``."""
    cell = 32
    image = Image.new("RGB", (size * cell, size * cell), "white")
    draw = ImageDraw.Draw(image)
    for k in range(size + 1):
        draw.line([(0, k * cell), (size * cell, k * cell)], fill="gray")
        draw.line([(k * cell, 0), (k * cell, size * cell)], fill="gray")
    for (row, col), (letter, colour) in marks.items():
        draw.text((col * cell + 12, row * cell + 10), letter, fill=colour)
    return image


def vsp_rows(n: int, rng: random.Random) -> tuple[list[dict], list[dict]]:
    example = grid_map(6, {(4, 0): ("S", "blue"), (3, 4): ("G", "red")})
    gmap, collision = [], []
    for i in range(n):
        start, goal = rng.sample([(row, col) for row in range(6) for col in range(6)], 2)  # distinct cells
        test = grid_map(6, {start: ("S", "blue"), goal: ("G", "red")})
        gmap.append({"example_image": _png(example), "test_image": _png(test), "gt_north_south": start[0] - goal[0],
                     "gt_east_west": goal[1] - start[1], "test_id": i})  # fmt: skip
        car_dist, person_dist = rng.randint(1, 4), rng.randint(1, 4)
        car_speed, person_speed = rng.choice([0.5, 1.0, 2.0]), rng.choice([0.5, 1.0])
        test = grid_map(
            6, {(2, 2 + car_dist): ("C", "black"), (2 + person_dist, 2): ("P", "green"), (2, 2): ("G", "red")}
        )
        collision.append({"icon_image": _png(grid_map(3, {(1, 0): ("C", "black"), (1, 1): ("P", "green"),
                          (1, 2): ("G", "red")})), "example_image": _png(example), "test_image": _png(test),
                          "car_dir": "left", "car_speed": car_speed, "person_dir": "up", "person_speed": person_speed,
                          "gt_car": car_dist / car_speed, "gt_person": person_dist / person_speed, "test_id": i})  # fmt: skip
    return gmap, collision


def _puzzles(root: Path, n: int, seed: int) -> list[Path]:
    """Uni-MMMU mazes and sliding puzzles (the shared generator) under the UniG2U file names."""
    with tempfile.TemporaryDirectory() as tmp:
        maze, sliding = write_uni_mmmu_puzzles(tmp, n, n, seed)
        targets = [
            root / "uni_mmmu" / "uni_mmmu_maze100.parquet",
            root / "uni_mmmu" / "uni_mmmu_sliding54.parquet",
        ]
        for source, target in zip((maze, sliding), targets, strict=True):
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    return targets


def generate(out_dir: str | Path, n: int, seed: int = 0) -> list[Path]:
    """``n`` items of every implemented subtask (VSP: ``n`` Google-map + ``n`` collision items)."""
    root = Path(out_dir) / "unig2u"
    rng = random.Random(f"unig2u/{seed}")
    image = ("image",)
    written: list[Path] = []
    writers: list[tuple[str, Callable[[], list[dict]], dict]] = [
        *[(f"realunify/{f}.parquet", lambda t=f: realunify_rows(n, rng, t), {"images": image})
          for f in REALUNIFY_FILES.values()],
        *[(f"mmsi_bench/{MMSI_FILES[s]}.parquet", lambda s=s: mmsi_rows(n, rng, s), {"image_lists": ("images",)})
          for s in MMSI],
        *[(f"visualpuzzles/{c}.parquet", lambda c=c: visual_puzzles_rows(n, rng, c), {"images": image})
          for c in VISUAL_PUZZLES],
        *[(f"illusionbench/illusion_{s}_test100.parquet", lambda s=s: illusion_rows(n, rng, s), {"images": image})
          for s in ILLUSION_SUBSETS],
        ("chartqa100/chartqa100.parquet", lambda: chartqa_rows(n, rng), {"images": image}),
    ]  # fmt: skip
    for relative, rows, kinds in writers:
        written.append(_write(rows(), root / relative, **kinds))
    gmap, collision = vsp_rows(n, rng)
    written.append(_write(gmap, root / "vsp/vsp_google_map_50.parquet", ("example_image", "test_image")))
    written.append(
        _write(
            collision, root / "vsp/vsp_collision_50.parquet", ("icon_image", "example_image", "test_image")
        )
    )
    return [*written, *_puzzles(root, n, seed)]


def prepare(snapshot: str | Path, out_dir: str | Path) -> list[Path]:
    """Copy the files of every implemented subtask from a downloaded snapshot of ``kkv233/unig2u_dataset``
    into ``<out>/unig2u/`` (same relative paths), checking that each has the paper's number of rows."""
    from lmms_eval_unify.benchmarks.unig2u.subtasks import SUBTASKS

    snapshot, root = Path(snapshot), Path(out_dir) / "unig2u"
    copied = []
    for subtask in SUBTASKS.values():
        rows = 0
        for relative in subtask.files:
            source = snapshot / relative
            if not source.is_file():
                raise FileNotFoundError(
                    f"{source} is missing: download kkv233/unig2u_dataset into {snapshot}"
                )
            rows += datasets.Dataset.from_parquet(str(source)).num_rows
            target = root / relative
            if target not in copied:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
                copied.append(target)
        if rows != subtask.n:
            raise ValueError(f"{subtask.name}: {rows} rows in {subtask.files}, the paper has {subtask.n}")
    return copied


def prepare_main(argv: list[str]) -> int:
    """``lmms-eval-unify data prepare unig2u --snapshot DIR --out DIR``."""
    import argparse

    parser = argparse.ArgumentParser(prog="lmms-eval-unify data prepare unig2u", description=prepare.__doc__)
    parser.add_argument(
        "--snapshot", required=True, help="local copy of the Hub dataset kkv233/unig2u_dataset"
    )
    parser.add_argument("--out", required=True, help="LMMS_EVAL_UNIFY_DATA_DIR to write")
    args = parser.parse_args(argv)
    for path in prepare(args.snapshot, args.out):
        print(path)
    return 0
