"""The released maze/sliding parsers read through per-colour tables (``official.py``) give bit-identical results
to the per-pixel computation they replaced (``tests/released_reference.py``), per image and per sample."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import numpy as np
import pytest
import released_reference as reference
from board_reference import board_corpus
from PIL import Image

from lmms_eval_unify.benchmarks.uni_mmmu import official
from lmms_eval_unify.generation.media import MediaStore
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.puzzles import DOMAINS, maze, sliding
from lmms_eval_unify.puzzles.board import colour_keys
from lmms_eval_unify.puzzles.domain import simulate
from lmms_eval_unify.puzzles.maze import generate_maze
from lmms_eval_unify.puzzles.sliding import SlidingDomain, generate_sliding

GENERATORS: dict[str, Callable[..., Any]] = {"maze": generate_maze, "sliding": generate_sliding}
PARSERS: dict[str, tuple[Callable, Callable]] = {
    "maze": (official.released_maze_parse, reference.maze_parse),
    "sliding": (official.released_sliding_grid, reference.sliding_grid),
}


def _page(image: Image.Image, width: int, height: int, colour: tuple[int, int, int], at_end: bool) -> Image.Image:
    page = Image.new("RGB", (width, height), colour)
    page.paste(image, (width - image.width, height - image.height) if at_end else (0, 0))
    return page


def _released_forms(image: Image.Image, rng: random.Random) -> Iterator[Image.Image]:
    """Forms the released crop treats specially: landscape and portrait pages (the maze's swapped clamp),
    coloured margins, scaling, palette / grey / transparent modes, random colours near the palette."""
    w, h = image.size
    yield _page(image, 2 * w, h, (255, 255, 255), at_end=rng.random() < 0.5)
    yield _page(image, w, 2 * h, (255, 255, 255), at_end=rng.random() < 0.5)
    yield _page(image, w + 60, h + 60, rng.choice([(128, 128, 128), (0, 0, 0)]), at_end=False)
    yield image.resize((round(w * 2.4), round(h * 2.4)), Image.Resampling.NEAREST)
    yield image.resize((max(1, w // 8), max(1, h // 8)), Image.Resampling.NEAREST)
    yield image.quantize(16)
    yield image.convert("L")
    rgba = np.asarray(image.convert("RGBA")).copy()
    rgba[(rgba[..., :3] == 255).all(axis=-1)] = 0
    yield Image.fromarray(rgba, "RGBA")
    jitter = np.random.default_rng(rng.randrange(1 << 30)).integers(-40, 41, (h, w, 3))
    yield Image.fromarray(np.clip(np.asarray(image, dtype=np.int16) + jitter, 0, 255).astype(np.uint8))


def _corpus(puzzle: str, count: int, seed: int) -> list[Image.Image]:
    domain, rng = DOMAINS[puzzle], random.Random(seed)
    images = board_corpus(domain, GENERATORS[puzzle], count, seed=seed)
    for _ in range(3):
        state, _moves = GENERATORS[puzzle](domain, rng)
        images += _released_forms(domain.render(state), rng)
    tiny = SlidingDomain(cell_px=4, margin_px=3) if puzzle == "sliding" else maze.MazeDomain(cell_px=3, margin_px=2)
    images.append(tiny.render(GENERATORS[puzzle](domain, rng)[0]))
    images += [Image.new("RGB", size) for size in [(300, 0), (0, 300), (0, 0)]]
    return images


@pytest.mark.parametrize("puzzle", PARSERS)
def test_per_colour_codes_equal_the_per_pixel_released_decisions(puzzle):
    """Every decision (board mask, nearest label) on random colours and colours near the palette."""
    reader = official.MAZE_READER if puzzle == "maze" else official.SLIDING_READER
    rng = np.random.default_rng(3)
    palette = np.asarray(reader.content + reader.background + reader.labels)
    near = (palette[:, None, :] + rng.integers(-4, 5, (1, 300, 3))).reshape(-1, 3).clip(0, 255)
    rgb = np.concatenate([rng.integers(0, 256, (40_000, 3)), near]).astype(np.uint8)[None]
    image = Image.fromarray(rgb)
    pixels = reference.image_to_array(image)
    if puzzle == "maze":
        content = reference.nearest_palette_distance(pixels, [maze.WALL, maze.START, maze.GOAL, maze.PATH])
        background = reference.nearest_palette_distance(pixels, [maze.WHITE, maze.FLOOR])
        labels = reference.nearest_palette_index(pixels, [maze.FLOOR, maze.WALL, maze.START, maze.GOAL])
    else:
        content = reference.nearest_palette_distance(pixels, sliding.PALETTE)
        background = np.linalg.norm(pixels - np.ones(3), axis=-1)
        labels = reference.nearest_palette_index(pixels, sliding.PALETTE)
    codes = official.released_codes(image, reader)
    assert np.array_equal(codes >> 1, labels)
    assert np.array_equal((codes & 1) == 1, content + 0.01 < background)
    assert np.array_equal(reader.decide(colour_keys(image).ravel()), codes.ravel())  # the table is the rule


@pytest.mark.heavy  # the per-pixel reference over a corpus
@pytest.mark.filterwarnings("ignore:Mean of empty slice")  # the reference on the empty images
@pytest.mark.parametrize("puzzle", PARSERS)
def test_released_parse_bit_identical_to_per_pixel_reference_on_corpus(puzzle):
    fast, slow = PARSERS[puzzle]
    images = _corpus(puzzle, 90, seed=11)
    assert len(images) > 110
    for index, image in enumerate(images):
        with np.errstate(invalid="ignore"):  # the reference's 0 / 0 on the empty images
            expected = slow(image)
        assert fast(image) == expected, (puzzle, index, image.mode, image.size)


@pytest.mark.heavy
@pytest.mark.parametrize("puzzle", PARSERS)
def test_released_sample_scores_unchanged_on_perturbed_outputs(puzzle, tmp_path):
    """``score_released`` per sample with the table parsers equals it with the per-pixel ones, on outputs
    that are right, wrong, shortened and perturbed."""
    domain, rng = DOMAINS[puzzle], random.Random(f"samples/{puzzle}")
    store = MediaStore(tmp_path)
    cases = []
    for index in range(8):
        state, moves = GENERATORS[puzzle](domain, rng)
        steps = [domain.render(s) for s in simulate(domain, state, moves)]
        forms = list(_released_forms(steps[-1], rng))
        outputs = [rng.choice([image, rng.choice(forms)]) for image in steps][: rng.randint(1, len(steps))]
        paths = [store.save_image("t", index, f"step_{k}", image) for k, image in enumerate(outputs)]
        text = f"<ANSWER_JSON>{json.dumps(list(moves))}</ANSWER_JSON>"
        record = UnifiedOutput("image_sequence_then_answer", text=text, images=paths, root=str(store.root)).to_json()
        doc = {domain.answer_field: json.dumps(list(moves))}
        cases.append((doc, record, domain.render(state), steps))
    fast = [official.score_released(puzzle, doc, record, initial, steps) for doc, record, initial, steps in cases]
    with (
        mock.patch.object(official, "released_maze_parse", reference.maze_parse),
        mock.patch.object(official, "released_sliding_grid", reference.sliding_grid),
    ):
        slow = [official.score_released(puzzle, doc, record, initial, steps) for doc, record, initial, steps in cases]
    assert fast == slow
    assert {s["img_step_acc"] for s in fast} - {None, 1.0}  # the perturbed outputs are not all read as right
