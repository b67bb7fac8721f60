"""Offline UniG2U fixture data with the published files' names and fields.

``generate(out_dir, n, seed)`` writes ``<out>/unig2u/<published relative path>`` for every implemented
subtask (the Hub repository's own layout, read by ``UniG2UTask`` under ``LMMS_EVAL_UNIFY_DATA_DIR``):
matplotlib bar charts with known values (ChartQA), grid maps with known displacements / arrival times (VSP),
scikit-image sample photos for the multiple-choice and IllusionBench items (the question asks which photo
is shown, so the answer is known), mazes, sliding puzzles and jigsaw items from the shared puzzle generators
of ``lmms_eval_unify.puzzles`` (jigsaw: the published UniG2U fields only), and for the judged subtasks drawn
figures with exact answers: triangles (Geometry3K), cuboids (AuxSolidMath), a mirror and a pulled block
(PhyX, image as a base64 string like the published files) and BabyVision choice / counting items in one
file with both ``type`` values.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable
from pathlib import Path

import datasets
from PIL import Image, ImageDraw

from lmms_eval_unify.benchmarks.unig2u.prompts import SCENES, SHAPES
from lmms_eval_unify.benchmarks.unig2u.spec import (
    BABYVISION_FILE,
    ILLUSION_SUBSETS,
    MMSI,
    MMSI_FILES,
    REALUNIFY_FILES,
    SUBTASKS,
    VISUAL_PUZZLES,
)
from lmms_eval_unify.data.fixtures import (
    FileListener,
    Written,
    png_cell,
    sample_photo,
    write_dataset,
    write_parquet,
)
from lmms_eval_unify.puzzles.dataset import write_puzzle_set
from lmms_eval_unify.puzzles.jigsaw import generate_jigsaw_items

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "camera", "coins")


def photo(name: str, size: int = 128) -> Image.Image:
    """A scikit-image sample photo (RGB, ``size``²)."""
    return sample_photo(name, size)


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
        prompt = f"{question}\n{_options_text(names)}\nAnswer with the option's letter from the given choices."
        rows.append({"image": png_cell(photo(shown)), "question": question, "evaluation_prompt": prompt,
                     "answer": answer, "task_type": task_type, "index": i})  # fmt: skip
    return rows


def mmsi_rows(n: int, rng: random.Random, question_type: str) -> list[dict]:
    rows = []
    for i in range(n):
        shown, names, answer = _which_photo(rng)
        other = rng.choice([p for p in PHOTOS if p != shown])
        options = ", ".join(f"{label}: {name}" for label, name in zip("ABCD", names, strict=True))
        question = f"Which sample photo is shown in the second image?\nOptions: {options}"
        rows.append({"images": [png_cell(photo(other)), png_cell(photo(shown))], "question": question, "answer": answer,
                     "question_type": question_type, "id": i})  # fmt: skip
    return rows


def visual_puzzles_rows(n: int, rng: random.Random, category: str) -> list[dict]:
    rows = []
    for i in range(n):
        shown, names, answer = _which_photo(rng)
        rows.append({"image": png_cell(photo(shown)), "question": "Which sample photo is this?", "options": names,
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
        rows.append({"image_name": name, "image": {**png_cell(image), "path": name}})
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
    figure.canvas.draw()
    rgba = figure.canvas.buffer_rgba()  # type: ignore[attr-defined]  # an Agg canvas method
    image = Image.frombuffer("RGBA", figure.canvas.get_width_height(), rgba).convert("RGB")
    plt.close(figure)
    return image


def chartqa_rows(n: int, rng: random.Random) -> list[dict]:
    rows = []
    for i in range(n):
        labels = rng.sample(list(string.ascii_uppercase), 4)
        values = [rng.randint(1, 99) for _ in labels]
        k = rng.randrange(4)
        rows.append({"image": png_cell(chart(labels, values)), "question": f"What is the value of product {labels[k]}?",
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
        gmap.append(
            {
                "example_image": png_cell(example),
                "test_image": png_cell(test),
                "gt_north_south": start[0] - goal[0],
                "gt_east_west": goal[1] - start[1],
                "test_id": i,
            }
        )
        car_dist, person_dist = rng.randint(1, 4), rng.randint(1, 4)
        car_speed, person_speed = rng.choice([0.5, 1.0, 2.0]), rng.choice([0.5, 1.0])
        test = grid_map(
            6, {(2, 2 + car_dist): ("C", "black"), (2 + person_dist, 2): ("P", "green"), (2, 2): ("G", "red")}
        )
        collision.append(
            {
                "icon_image": png_cell(
                    grid_map(3, {(1, 0): ("C", "black"), (1, 1): ("P", "green"), (1, 2): ("G", "red")})
                ),
                "example_image": png_cell(example),
                "test_image": png_cell(test),
                "car_dir": "left",
                "car_speed": car_speed,
                "person_dir": "up",
                "person_speed": person_speed,
                "gt_car": car_dist / car_speed,
                "gt_person": person_dist / person_speed,
                "test_id": i,
            }
        )
    return gmap, collision


def _canvas(size: tuple[int, int] = (256, 192)) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("RGB", size, "white")
    return image, ImageDraw.Draw(image)


def geometry3k_rows(n: int, rng: random.Random) -> list[dict]:
    """Triangles with two angles given; x = the third angle (20..100)."""
    rows = []
    for _ in range(n):
        a, b = rng.randint(40, 80), rng.randint(40, 80)
        image, draw = _canvas()
        draw.polygon([(30, 160), (226, 160), (110, 30)], outline="black")
        for xy, label in (((40, 140), f"{a}°"), ((190, 140), f"{b}°"), ((102, 45), "x°")):
            draw.text(xy, label, fill="black")
        rows.append({"images": [png_cell(image)], "problem": "<image>Find x.", "answer": str(180 - a - b)})
    return rows


def auxsolidmath_rows(n: int, rng: random.Random) -> list[dict]:
    """Cuboids with edge lengths 1..5; the answer is the squared space diagonal (3..75)."""
    rows = []
    for _ in range(n):
        a, b, c = (rng.randint(1, 5) for _ in range(3))
        image, draw = _canvas()
        front, back = (
            [(40, 80), (160, 80), (160, 170), (40, 170)],
            [(90, 30), (210, 30), (210, 120), (90, 120)],
        )
        draw.polygon(front, outline="black")
        draw.polygon(back, outline="gray")
        for p, q in zip(front, back, strict=True):
            draw.line([p, q], fill="black")
        for (x, y), label in zip(front + back, "EFGHABCD", strict=True):  # ABCD on top, EFGH below
            draw.text((x - 10, y - 10), label, fill="blue")
        question = (
            f"In the cuboid ABCD-EFGH, AB = {a}, AD = {b} and AE = {c}. Find the square of the length of the "
            "space diagonal AG."
        )
        rows.append(
            {
                "original_image": png_cell(image),
                "question": question,
                "answer": str(a * a + b * b + c * c),
                "auxiliary_line_description": "Connect AC and AG; AC is the diagonal of the base ABCD.",
            }
        )
    return rows


def _base64_png(image: Image.Image) -> str:
    return base64.b64encode(png_cell(image)["bytes"]).decode("ascii")


def phyx_rows(n: int, rng: random.Random, category: str) -> list[dict]:
    """Optics: angle of reflection = angle of incidence (10..80); mechanics: a = F / m (1..10)."""
    rows = []
    for i in range(n):
        image, draw = _canvas()
        if category == "Optics":
            angle = rng.randint(10, 80)
            draw.line([(20, 160), (236, 160)], fill="black", width=3)
            draw.line([(128, 160), (60, 40)], fill="red")
            draw.text((70, 100), f"{angle}°", fill="black")
            question = (
                f"A light ray strikes a plane mirror with an angle of incidence of {angle}°. What is the angle of "
                "reflection in degrees?"
            )
            answer = angle
        else:
            mass, answer = rng.randint(1, 5), rng.randint(1, 10)
            draw.rectangle([(80, 100), (140, 160)], outline="black")
            draw.line([(140, 130), (220, 130)], fill="red", width=2)
            draw.text((90, 120), f"{mass} kg", fill="black")
            draw.text((180, 110), f"{mass * answer} N", fill="red")
            question = (
                f"A {mass} kg block on a frictionless horizontal surface is pulled by a horizontal force of "
                f"{mass * answer} N. What is its acceleration in m/s^2?"
            )
        rows.append({"image": _base64_png(image), "question": question, "answer": str(answer), "index": i,
                     "category": category})  # fmt: skip
    return rows


BABYVISION_TYPES = {"Fine-grained Discrimination": "Find the same", "Visual Tracking": "Count the dots"}


def babyvision_rows(n: int, rng: random.Random) -> list[dict]:
    """``n`` items of each BabyVision type, alternating choice items (which photo) and blank items (how
    many red dots, 1..9)."""
    rows: list[dict] = []
    for doc_type, subtype in BABYVISION_TYPES.items():
        for i in range(n):
            row = {"type": doc_type, "subtype": subtype, "taskId": len(rows), "options": None, "choiceAns": None,
                   "blankAns": None}  # fmt: skip
            if i % 2 == 0:
                shown, names, answer = _which_photo(rng)
                row |= {"image": photo(shown), "question": "Which scikit-image sample photo is shown?",
                        "ansType": "choice", "options": names, "choiceAns": "ABCD".index(answer)}  # fmt: skip
            else:
                count = rng.randint(1, 9)
                image, draw = _canvas()
                for k in range(count):
                    x, y = 20 + 25 * k, 40 + (k % 3) * 50
                    draw.ellipse([(x, y), (x + 14, y + 14)], fill="red")
                row |= {"image": image, "question": "How many red dots are in the image?", "ansType": "blank",
                        "blankAns": str(count)}  # fmt: skip
            rows.append(row)
    return rows


def _write_babyvision(rows: list[dict], path: Path, root: Path) -> Path:
    """BabyVision rows with explicit features (``options`` / ``choiceAns`` / ``blankAns`` are null in half)."""
    features = datasets.Features(
        {"type": datasets.Value("string"), "subtype": datasets.Value("string"), "taskId": datasets.Value("int64"),
         "options": datasets.Sequence(datasets.Value("string")), "choiceAns": datasets.Value("int64"),
         "blankAns": datasets.Value("string"), "image": datasets.Image(), "question": datasets.Value("string"),
         "ansType": datasets.Value("string")}
    )  # fmt: skip
    encoded = [{**row, "image": png_cell(row["image"])} for row in rows]
    return write_dataset(datasets.Dataset.from_list(encoded, features=features), path, root)


def generate(out_dir: str | Path, n: int, seed: int = 0, on_file: FileListener | None = None) -> list[Path]:
    """``n`` items of every implemented subtask (VSP: ``n`` Google-map + ``n`` collision items; BabyVision:
    ``n`` of each type in its one file); ``on_file`` hears each file as it is written."""
    root = Path(out_dir) / "unig2u"
    rng = random.Random(f"unig2u/{seed}")
    image = ("image",)
    written = Written(on_file)
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
        ("geometry3k/geometry3k_train_first100.parquet", lambda: geometry3k_rows(n, rng),
         {"image_lists": ("images",)}),
        ("auxsolidmath/auxsolidmath_test_easy_first100.parquet", lambda: auxsolidmath_rows(n, rng),
         {"images": ("original_image",)}),
        ("phyx/phyx_optics100.parquet", lambda: phyx_rows(n, rng, "Optics"), {}),
        ("phyx/phyx_mechanics100.parquet", lambda: phyx_rows(n, rng, "Mechanics"), {}),
    ]  # fmt: skip
    for relative, rows, kinds in writers:
        written.add(write_parquet(rows(), root / relative, **kinds, root=root))
    written.add(_write_babyvision(babyvision_rows(n, rng), root / BABYVISION_FILE, root))
    gmap, collision = vsp_rows(n, rng)
    written.add(write_parquet(gmap, root / "vsp/vsp_google_map_50.parquet", ("example_image", "test_image"), root=root))
    written.add(
        write_parquet(
            collision, root / "vsp/vsp_collision_50.parquet", ("icon_image", "example_image", "test_image"), root=root
        )
    )
    jigsaw = [{k: item[k] for k in ("ref_image", "cand0_image", "cand1_image", "label")}
              for item in generate_jigsaw_items(n, seed)]  # fmt: skip
    written.add(
        write_parquet(
            [{**row, **{k: png_cell(row[k]) for k in ("ref_image", "cand0_image", "cand1_image")}} for row in jigsaw],
            root / SUBTASKS["jigsaw"].files[0],
            ("ref_image", "cand0_image", "cand1_image"),
            root=root,
        )
    )
    for name in ("maze", "sliding"):  # the shared puzzle generator under the UniG2U file names
        written.add(write_puzzle_set(name, n, seed, root / SUBTASKS[name].files[0], root))
    return written.paths
