"""GapEval's tables in `lmms-eval-unify leaderboard`: the Gap fit (run in a child process, --gap-variant),
its failure, and its convergence per cell."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from figure_checks import assert_every_figure_bounded, bar_labels, caption, leaderboard_figures, many_runs, shown_labels
from leaderboard_runs import read_csv, run, write_runs

from lmms_eval_unify.benchmarks.gapeval import paper as ge
from lmms_eval_unify.benchmarks.gapeval.leaderboard import gap_not_converged


@pytest.fixture
def runs(tmp_path) -> tuple[Path, Path]:
    """A base VLM (no image answer right) and a unified model, on GapEval."""
    return write_runs(tmp_path, ["gapeval"])


@pytest.mark.subprocess
def test_a_failed_gap_fit_leaves_gap_cells_empty(runs, tmp_path, monkeypatch, capsys):
    root, _ = runs
    monkeypatch.setattr(
        "lmms_eval_unify.benchmarks.gapeval.leaderboard.GAP_FIT_CODE", "import sys; sys.exit('no torch')"
    )
    assert run([root, "--benchmark", "gapeval", "-o", tmp_path / "b", "--no-plots"]) == 0
    assert "no torch" in capsys.readouterr().err
    row = read_csv(tmp_path / "b" / "gapeval_table2.csv")["uni-model"]
    assert row["Overall Gap"] == "-" and row["reasoning Und."] == "75.0000"


@pytest.mark.subprocess
def test_gap_variant_is_selectable_and_reported(runs, tmp_path, capsys):
    root, _ = runs
    args = [root, "--benchmark", "gapeval", "--no-plots", "--bootstrap", 0]
    assert run([*args, "-o", tmp_path / "official"]) == 0
    assert "official variant" in capsys.readouterr().out
    assert run([*args, "-o", tmp_path / "stable", "--gap-variant", "stable"]) == 0
    assert "stable variant" in capsys.readouterr().out
    official = read_csv(tmp_path / "official" / "gapeval_table2.csv")["uni-model"]["Overall Gap"]
    stable = read_csv(tmp_path / "stable" / "gapeval_table2.csv")["uni-model"]["Overall Gap"]
    assert 0.0 <= float(stable) <= 100.0 and official != stable


@pytest.mark.subprocess
def test_gap_convergence_is_shown_per_cell_and_warned(runs, tmp_path, capsys):
    root, _ = runs
    args = [root, "--benchmark", "gapeval", "--no-plots", "--bootstrap", 0]
    assert run([*args, "-o", tmp_path / "official"]) == 0
    out, err = capsys.readouterr()
    flags = read_csv(tmp_path / "official" / "gapeval_gap_convergence.csv")["uni-model"]
    assert {flags[f"{c} {ge.GAP_CONVERGED}"] for c in ge.CATEGORIES} == {"0.0000"}  # fixed AdamW budget
    assert "Gap fit not converged" in err and "uni-model / reasoning" in err
    assert "Gap fit not converged" in out  # the board's note
    assert run([*args, "-o", tmp_path / "stable", "--gap-variant", "stable"]) == 0
    out, err = capsys.readouterr()
    flags = read_csv(tmp_path / "stable" / "gapeval_gap_convergence.csv")["uni-model"]
    assert {flags[f"{c} {ge.GAP_CONVERGED}"] for c in ge.CATEGORIES} == {"1.0000"}
    assert "not converged" not in err + out


def test_gap_not_converged_names_each_cell():
    gaps = {
        "m": {f"{c} {ge.GAP_CONVERGED}": float(c != "reasoning") for c in ge.CATEGORIES},
        "n": {f"{c} {ge.GAP_CONVERGED}": 1.0 for c in ge.CATEGORIES},
    }
    stream = io.StringIO()
    (line,) = gap_not_converged(gaps, "stable", warn=stream)
    assert "1 cell(s): m / reasoning (" in line and line in stream.getvalue()
    assert gap_not_converged({"n": gaps["n"]}, "stable", warn=stream) == []


@pytest.mark.subprocess
@pytest.mark.parametrize("n_models", [6, pytest.param(200, marks=pytest.mark.heavy)])
def test_figures_show_every_row_within_bounds_and_the_legend_inside_the_figure(tmp_path, monkeypatch, n_models):
    """The Und./Gen. legend was cut at the PNG's edge: it now lies inside the figure, off the bars; the bars
    page every Table 2 row and Fig. 3 has every model that got a Gap Score."""
    root, _ = many_runs(tmp_path, n_models, ["gapeval"])
    out = tmp_path / "b"
    figures = leaderboard_figures(monkeypatch, [root, "--benchmark", "gapeval", "--bootstrap", 0, "-o", out])
    assert_every_figure_bounded(figures)
    rows = shown_labels(out / "gapeval_table2.csv")
    assert bar_labels(figures, "GapEval Und./Gen. per model") == rows
    [fig3] = [f for f in figures if caption(f).startswith("GapEval: gap vs ability")]
    assert len(fig3.axes[0].collections[0].get_offsets()) == len(rows)
