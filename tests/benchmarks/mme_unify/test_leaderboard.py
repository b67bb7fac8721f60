"""MME-Unify's tables in `lmms-eval-unify leaderboard`: Table 2/3 scores, unsupported cells, the scoring
variant (--variant) and the roll-up its registry entry names."""

from __future__ import annotations

from pathlib import Path

import pytest
from figure_checks import assert_every_figure_bounded, bar_labels, leaderboard_figures, many_runs, shown_labels
from leaderboard_runs import approx, read_csv, run, write_runs

from lmms_eval_unify.benchmarks import mme_unify
from lmms_eval_unify.benchmarks.mme_unify import leaderboard
from lmms_eval_unify.reports.boards import Options
from lmms_eval_unify.reports.results_io import load_results
from lmms_eval_unify.testing.synthetic import write_run


@pytest.fixture
def runs(tmp_path) -> tuple[Path, Path]:
    """A base VLM (cannot generate images) and a unified model, on MME-Unify."""
    return write_runs(tmp_path, ["mme_unify"])


def test_mme_u_scores_and_unsupported_cells(runs, tmp_path):
    root, pairs = runs
    assert run([root, "--benchmark", "mme_unify", "-o", tmp_path / "b", "--no-plots", "--bootstrap", 200]) == 0
    rows = read_csv(tmp_path / "b" / "mme_unify_table2.csv")
    uni, base = rows["uni-model"], rows["base-vlm"]
    assert float(uni["TIG"]) == approx((70.0 + 25.0) / 2)
    assert float(uni["Gen. Avg"]) == approx(47.5 / 6)
    assert float(uni["Unify Avg"]) == approx(75.0 / 5)
    assert float(uni["MME-U"]) == approx((100 / 3 + 47.5 / 6 + 15.0) / 3)
    assert base["TIG"] == "-" and base["Gen. Avg"] == "-"
    assert float(base["MME-U"]) == approx(75.0 / 9)  # missing generation/unify count as 0
    assert float(base["SIPU ci_low"]) <= 75.0 <= float(base["SIPU ci_high"])
    table3 = read_csv(tmp_path / "b" / "mme_unify_table3.csv")["uni-model"]
    assert (table3["IEE Text"], table3["IEE Image"], table3["IEE Acc+"]) == ("100.0000", "50.0000", "50.0000")
    markdown = (tmp_path / "b" / "leaderboard.md").read_text()
    # '-' = not run; '—' = no sample scored (TIG: every sample unsupported), with the reason under the table
    assert "| base-vlm | 75.00 | - | - | 25.00 | - | - | - | — | - | - | — |" in markdown
    assert "— base-vlm / TIG, Gen. Avg: no sample scored (unsupported)." in markdown


def test_a_subtask_with_every_sample_invalid_leaves_its_averages_without_a_value(tmp_path):
    """SIPU run with every sample invalid measures nothing: it is no '-' the paper counts as 0, so Und. Avg and
    MME-U have no value either, with a note naming it (they counted it as 0 before)."""
    failed = {"acc": 0, "invalid_outputs": "model_error"}
    write_run(tmp_path / "runs", "m", {"mme_unify_sipu": [failed] * 3, "mme_unify_mitiu": [{"acc": 1}] * 2})
    out = tmp_path / "b"
    assert run([tmp_path / "runs", "--benchmark", "mme_unify", "--no-plots", "--bootstrap", 20, "-o", out]) == 0
    row = read_csv(out / "mme_unify_table2.csv")["m"]
    assert (row["SIPU"], row["MITIU"], row["Und. Avg"], row["MME-U"]) == ("-", "100.0000", "-", "-")
    assert (row["MME-U n"], row["MME-U invalid"]) == ("5", "3")
    markdown = (out / "leaderboard.md").read_text()
    assert "| m | — | 100.00 | - | — |" in markdown
    assert "— m / Und. Avg, MME-U: no value: it needs a part with no sample scored." in markdown


def test_a_video_score_over_100_is_marked_with_why(tmp_path):
    """The oracle's frames equal the reference: FVD/FID 0 normalises to 100.1, beyond Appendix H's [1, 1000]; the
    value is kept (the released script does not clip) and marked, with the averages over it."""
    write_run(tmp_path / "runs", "oracle", {"mme_unify_vp": [{"fvd": 0.0, "fid": 0.0}] * 2})
    out = tmp_path / "b"
    assert run([tmp_path / "runs", "--benchmark", "mme_unify", "--no-plots", "--bootstrap", 0, "-o", out]) == 0
    row = read_csv(out / "mme_unify_table2.csv")["oracle"]
    assert float(row["VP"]) == approx(100_000 / 999) and leaderboard.ABOVE_SCALE in row["VP caveats"]
    assert leaderboard.ABOVE_SCALE in row["Gen. Avg caveats"] and leaderboard.ABOVE_SCALE in row["MME-U caveats"]
    assert f"‡ oracle: {leaderboard.ABOVE_SCALE}." in (out / "leaderboard.md").read_text()


def test_mme_variant_official_reads_the_official_tasks(tmp_path, capsys):
    root = tmp_path / "runs"
    vcot = {"n_steps": 4, "image_steps": 3, "action_steps_correct": 4, "coordinate_steps_correct": 4}
    write_run(
        root,
        "m",
        {
            "mme_unify_sipu": [{"acc": 1}, {"acc": 0}],  # understanding: the same task in both variants
            "mme_unify_vcot": [
                {**vcot, "image_steps_correct": 3},
                {
                    **vcot,
                    "n_steps": 2,
                    "image_steps": 1,
                    "action_steps_correct": 2,
                    "coordinate_steps_correct": 2,
                    "image_steps_correct": 1,
                },
            ],
            "mme_unify_vcot_official": [
                {**vcot, "image_steps": 4, "coordinate_steps_correct": 0, "image_steps_correct": 3},
                {
                    **vcot,
                    "n_steps": 2,
                    "image_steps": 2,
                    "action_steps_correct": 2,
                    "coordinate_steps_correct": 0,
                    "image_steps_correct": 1,
                },
            ],
            "mme_unify_iee": [{"text_correct": 1, "image_correct": 0}],
            "mme_unify_iee_official": [{"text_correct": 0, "image_correct": 0}],
        },
    )
    args = [root, "--benchmark", "mme_unify", "--no-plots", "--bootstrap", 0]
    assert run([*args, "-o", tmp_path / "c"]) == 0
    assert run([*args, "--variant", "official", "-o", tmp_path / "o"]) == 0
    corrected = read_csv(tmp_path / "c" / "mme_unify_table2.csv")["m"]
    official = read_csv(tmp_path / "o" / "mme_unify_table2_official.csv")["m"]
    assert corrected["SIPU"] == official["SIPU"] == "50.0000"
    # corrected: (6/6 + 6/6 + 4/4) -> 100; official (Evaluate_VSP.py): K = 4, 2 mazes -> 8 slots per aspect,
    # actions 6/8, coordinates 0/8, images 4/8 -> (75 + 0 + 50) / 3
    assert float(corrected["VCoT"]) == approx(100.0)
    assert float(official["VCoT"]) == approx(125 / 3)
    assert float(corrected["IEE"]) == approx(50.0) and float(official["IEE"]) == approx(0.0)
    printed = capsys.readouterr().out
    assert "MME-Unify (Table 2), official variant" in printed
    assert "Scoring variant: official" in printed and "up to 100.1" in printed


def test_table2_is_built_by_the_roll_up_the_registry_entry_names(runs, monkeypatch):
    root, _ = runs
    models = load_results([root])
    no_resampling = Options(replicates=0)
    before = leaderboard.boards(models, no_resampling)[0]
    assert before.rows[1].values["MME-U"] == pytest.approx((100 / 3 + 47.5 / 6 + 15.0) / 3)

    def headline_only(means):
        return {"MME-U": float(len(means))}  # one number: how many subtasks ran

    monkeypatch.setattr(mme_unify, "paper_score", lambda: headline_only)
    after = leaderboard.boards(models, no_resampling)[0]
    assert [r.label for r in after.rows] == ["base-vlm", "uni-model"]
    assert [r.values for r in after.rows] == [{"MME-U": 1.0}, {"MME-U": 3.0}]


@pytest.mark.parametrize("n_models", [6, pytest.param(200, marks=pytest.mark.heavy)])
def test_figures_show_every_row_within_bounds_legends_off_the_bars(tmp_path, monkeypatch, n_models):
    root, _ = many_runs(tmp_path, n_models, ["mme_unify"])
    out = tmp_path / "b"
    figures = leaderboard_figures(monkeypatch, [root, "--benchmark", "mme_unify", "--bootstrap", 0, "-o", out])
    assert_every_figure_bounded(figures)
    assert bar_labels(figures, "MME-Unify scores per model") == shown_labels(out / "mme_unify_table2.csv")
