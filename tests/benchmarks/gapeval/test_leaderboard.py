"""GapEval's tables in `lmms-eval-unify leaderboard`: the Gap fit (run in a child process, --gap-variant),
its failure, and its convergence per cell."""

from __future__ import annotations

import csv
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
    assert len(fig3.axes[0].collections[1].get_offsets()) == len(rows)  # every official fit ringed: not converged


# --- fit status: an unconverged Gap fit marks its cells (issue "Publishable with no hand work", item 2) -----------


def gap_values(converged: bool, gap: float = 40.0) -> dict[str, float]:
    """A model's `fit_gaps` values without a fit: every category at `gap`, all flagged `converged`."""
    return {
        **{f"{c} {ge.GAP}": gap for c in ge.CATEGORIES},
        **{f"{c} {ge.GAP_CONVERGED}": float(converged) for c in ge.CATEGORIES},
        ge.OVERALL_GAP: gap,
    }


def table2_of(runs: tuple[Path, Path], gaps, not_converged):
    """GapEval's Table 2 board (and its rows by label) from the runs' samples and the given fit values."""
    from lmms_eval_unify.benchmarks.gapeval.leaderboard import boards, score_models
    from lmms_eval_unify.reports.boards import Options
    from lmms_eval_unify.reports.results_io import load_results

    options = Options(replicates=0)
    tables, _ = boards(score_models(load_results([runs[0]]), options), gaps, options, "official", (), io.StringIO(),
                       not_converged=not_converged)  # fmt: skip
    return tables[0], {row.label: row for row in tables[0].rows}


def test_an_unconverged_fit_marks_its_gap_cells_and_strict_refuses_them(runs):
    from lmms_eval_unify.benchmarks.gapeval.leaderboard import GAP_KEYS
    from lmms_eval_unify.reports.comparability import strict_errors
    from lmms_eval_unify.reports.render import csv_text, markdown

    reason = "Gap fit not converged: official fit did not converge after its fixed 2000 AdamW steps (...)"
    gaps = {"uni-model": gap_values(False), "base-vlm": gap_values(True)}
    table2, rows = table2_of(runs, gaps, {"uni-model": reason})
    assert {key: rows["uni-model"].caveats[key] for key in GAP_KEYS} == dict.fromkeys(GAP_KEYS, (reason,))
    assert rows["base-vlm"].caveats == {}  # a converged fit is not marked
    assert not any(key.endswith(("Succ.", "Und.", "Gen.")) for key in rows["uni-model"].caveats)
    text = markdown(table2)
    assert "| uni-model |" in text and "40.00‡" in next(line for line in text.splitlines() if "| uni-model |" in line)
    assert "‡" not in next(line for line in text.splitlines() if line.startswith("| base-vlm |"))
    assert "‡ uni-model / World Knowledge Gap, Numerical Perception Gap, Instruction Following Gap, Reasoning Gap, " \
           "Overall Gap: Gap fit not converged." in text  # the note: the reason; the CSV: each cell's  # fmt: skip
    csv_rows = {row["model"]: row for row in csv.DictReader(io.StringIO(csv_text(table2)))}
    assert (
        csv_rows["uni-model"]["reasoning Gap caveats"] == reason and csv_rows["base-vlm"]["reasoning Gap caveats"] == ""
    )
    assert "reasoning Succ. caveats" not in csv_rows["uni-model"]
    errors = strict_errors([table2])
    assert len(errors) == len(GAP_KEYS) and f"gapeval_table2 / uni-model / reasoning Gap: {reason}" in errors


def test_a_flag_without_a_reason_still_marks_the_cells_naming_the_variant(runs):
    _, rows = table2_of(runs, {"uni-model": gap_values(False)}, {})
    assert rows["uni-model"].caveats[ge.OVERALL_GAP] == ("Gap fit not converged (official variant, docs/gap_score.md)",)
    _, rows = table2_of(runs, {"uni-model": gap_values(True)}, {})
    assert rows["uni-model"].caveats == {}


def test_the_leaderboards_sample_caveats_add_to_the_fit_caveat(runs):
    from lmms_eval_unify.reports.comparability import mark_boards

    table2, rows = table2_of(runs, {"uni-model": gap_values(False)}, {"uni-model": "fit"})
    cell = rows["uni-model"].cells[ge.OVERALL_GAP]
    mark_boards([table2], {source: ("t: 2 of 4 items (--limit 2)",) for source in cell.sources})
    assert rows["uni-model"].caveats[ge.OVERALL_GAP] == ("fit", "t: 2 of 4 items (--limit 2)")
    assert rows["uni-model"].caveats["reasoning Succ."] == ("t: 2 of 4 items (--limit 2)",)


@pytest.mark.subprocess
def test_an_unconverged_gap_fit_is_marked_end_to_end_and_strict_exits_3(runs, tmp_path, capsys):
    root, _ = runs
    args = [root, "--benchmark", "gapeval", "--no-plots", "--bootstrap", 0]
    assert run([*args, "-o", tmp_path / "official"]) == 0
    row = read_csv(tmp_path / "official" / "gapeval_table2.csv")["uni-model"]
    assert row["Overall Gap caveats"].startswith("Gap fit not converged: official fit did not converge")
    assert "the converged stable fit differs by up to" in row["Overall Gap caveats"]
    capsys.readouterr()
    assert run([*args, "-o", tmp_path / "strict", "--strict"]) == 3 and not (tmp_path / "strict").exists()
    assert "gapeval_table2 / uni-model / reasoning Gap: Gap fit not converged" in capsys.readouterr().err
    assert run([*args, "-o", tmp_path / "stable", "--strict", "--gap-variant", "stable"]) == 0
    assert "‡" not in (tmp_path / "stable" / "leaderboard.md").read_text()
