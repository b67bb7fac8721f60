"""`lmms-eval-unify export --benchmark gapeval`: real CLI runs of the baselines on generated data (judged
against the local reference judge), exported and checked as the released fit checks its input -- which must
give our leaderboard's numbers."""

from __future__ import annotations

import json

import pytest
from cli_runs import judged_cli_runs, offline_env
from export_runs import MODELS, NO_RESAMPLING, board_values, export_cli

from lmms_eval_unify.benchmarks.gapeval import export as gapeval_export
from lmms_eval_unify.benchmarks.gapeval import leaderboard as gapeval_leaderboard
from lmms_eval_unify.benchmarks.gapeval import paper as ge
from lmms_eval_unify.benchmarks.gapeval.offline.data import generate as generate_gapeval
from lmms_eval_unify.benchmarks.gapeval.reference_judge import verdict as gapeval_verdict
from lmms_eval_unify.cli import main as cli_main
from lmms_eval_unify.reports.results_io import load_results
from lmms_eval_unify.testing.synthetic import write_run


@pytest.mark.slow
def test_gapeval_export_is_the_fits_input_and_gives_the_leaderboard_numbers(tmp_path):
    generate_gapeval(tmp_path / "data", 3, seed=8)
    judged_cli_runs(tmp_path / "runs", "gapeval", gapeval_verdict, offline_env(tmp_path / "data"), MODELS)
    export_cli(tmp_path / "runs", "gapeval", tmp_path / "export")
    joint = gapeval_export.read(tmp_path / "export" / "gapeval")
    order = json.loads((tmp_path / "export" / "gapeval" / "gapeval_joint_rows.json").read_text())["row_order"]
    assert order == list(ge.CATEGORIES) and sorted(joint) == sorted(MODELS)
    scored = gapeval_leaderboard.score_models(load_results([tmp_path / "runs"]), NO_RESAMPLING)
    board = board_values(gapeval_leaderboard.boards(scored, {}, NO_RESAMPLING)[0][0])
    for model, rows in joint.items():
        assert len(rows) == 4
        for category, row in zip(order, rows, strict=True):
            # evaluate.py's checks: four non-negative shares summing to 1 within 5e-3
            assert len(row) == 4 and min(row) >= 0.0 and abs(sum(row) - 1.0) <= 5e-3
            p11, p10, p01, p00 = (x / sum(row) for x in row)
            assert 100 * (p11 + p10) == pytest.approx(board[model][f"{category} Und."])
            assert 100 * (p11 + p01) == pytest.approx(board[model][f"{category} Gen."])
            assert 100 * p11 == pytest.approx(board[model][f"{category} Succ."])
    assert joint["unify_oracle"] == [[1.0, 0.0, 0.0, 0.0]] * 4


def test_gapeval_model_without_every_category_is_left_out_and_said(tmp_path, capsys):
    write_run(tmp_path / "runs", "m", {t: [{"correct": 1}] for t in ge.task_names("reasoning")})
    # through the top-level command, which hands `export` over to the exports module
    assert cli_main(["export", str(tmp_path / "runs"), "--benchmark", "gapeval", "--out", str(tmp_path / "out")]) == 1
    assert "not every category has both directions" in capsys.readouterr().err
    assert not (tmp_path / "out" / "gapeval" / "gapeval_joint.json").exists()
