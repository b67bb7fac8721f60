"""Figure helpers: rank correlation matrices and PNG/SVG/PDF output."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image
from scipy import stats

from lmms_eval_unify.reports.plots import average_ranks, heatmap, scatter, spearman_matrix


def test_average_ranks_share_ties():
    np.testing.assert_array_equal(average_ranks(np.array([3.0, 1.0, 3.0, 2.0])), stats.rankdata([3, 1, 3, 2]))


def test_spearman_matrix_matches_scipy_with_ties_and_missing_values():
    rng = np.random.default_rng(0)
    vectors = rng.integers(0, 5, size=(20, 4)).astype(float)
    full = spearman_matrix(vectors)
    assert full[0, 3] == pytest.approx(stats.spearmanr(vectors[:, 0], vectors[:, 3]).statistic)
    vectors[4, 1] = np.nan
    ok = np.isfinite(vectors[:, 1])
    partial = spearman_matrix(vectors)
    assert partial[1, 2] == pytest.approx(stats.spearmanr(vectors[ok, 1], vectors[ok, 2]).statistic)
    assert partial[0, 3] == pytest.approx(full[0, 3])


def test_figures_are_300_dpi_png_svg_and_pdf(tmp_path):
    figure = heatmap(np.array([[0.5, -1.0], [np.nan, 0.2]]), ["a", "b"], ["x", "y"], "t")
    with Image.open(io.BytesIO(figure.png)) as png:
        assert png.format == "PNG" and png.info["dpi"] == pytest.approx((300, 300), abs=0.1)
        assert png.width == 5 * 300  # figsize (5.0, 3.0) for two columns, in pixels at 300 dpi
    assert figure.svg.lstrip().startswith(b"<?xml") and b"<svg" in figure.svg
    assert figure.pdf.startswith(b"%PDF")
    points = scatter({"m": (40.0, 60.0), "no-y": (30.0, None)}, "x", "y", "t")
    points.write(tmp_path / "scatter")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scatter.pdf", "scatter.png", "scatter.svg"]
    assert (tmp_path / "scatter.png").read_bytes() == points.png
    assert scatter({"no-y": (30.0, None)}, "x", "y", "t") is None
