"""Palette board reading shared by maze and sliding: the per-colour table equals the per-pixel rules."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from board_reference import board_corpus, reference_board, reference_fractions
from PIL import Image

from lmms_eval_unify.puzzles import maze, sliding
from lmms_eval_unify.puzzles.board import BOARD_MARGIN, PARSE_SIDE, BoardReader, colour_keys, reduced_size
from lmms_eval_unify.puzzles.maze import MazeDomain, generate_maze
from lmms_eval_unify.puzzles.sliding import SlidingDomain, generate_sliding

CASES = {
    "maze": (maze.READER, MazeDomain(), generate_maze),
    "sliding": (sliding.READER, SlidingDomain(), generate_sliding),
}


def _fresh(reader: BoardReader) -> BoardReader:
    """A reader with the same rules and an empty table."""
    return BoardReader(list(reader.content), list(reader.background), list(reader.labels), reader.min_fraction)


@pytest.mark.parametrize("name", CASES)
def test_per_colour_decision_equals_per_pixel_float32_rules(name):
    reader = CASES[name][0]
    rng = np.random.default_rng(0)
    near_palette = np.asarray(reader.content + reader.background + reader.labels)[:, None, :] + rng.integers(
        -3, 4, (1, 200, 3)
    )
    rgb = np.concatenate([rng.integers(0, 256, (20_000, 3)), near_palette.reshape(-1, 3).clip(0, 255)])
    pixels = rgb.astype(np.uint8)[None].astype(np.float32) / 255.0  # one image row of all the colours
    keys = colour_keys(Image.fromarray(rgb.astype(np.uint8)[None]))[0]
    codes = reader.decide(keys)

    def distances(palette):
        colours = np.asarray(palette, dtype=np.float32) / 255.0
        return np.linalg.norm(pixels[:, :, None, :] - colours[None, None, :, :], axis=-1)[0]

    board = distances(reader.content).min(-1) + BOARD_MARGIN < distances(reader.background).min(-1)
    assert np.array_equal(codes & 1, board)
    assert np.array_equal(codes >> 1, distances(reader.labels).argmin(-1))


def test_colour_keys_pack_rgb_whatever_the_source_mode():
    rgba = Image.new("RGBA", (2, 1))
    rgba.putpixel((0, 0), (1, 2, 3, 0))
    rgba.putpixel((1, 0), (255, 0, 128, 255))
    expected = [[1 | 2 << 8 | 3 << 16, 255 | 128 << 16]]
    assert colour_keys(rgba.convert("RGB")).tolist() == expected
    resized = rgba.convert("RGB").resize((4, 2), Image.Resampling.NEAREST)
    assert colour_keys(resized).tolist() == [[k for k in expected[0] for _ in range(2)]] * 2


def test_reduced_size_is_the_thumbnail_size():
    rng = np.random.default_rng(2)
    sizes = [(257, 1), (1, 257), (433, 432), (5000, 3), *rng.integers(1, 3000, (400, 2)).tolist()]
    for width, height in sizes:
        if max(width, height) <= PARSE_SIDE:
            continue
        thumbnail = Image.new("L", (width, height))
        thumbnail.thumbnail((PARSE_SIDE, PARSE_SIDE), Image.Resampling.NEAREST)
        assert reduced_size(width, height) == thumbnail.size, (width, height)


@pytest.mark.parametrize("name", CASES)
def test_table_fills_once_and_concurrent_readers_agree(name):
    reader = _fresh(CASES[name][0])
    keys = np.random.default_rng(1).integers(0, 1 << 24, (64, 64)).astype(np.uint32)
    expected = reader.decide(keys.ravel()).reshape(keys.shape)
    results = []
    threads = [threading.Thread(target=lambda: results.append(reader.codes(keys))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and all(np.array_equal(r, expected) for r in results)
    assert np.array_equal(reader.codes(keys), expected)  # now entirely from the table


@pytest.mark.heavy  # per-pixel reference over a corpus
@pytest.mark.parametrize("name", CASES)
def test_cell_fractions_bit_identical_to_per_pixel_reference_on_corpus(name):
    reader, domain, generate = CASES[name]
    narrow = 0
    for image in board_corpus(domain, generate, 120, seed=5):
        fast = _fresh(reader).cell_fractions(image, domain.size)
        board = reference_board(reader, image)
        if board is not None and min(board.shape[:2]) < domain.size:
            narrow += 1
            assert fast is None  # the reference crashed or read replicated pixels; the reader refuses
            continue
        expected = None if board is None else reference_fractions(reader, board, domain.size)
        assert (fast is None and expected is None) or np.array_equal(fast, expected)
    assert narrow > 0  # the corpus exercises boards narrower than the grid


@pytest.mark.parametrize("name", CASES)
def test_one_dark_pixel_is_no_board_instead_of_a_crash(name):
    reader, domain, _ = CASES[name]
    image = Image.new("RGB", (100, 100), "white")
    image.putpixel((0, 0), reader.content[0])
    assert reader.cell_fractions(image, domain.size) is None
    assert domain.parse_grid(image) is None
    for empty in [(300, 0), (0, 300), (0, 0)]:  # no division by a zero side
        assert domain.parse_grid(Image.new("RGB", empty)) is None
