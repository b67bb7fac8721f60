"""UniG2U-Bench's tables in `lmms-eval-unify leaderboard`: Table 4 with Δ against the paired base VLM
(--pairs), the G2U gains, and the pairs file."""

from __future__ import annotations

from pathlib import Path

import pytest
from figure_checks import (
    assert_every_figure_bounded,
    bar_labels,
    caption,
    every_legend,
    leaderboard_figures,
    many_runs,
    shown_labels,
)
from leaderboard_runs import approx, read_csv, run, write_runs

from lmms_eval_unify.benchmarks.unig2u import paper as ug
from lmms_eval_unify.benchmarks.unig2u.leaderboard import DEFAULT_PAIRS, load_pairs, relabel_pairs
from lmms_eval_unify.reports.plots import HEATMAP_ROWS_PER_PAGE
from lmms_eval_unify.testing.synthetic import write_run


@pytest.fixture
def runs(tmp_path) -> tuple[Path, Path]:
    """A base VLM and a unified model paired with it (Direct and GtA), on UniG2U-Bench."""
    return write_runs(tmp_path, ["unig2u"])


def test_unig2u_table4_gains_against_the_paired_base(runs, tmp_path):
    root, pairs = runs
    assert run([root, "--benchmark", "unig2u", "--pairs", pairs, "-o", tmp_path / "b", "--no-plots"]) == 0
    table4 = read_csv(tmp_path / "b" / "unig2u_table4.csv")
    assert list(table4) == ["base-vlm *", "uni-model (direct)", "uni-model (GtA)"]
    assert float(table4["base-vlm *"]["Overall"]) == 50.0 and float(table4["base-vlm *"]["Δ"]) == 0.0
    assert float(table4["uni-model (direct)"]["Δ"]) == approx(50.0)
    gta = table4["uni-model (GtA)"]  # 50 on every subtask except chartqa (100)
    assert float(gta["Chart & Table"]) == 100.0 and float(gta["Physics Reasoning"]) == 50.0
    assert float(gta["Overall"]) == approx(50 + 50 / 30)  # chartqa is 100 of the paper's 3000 samples
    assert float(gta["Δ"]) == approx(50 / 30)
    gains = read_csv(tmp_path / "b" / "unig2u_gains.csv")
    assert float(gains["uni-model: Δ_Direct (vs base-vlm)"]["Overall"]) == approx(50.0)
    delta_gta = gains["uni-model: Δ_GtA (GtA − Direct)"]
    assert float(delta_gta["Overall"]) == approx(50 / 30 - 50) and float(delta_gta["Chart & Table"]) == 0.0
    # Paired bootstrap: the base's noise is shared with the unified model's, so the Δ interval is valid.
    low, high = (float(table4["uni-model (direct)"][f"Δ {s}"]) for s in ("ci_low", "ci_high"))
    assert low <= 50.0 <= high


def test_unpaired_models_get_no_delta(runs, tmp_path):
    root, _ = runs
    empty = tmp_path / "none.yaml"
    empty.write_text("pairs: {}\n")
    assert run([root, "--benchmark", "unig2u", "--pairs", empty, "-o", tmp_path / "b", "--no-plots"]) == 0
    table4 = read_csv(tmp_path / "b" / "unig2u_table4.csv")
    assert {r["Δ"] for r in table4.values()} == {"-"}


def test_a_subtask_with_no_scored_sample_leaves_its_category_and_the_overall_without_a_value(tmp_path):
    """chartqa judge-failed on every sample: the sample-weighted Chart & Table and Overall need it (a missing
    part leaves them '-', as before), so they print '—' and name it instead of counting it as 0."""
    tasks = {ug.task_name(s): [{"acc": 1.0}, {"acc": 0.0}] for s in ug.SUBTASKS}
    tasks[ug.task_name("chartqa")] = [{"acc": 0.0, "invalid_outputs": "judge_failed"}] * 2
    write_run(tmp_path / "runs", "m", tasks)
    out = tmp_path / "b"
    assert run([tmp_path / "runs", "--benchmark", "unig2u", "--no-plots", "--bootstrap", 0, "-o", out]) == 0
    row = read_csv(out / "unig2u_table4.csv")["m (direct)"]
    assert (row["Chart & Table"], row["Overall"], row["Perception Reasoning"]) == ("-", "-", "50.0000")
    markdown = (out / "leaderboard.md").read_text()
    assert "— m (direct) / Overall: no value: it needs a part with no sample scored." in markdown


def test_default_pairs_file_is_the_papers_table4_pairing():
    pairs = load_pairs(DEFAULT_PAIRS)
    assert len(pairs) == 21 and pairs["OmniGen2"] == "qwen2.5-vl-7b" and pairs["bagel"] == "llava-onevision"


def test_unig2u_pairs_may_name_recorded_or_shown_labels():
    shown = {"/w/OmniGen2": "OmniGen2", "qwen": "Qwen2.5-VL"}
    assert relabel_pairs({"/w/OmniGen2": "qwen", "other": "Qwen2.5-VL"}, shown) == {
        "OmniGen2": "Qwen2.5-VL", "other": "Qwen2.5-VL"
    }  # fmt: skip


@pytest.mark.parametrize("n_models", [6, pytest.param(200, marks=pytest.mark.heavy)])
def test_figures_show_every_row_within_bounds_the_legend_off_the_bars_and_the_100_tick(tmp_path, monkeypatch, n_models):
    """The accuracy bars page every Table 4 row; the legend that covered bars and the 100 tick sits outside
    the axes; the Δ heatmap pages every row with a Δ."""
    root, pairs = many_runs(tmp_path, n_models, ["unig2u"])
    out = tmp_path / "b"
    args = [root, "--benchmark", "unig2u", "--pairs", pairs, "--bootstrap", 0, "-o", out]
    figures = leaderboard_figures(monkeypatch, args)
    assert_every_figure_bounded(figures)
    rows = shown_labels(out / "unig2u_table4.csv")
    assert bar_labels(figures, "UniG2U-Bench accuracy per model") == rows
    for fig in (f for f in figures if caption(f).startswith("UniG2U-Bench accuracy per model")):
        for ax in fig.axes:
            hundred = next(t for t in ax.get_yticklabels() if t.get_text() == "100")
            assert not any(hundred.get_window_extent().overlaps(lg.get_window_extent()) for lg in every_legend(fig))
    deltas = [f for f in figures if caption(f).startswith("UniG2U Δ vs base VLM")]
    assert len(deltas) == -(-n_models // HEATMAP_ROWS_PER_PAGE)
    assert [t.get_text() for f in deltas for t in f.axes[0].get_yticklabels()] == [r for r in rows if "*" not in r]
