"""Uni-MMMU maze/sliding boards: our default (robust) parser vs the released one, per image and per sample.

Usage: ``python bench/ummmu_parser_parity.py [--n 30] [--seed 0] [--released PATH/eval_ummmu.py] [--form NAME]...``.

Generated puzzles are rendered as the data does; a perfect model's step images are then shown in several
forms (standard, low resolution, on a larger page or with margins, rotated, upscaled, JPEG-compressed, noisy,
blurred, RGBA with alpha, palette, grayscale). Per form it reports how many step images each parser reads as
the true board, and per sample the image step accuracy (``img_step``) of the default task (robust parser,
replayed references) and of the ``official`` task (``lmms_eval_unify.benchmarks.uni_mmmu.official``). A
second table stores the true move names as given, padded with spaces or capitalised, and scores a perfect
answer (text and standard step images) with both tasks. With ``--released`` (the script of
``Vchitect/Uni-MMMU``, not part of this repo) the released parsers and rules run on the same files and the
per-image and per-sample agreement of our ``official`` reproduction with them is reported; without it only
our side runs. Results: docs/fidelity/uni_mmmu.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
from PIL import Image, ImageFilter

from lmms_eval_unify.benchmarks.uni_mmmu.official import (
    FLOOR,
    released_maze_parse,
    released_sliding_grid,
    score_released,
)
from lmms_eval_unify.generation.media import MediaStore
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.domain import simulate
from lmms_eval_unify.puzzles.maze import WHITE, generate_maze
from lmms_eval_unify.puzzles.scoring import score_move_sequence, sequence_accuracy, truth_grids
from lmms_eval_unify.puzzles.sliding import generate_sliding
from lmms_eval_unify.run.context import EXTRA_MEDIA_ROOTS_ENV


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


def _jpeg(quality: int) -> Callable[[Image.Image], Image.Image]:
    """What a reader gets back from the board saved as a JPEG file."""

    def encode_decode(image: Image.Image) -> Image.Image:
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=quality)
        return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")

    return encode_decode


def _noisy(sigma: float) -> Callable[[Image.Image], Image.Image]:
    """Gaussian pixel noise of standard deviation ``sigma`` (0-255 scale), clipped; one seeded stream per form."""
    generator = np.random.default_rng(0)

    def add_noise(image: Image.Image) -> Image.Image:
        pixels = np.asarray(image.convert("RGB"), dtype=np.float64)
        noisy = pixels + generator.normal(0.0, sigma, pixels.shape)
        return Image.fromarray(np.clip(np.rint(noisy), 0, 255).astype(np.uint8))

    return add_noise


def _blurred(radius: float) -> Callable[[Image.Image], Image.Image]:
    return lambda image: image.filter(ImageFilter.GaussianBlur(radius))


def _margin(fraction: float, colour: tuple[int, int, int]) -> Callable[[Image.Image], Image.Image]:
    """The board with a border of ``fraction`` of its size on every side, in ``colour``."""

    def add_margin(image: Image.Image) -> Image.Image:
        border = round(fraction * max(image.size))
        page = Image.new("RGB", (image.width + 2 * border, image.height + 2 * border), colour)
        page.paste(image, (border, border))
        return page

    return add_margin


def _half_transparent(image: Image.Image) -> Image.Image:
    """RGBA, every pixel at alpha 128 (the colours unchanged; readers that convert to RGB drop the alpha)."""
    rgba = image.convert("RGBA")
    rgba.putalpha(128)
    return rgba


def _white_transparent(image: Image.Image) -> Image.Image:
    """RGBA with the white page stored as transparent black (0, 0, 0, 0), as image generators often write it;
    readers that convert to RGB see black there."""
    pixels = np.asarray(image.convert("RGBA")).copy()
    pixels[(pixels[..., :3] == 255).all(axis=-1)] = 0
    return Image.fromarray(pixels, "RGBA")


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
    "rotated 3 deg": _rotated(3.0),
    "rotated 4 deg": _rotated(4.0),
    "JPEG q90": _jpeg(90),
    "JPEG q50": _jpeg(50),
    "JPEG q20": _jpeg(20),
    "noise sigma 5": _noisy(5.0),
    "noise sigma 10": _noisy(10.0),
    "noise sigma 20": _noisy(20.0),
    "blur r1 (gaussian)": _blurred(1.0),
    "blur r3 (gaussian)": _blurred(3.0),
    "RGBA alpha 50%": _half_transparent,
    "RGBA white -> transparent black": _white_transparent,
    "palette P (16 colours)": lambda image: image.quantize(16),
    "palette P (web, dithered)": lambda image: image.convert("P"),
    "grayscale L": lambda image: image.convert("L"),
    "white margin 25%": _margin(0.25, WHITE),
    "grey margin 10%": _margin(0.10, (128, 128, 128)),
    "black margin 10%": _margin(0.10, (0, 0, 0)),
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

    def text_step(self, puzzle: str, text: str, stored_truth: list[str]) -> float:
        """The released ``text_frame_acc``: the maze truth lower-cased, the sliding truth as stored."""
        evaluator = self.maze if puzzle == "maze" else self.sliding
        truth = [str(m).lower() for m in stored_truth] if puzzle == "maze" else stored_truth
        return evaluator._evaluate_text_moves(evaluator._parse_moves(text), truth)["text_frame_acc"]


def _official_maze_grid(image: Image.Image) -> tuple:
    return tuple(tuple("." if t == FLOOR else t for t in row) for row in released_maze_parse(image).grid)


def _record(outputs: list[Image.Image], store: MediaStore, sample: str, text: str = "") -> str:
    """A saved model output in our record format."""
    paths = [store.save_image("parity", sample, f"step_{i}", image) for i, image in enumerate(outputs)]
    return UnifiedOutput("image_sequence_then_answer", text=text, images=paths, root=str(store.root)).to_json()


def _items(puzzle: str, n: int, seed: int) -> list[tuple]:
    generate = generate_maze if puzzle == "maze" else generate_sliding
    rng = random.Random(f"parity/{puzzle}/{seed}")
    return [generate(DOMAINS[puzzle], rng) for _ in range(n)]


def measure(puzzle: str, n: int, seed: int, released: Released | None, folder: Path, forms: list[str]) -> list[dict]:
    """One row per form: parse success of both parsers, per-sample img_step of both tasks (and released)."""
    domain = DOMAINS[puzzle]
    items = _items(puzzle, n, seed)
    official_parse = _official_maze_grid if puzzle == "maze" else released_sliding_grid
    store = MediaStore(folder / "outputs")
    rows = []
    for form in forms:
        transform = FORMS[form]
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


MOVE_NAMES: dict[str, Callable[[str], str]] = {
    "as generated (lower case)": lambda move: move,
    "padded (' up ')": lambda move: f" {move} ",
    "capitalised ('Up')": lambda move: move.capitalize(),
}
"""How the data stores the true move names; the perfect answer always writes them lower case."""


def measure_move_names(puzzle: str, n: int, seed: int, released: Released | None, folder: Path) -> list[dict]:
    """One row per way of storing the true move names: text and image step accuracy of a perfect answer."""
    domain = DOMAINS[puzzle]
    store = MediaStore(folder / "names")
    items = _items(puzzle, n, seed)
    rows = []
    for names, stored_as in MOVE_NAMES.items():
        row = {"puzzle": puzzle, "names": names, "samples": n, "robust_text": 0.0, "official_text": 0.0,
               "robust_step": 0.0, "official_step": 0.0, "released_text_agree": 0,
               "released_step_agree": 0}  # fmt: skip
        for index, (state, moves) in enumerate(items):
            initial = domain.render(state)
            step_images = [domain.render(s) for s in simulate(domain, state, moves)]
            text = f"<ANSWER_JSON>{json.dumps(list(moves))}</ANSWER_JSON>"
            record = _record(step_images, store, f"{puzzle}_{index}_{len(rows)}", text)
            stored = [stored_as(m) for m in moves]
            doc = {domain.answer_field: json.dumps(stored)}
            robust = score_move_sequence(domain, doc, record, initial)
            official = score_released(puzzle, doc, record, initial, step_images)
            row["robust_text"] += robust["text_step_acc"] / len(items)
            row["official_text"] += official["text_step_acc"] / len(items)
            row["robust_step"] += robust["img_step_acc"] / len(items)
            row["official_step"] += official["img_step_acc"] / len(items)
            if released is not None:
                row["released_text_agree"] += released.text_step(puzzle, text, stored) == official["text_step_acc"]
                image_step = (
                    released.maze_img_step(initial, [m.lower() for m in stored], step_images)
                    if puzzle == "maze"
                    else released.sliding_img_step(step_images, step_images)
                )
                row["released_step_agree"] += image_step == official["img_step_acc"]
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=30, help="puzzles per kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--released", type=Path, help="path to the released eval_ummmu.py")
    parser.add_argument("--form", action="append", choices=list(FORMS), help="measure only this form (repeatable)")
    args = parser.parse_args(argv)
    forms = args.form or list(FORMS)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[EXTRA_MEDIA_ROOTS_ENV] = tmp  # the saved outputs are read back through the checked reader
        released = Released(_load_released(args.released), Path(tmp)) if args.released else None
        rows = [
            row
            for puzzle in ("maze", "sliding")
            for row in measure(puzzle, args.n, args.seed, released, Path(tmp), forms)
        ]
        name_rows = [
            row
            for puzzle in ("maze", "sliding")
            for row in measure_move_names(puzzle, args.n, args.seed, released, Path(tmp))
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
    header = "\n| puzzle | true move names stored | robust text_step | official text_step | robust img_step "
    header += "| official img_step |" + (" official = released (samples: text / image) |" if released else "")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for r in name_rows:
        line = (
            f"| {r['puzzle']} | {r['names']} | {100 * r['robust_text']:.1f} | {100 * r['official_text']:.1f} "
            f"| {100 * r['robust_step']:.1f} | {100 * r['official_step']:.1f} |"
        )
        if released:
            line += f" {r['released_text_agree']}/{r['samples']} / {r['released_step_agree']}/{r['samples']} |"
        print(line)
    print("\nA perfect answer (true moves in lower case, standard step images) against truth names stored as shown.")


if __name__ == "__main__":
    main()
