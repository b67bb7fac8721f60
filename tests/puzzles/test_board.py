"""Palette board reading shared by maze and sliding."""

from __future__ import annotations

import numpy as np
import pytest

from lmms_eval_unify.puzzles.board import nearest_palette_distance, nearest_palette_index


@pytest.mark.parametrize("distinct_levels", [3, 256])
def test_nearest_palette_per_distinct_colour_equals_per_pixel(distinct_levels):
    # the gathered per-colour results must be bit-identical to the direct per-pixel norm, min and argmin
    rng = np.random.default_rng(0)
    levels = rng.integers(0, distinct_levels, (40, 50, 3)) * (255 // max(1, distinct_levels - 1))
    pixels = levels.astype(np.uint8).astype(np.float32) / 255.0
    palette = [(31, 41, 55), (244, 239, 230), (37, 99, 235), (255, 255, 255)]
    colours = np.asarray(palette, dtype=np.float32) / 255.0
    direct = np.linalg.norm(pixels[:, :, None, :] - colours[None, None, :, :], axis=-1)
    assert np.array_equal(nearest_palette_distance(pixels, palette), direct.min(axis=-1))
    assert np.array_equal(nearest_palette_index(pixels, palette), direct.argmin(axis=-1))
    off_grid = pixels + np.float32(1e-4)  # not 8-bit levels: the per-pixel fallback
    direct = np.linalg.norm(off_grid[:, :, None, :] - colours[None, None, :, :], axis=-1)
    assert np.array_equal(nearest_palette_distance(off_grid, palette), direct.min(axis=-1))
    assert np.array_equal(nearest_palette_index(off_grid, palette), direct.argmin(axis=-1))
