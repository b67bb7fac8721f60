"""Uni-MMMU's figures in `lmms-eval-unify leaderboard`: bounded pages of every model, its 15 series told apart."""

from __future__ import annotations

import numpy as np
import pytest
from figure_checks import assert_every_figure_bounded, bar_labels, caption, leaderboard_figures, many_runs, shown_labels


@pytest.mark.parametrize("n_models", [6, pytest.param(200, marks=pytest.mark.heavy)])
def test_figures_show_every_row_within_bounds_and_tell_the_fifteen_series_apart(tmp_path, monkeypatch, n_models):
    """Table 2's 15 columns were drawn on 10 colours: each series now has its own (colour, hatch)."""
    root, _ = many_runs(tmp_path, n_models, ["uni_mmmu"])
    out = tmp_path / "b"
    figures = leaderboard_figures(monkeypatch, [root, "--benchmark", "uni_mmmu", "--bootstrap", 0, "-o", out])
    assert_every_figure_bounded(figures)
    assert bar_labels(figures, "Uni-MMMU scores per model") == shown_labels(out / "uni_mmmu_table2.csv")
    first = next(f for f in figures if caption(f).startswith("Uni-MMMU scores per model"))
    legend = first.legends[0]
    series = [text.get_text() for text in legend.get_texts()][: len(legend.get_patches())]
    assert len(series) == 15
    bars = first.axes[0].collections[: len(series)]
    styles = {(tuple(np.round(c.get_facecolor()[0], 3)), c.get_hatch() or "") for c in bars}
    assert len(styles) == len(series)
