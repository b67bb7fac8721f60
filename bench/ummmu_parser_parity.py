"""Uni-MMMU maze/sliding boards: our default (robust) parser vs the released one, per image and per sample.

Usage: ``python bench/ummmu_parser_parity.py [--n 30] [--seed 0] [--released PATH/eval_ummmu.py]``.

Generated puzzles are rendered as the data does; a perfect model's step images are then shown in several
forms (standard, low resolution, on a landscape or portrait page, slightly rotated, upscaled). Per form it
reports how many step images each parser reads as the true board, and per sample the image step accuracy
(``img_step``) of the default task (robust parser, replayed references) and of the ``official`` task
(``lmms_eval_unify.benchmarks.uni_mmmu.official``). With ``--released`` (the script of ``Vchitect/Uni-MMMU``,
not part of this repo) the released parsers and image rules run on the same files and the per-image and
per-sample agreement of our ``official`` reproduction with them is reported. Results: docs/fidelity/uni_mmmu.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from PIL import Image

from lmms_eval_unify.benchmarks.uni_mmmu.official import (
    FLOOR,
    released_maze_parse,
    released_sliding_grid,
    score_released,
)
from lmms_eval_unify.generation.media import MediaStore
from lmms_eval_unify.integration.run_context import EXTRA_MEDIA_ROOTS_ENV
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.domain import simulate
from lmms_eval_unify.puzzles.maze import WHITE, generate_maze
from lmms_eval_unify.puzzles.scoring import sequence_accuracy, truth_grids
from lmms_eval_unify.puzzles.sliding import generate_sliding


def _page(image: Image.Image, width_factor: float, height_factor: float, where: str) -> Image.Image:
    """The board on a larger white page, centred or pushed to the end (right / bottom)."""
    page = Image.new("RGB", (round(image.width * width_factor), round(image.height * height_factor)), WHITE)
    x = (page.width - image.width) // 2 if where == "centre" else page.width - image.width
    y = (page.height - image.height) // 2 if where == "centre" else page.height - image.height
    page.paste(image, (x, y))
    return page


def _scaled(factor: float, resample: Image.Resampling) -> Callable[[Image.Image], Image.Image]:
    return lambda image: image.resize((round(image.width * factor), round(image.height * factor)), resample)


def _rotated(degrees: float) -> Callable[[Image.Image], Image.Image]:
    return lambda image: image.rotate(degrees, resample=Image.Resampling.BILINEAR, fillcolor=WHITE)


FORMS: dict[str, Callable[[Image.Image], Image.Image]] = {
    "standard": lambda image: image,
    "upscaled x2.4 (nearest)": _scaled(2.4, Image.Resampling.NEAREST),
    "low-res 1/4 (bilinear)": _scaled(0.25, Image.Resampling.BILINEAR),
    "low-res 1/8 (nearest)": _scaled(0.125, Image.Resampling.NEAREST),
    "landscape page, centred": lambda image: _page(image, 2.0, 1.0, "centre"),
    "landscape page, right": lambda image: _page(image, 2.0, 1.0, "end"),
    "portrait page, bottom": lambda image: _page(image, 1.0, 2.0, "end"),
    "rotated 1 deg": _rotated(1.0),
    "rotated 2 deg": _rotated(2.0),
    "rotated 4 deg": _rotated(4.0),
}


def _load_released(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("released_eval_ummmu", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


class Released:
    """The released parsers and image rules, run on image files."""

    def __init__(self, module: ModuleType, folder: Path) -> None:
        self.utils, self.folder, self.count = module.UtilityHelpers, folder, 0
        self.maze = module.MazeEvaluator.__new__(module.MazeEvaluator)
        self.sliding = module.SlidingPuzzleEvaluator.__new__(module.SlidingPuzzleEvaluator)

    def _file(self, image: Image.Image) -> str:
        self.count += 1
        path = self.folder / f"{self.count}.png"
        image.save(path)
        return str(path)

    def maze_parse(self, image: Image.Image) -> dict:
        return self.utils.parse_maze_image(self._file(image), grid_h=6, grid_w=6, tolerance=0.75, sg_factor=0.5)

    def sliding_parse(self, image: Image.Image) -> dict:
        return self.utils.parse_sliding_puzzle_image(
            self._file(image), grid_h=3, grid_w=3, num_categories=9, tolerance=0.80
        )

    def maze_img_step(self, initial: Image.Image, moves: list[str], outputs: list[Image.Image]) -> float | None:
        """``MazeEvaluator.evaluate`` for one candidate: ``None`` where it skips the case."""
        step0 = self.maze_parse(initial)
        if step0.get("grid") is None or step0.get("start") is None:
            return None
        walls = [[c == "#" for c in row] for row in step0["grid"]]
        expected = self.maze._simulate_expected_grids(step0["start"], step0.get("goal"), walls, moves)
        predicted = [self.maze_parse(image).get("grid") for image in outputs]
        return self.maze._evaluate_image_grids(predicted, expected, walls)["img_frame_acc"]

    def sliding_img_step(self, step_images: list[Image.Image], outputs: list[Image.Image]) -> float:
        truth = [self.sliding_parse(image)["ascii"] for image in step_images]
        predicted = [self.sliding_parse(image)["ascii"] for image in outputs]
        return self.sliding._evaluate_image_ascii(predicted, truth)["img_frame_acc"]


def _official_maze_grid(image: Image.Image) -> tuple:
    return tuple(tuple("." if t == FLOOR else t for t in row) for row in released_maze_parse(image).grid)


def _record(outputs: list[Image.Image], store: MediaStore, sample: str) -> str:
    """A saved model output in our record format (only the images matter here)."""
    paths = [store.save_image("parity", sample, f"step_{i}", image) for i, image in enumerate(outputs)]
    return UnifiedOutput("image_sequence_then_answer", images=paths, root=str(store.root)).to_json()


def measure(puzzle: str, n: int, seed: int, released: Released | None, folder: Path) -> list[dict]:
    """One row per form: parse success of both parsers, per-sample img_step of both tasks (and released)."""
    domain = DOMAINS[puzzle]
    generate = generate_maze if puzzle == "maze" else generate_sliding
    rng = random.Random(f"parity/{puzzle}/{seed}")
    items = [generate(domain, rng) for _ in range(n)]
    official_parse = _official_maze_grid if puzzle == "maze" else released_sliding_grid
    store = MediaStore(folder / "outputs")
    rows = []
    for form, transform in FORMS.items():
        row = {"puzzle": puzzle, "form": form, "images": 0, "robust_reads": 0, "official_reads": 0,
               "released_agree": 0, "samples": n, "robust_step": 0.0, "official_step": 0.0, "differ": 0,
               "max_gap": 0.0, "official_skipped": 0, "released_step_agree": 0, "cpu_s": 0.0}  # fmt: skip
        started = time.process_time()
        for index, (state, moves) in enumerate(items):
            initial = domain.render(state)
            states = simulate(domain, state, moves)
            step_images = [domain.render(s) for s in states]
            outputs = [transform(image) for image in step_images]
            for after, image in zip(states, outputs, strict=True):
                truth = domain.grid_of(after)
                ours_official = official_parse(image)
                row["images"] += 1
                row["robust_reads"] += domain.parse_grid(image) == truth
                row["official_reads"] += ours_official == truth
                if released is not None:
                    parsed = (released.maze_parse if puzzle == "maze" else released.sliding_parse)(image)
                    grid = tuple(tuple("." if t == FLOOR else t for t in r) for r in parsed["grid"])
                    row["released_agree"] += grid == ours_official
            robust = sequence_accuracy([domain.parse_grid(i) for i in outputs], truth_grids(domain, initial, moves))[1]
            record = _record(outputs, store, f"{puzzle}_{form}_{index}".replace(" ", "_"))
            doc = {domain.answer_field: json.dumps(list(moves))}
            official = score_released(puzzle, doc, record, initial, step_images)["img_step_acc"]
            if released is not None:
                reference = (
                    released.maze_img_step(initial, list(moves), outputs)
                    if puzzle == "maze"
                    else released.sliding_img_step(step_images, outputs)
                )
                row["released_step_agree"] += reference == official
            row["robust_step"] += robust / n
            if official is None:  # the released evaluator skips the case
                row["official_skipped"] += 1
                continue
            row["official_step"] += official
            row["differ"] += robust != official
            row["max_gap"] = max(row["max_gap"], robust - official)
        row["official_step"] /= max(1, n - row["official_skipped"])  # skipped cases are not in the mean
        row["cpu_s"] = time.process_time() - started
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=30, help="puzzles per kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--released", type=Path, help="path to the released eval_ummmu.py")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[EXTRA_MEDIA_ROOTS_ENV] = tmp  # the saved outputs are read back through the checked reader
        released = Released(_load_released(args.released), Path(tmp)) if args.released else None
        rows = [
            row for puzzle in ("maze", "sliding") for row in measure(puzzle, args.n, args.seed, released, Path(tmp))
        ]
    header = (
        "| puzzle | form | robust reads | official reads | robust img_step | official img_step "
        "| samples differ | max gap |"
    )
    header += " official = released (images / samples) |" if released else ""
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for r in rows:
        scored = r["samples"] - r["official_skipped"]
        skipped = f" ({r['official_skipped']} skipped)" if r["official_skipped"] else ""
        line = (
            f"| {r['puzzle']} | {r['form']} | {r['robust_reads']}/{r['images']} | {r['official_reads']}/{r['images']} "
            f"| {100 * r['robust_step']:.1f} | {100 * r['official_step']:.1f}"
            f"{skipped} "
            f"| {r['differ']}/{scored} | {100 * r['max_gap']:.0f} |"
        )
        if released:
            line += f" {r['released_agree']}/{r['images']} / {r['released_step_agree']}/{r['samples']} |"
        print(line)
    print(f"\nn = {args.n} per puzzle, seed {args.seed}; official img_step is the mean over the cases the released")
    print("evaluator does not skip; samples differ / max gap (robust - official, points) over those cases.")


if __name__ == "__main__":
    main()
