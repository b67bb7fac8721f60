"""Uni-MMMU's figures in `lmms-eval-unify leaderboard`: bounded pages of every model, its 15 series told apart."""

from __future__ import annotations

import numpy as np
import pytest
from figure_checks import (
    assert_every_figure_bounded,
    bar_labels,
    bar_series,
    caption,
    leaderboard_figures,
    many_runs,
    shown_labels,
)
from leaderboard_runs import limited, read_csv, run

from lmms_eval_unify.benchmarks.uni_mmmu.paper import OUR_AVG
from lmms_eval_unify.reports.render import NEEDS_UNSCORED
from lmms_eval_unify.testing.synthetic import write_run


@pytest.mark.parametrize("n_models", [6, pytest.param(200, marks=pytest.mark.heavy)])
def test_figures_show_every_row_within_bounds_and_tell_the_fifteen_series_apart(tmp_path, monkeypatch, n_models):
    """Table 2's 15 columns were drawn on 10 colours in one panel: they are now two panels over the same models,
    of at most 8 series each, every series of a panel in its own colour and named as Table 2's header."""
    root, _ = many_runs(tmp_path, n_models, ["uni_mmmu"])
    out = tmp_path / "b"
    figures = leaderboard_figures(monkeypatch, [root, "--benchmark", "uni_mmmu", "--bootstrap", 0, "-o", out])
    assert_every_figure_bounded(figures)
    assert bar_labels(figures, "Uni-MMMU scores per model") == shown_labels(out / "uni_mmmu_table2.csv")
    first = next(f for f in figures if caption(f).startswith("Uni-MMMU scores per model"))
    series = []
    for ax in first.axes[:2]:  # the first models' two panels
        colours = {tuple(np.round(c.get_facecolor()[0], 3)) for c in bar_series(ax)}
        assert len(colours) == len(bar_series(ax)) <= 8
        series += [text.get_text() for text in ax.get_legend().get_texts()][: len(colours)]
    markdown = (out / "leaderboard.md").read_text(encoding="utf-8").split("### Uni-MMMU (Table 2)")[1]
    assert series == markdown.splitlines()[2].strip("| ").split(" | ")[1:]  # the table's headers, all 15


STEP = {"text_step_acc": 1.0, "text_sample_acc": 1.0, "img_step_acc": 0.5, "img_sample_acc": 0.0}
SCIENCE_RIGHT = {"reasoning_acc": 1.0, "text_acc": 1.0, "img_acc": 1.0, "details": {"discipline": "physics"}}
JUDGE_FAILED = {"img_acc": 0.0, "text_acc": 0.0, "reasoning_acc": 0.0, "invalid_outputs": "judge_failed"}


def every_task(geometry: list[dict]) -> dict[str, list[dict]]:
    """One sample of every Uni-MMMU task (science: one right, one judge-failed), `geometry` as given."""
    return {
        "uni_mmmu_jigsaw": [{"img_score": 0.5, "text_acc": 1.0}],
        "uni_mmmu_maze": [STEP],
        "uni_mmmu_sliding": [STEP],
        "uni_mmmu_geometry": geometry,
        "uni_mmmu_science": [SCIENCE_RIGHT, JUDGE_FAILED],
        "uni_mmmu_code": [{"text_acc": 1.0, "shape_color_score": 5.0, "position_score": 5.0}],
    }


def test_our_average_has_no_value_over_a_column_the_judge_scored_nothing_of(tmp_path):
    """Geometry judge-failed on every sample: Geo I/T and Avg. (ours) print '—' (Avg. counted them as 0 before,
    e.g. 21.62†); the paper's Avg. is '-' for a row missing a block, so ours never averages over one either."""
    write_run(tmp_path / "runs", "outage", every_task([JUDGE_FAILED] * 4))
    write_run(tmp_path / "runs", "scored", every_task([{"img_acc": 1.0, "text_acc": 0.0}]))
    out = tmp_path / "b"
    assert run([tmp_path / "runs", "--benchmark", "uni_mmmu", "--no-plots", "--bootstrap", 0, "-o", out]) == 0
    rows = read_csv(out / "uni_mmmu_table2.csv")
    assert (rows["outage"]["Geo I"], rows["outage"][OUR_AVG], rows["outage"][f"{OUR_AVG} n"]) == ("-", "-", "10")
    assert float(rows["scored"][OUR_AVG]) == pytest.approx(1000 / 14, abs=1e-4)
    markdown = (out / "leaderboard.md").read_text()
    assert f"— outage / {OUR_AVG}: {NEEDS_UNSCORED}." in markdown


def test_the_science_by_discipline_table_carries_the_science_tasks_marks(tmp_path):
    """Its cells read the science task's samples: '†' for its judge-failed sample and '‡' for a --limit run, as
    Table 2's Sci. cells (it had no marks at all before)."""
    path = write_run(tmp_path / "runs", "m", every_task([{"img_acc": 1.0, "text_acc": 1.0}]))
    limited(path, "uni_mmmu_science", 2, 885)
    out = tmp_path / "b"
    assert run([tmp_path / "runs", "--benchmark", "uni_mmmu", "--no-plots", "--bootstrap", 0, "-o", out]) == 0
    row = read_csv(out / "uni_mmmu_science_disciplines.csv")["m"]
    assert (row["Physics R"], row["Physics R n"], row["Physics R invalid"]) == ("100.0000", "2", "1")
    assert "2 of 885 items (--limit 2)" in row["Physics R caveats"]
    board = (out / "leaderboard.md").read_text().split("### Uni-MMMU science by discipline (ours)")[1]
    assert "| m‡ | 100.00† | 100.00† | 100.00† | - |" in board  # every value it shows is marked: one '‡' on the row
    assert "† m: some samples invalid (judge_failed)." in board
