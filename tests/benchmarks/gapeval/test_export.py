"""`lmms-eval-unify export --benchmark gapeval`: real CLI runs of the baselines on generated data (judged
against the local reference judge), exported and checked as the released fit checks its input -- which must
give our leaderboard's numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runs import judged_cli_runs, offline_env
from export_runs import MODELS, NO_RESAMPLING, board_values, export_cli

from lmms_eval_unify.benchmarks.gapeval import export as gapeval_export
from lmms_eval_unify.benchmarks.gapeval import leaderboard as gapeval_leaderboard
from lmms_eval_unify.benchmarks.gapeval import paper as ge
from lmms_eval_unify.benchmarks.gapeval.offline.data import generate as generate_gapeval
from lmms_eval_unify.benchmarks.gapeval.reference_judge import verdict as gapeval_verdict
from lmms_eval_unify.cli import main as cli_main
from lmms_eval_unify.reports import exports as ex
from lmms_eval_unify.reports.comparability import task_caveats
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


def test_gapeval_model_with_a_category_of_no_scored_pair_is_left_out_as_the_leaderboards_dash(tmp_path, capsys):
    """Every generation answer of one category judge-failed: the leaderboard has no value there and no Gap, so the
    export does not hand those failures to the released fit as wrong answers."""
    tasks = {t: [{"correct": 1}, {"correct": 0}] for c in ge.CATEGORIES for t in ge.task_names(c)}
    tasks[ge.task_names("reasoning")[1]] = [{"correct": 0, "invalid_outputs": "judge_failed"}] * 2
    write_run(tmp_path / "runs", "m", tasks)
    assert cli_main(["export", str(tmp_path / "runs"), "--benchmark", "gapeval", "--out", str(tmp_path / "out")]) == 1
    assert "m: GapEval left out, not every category has both directions with a pair scored" in capsys.readouterr().err
    assert not (tmp_path / "out" / "gapeval" / "gapeval_joint.json").exists()


def gapeval_run(root: Path, n: int, date_id: str, limit: int | None = None) -> Path:
    """Model ``m``'s run of every GapEval task on the first ``n`` of 9 questions (mixed right and wrong), recorded
    as lmms-eval records a ``--limit`` run when ``limit`` is given; its results file."""
    tasks = {
        task: [{"correct": int((doc + direction) % 3 != 0)} for doc in range(n)]
        for category in ge.CATEGORIES
        for direction, task in enumerate(ge.task_names(category))
    }
    results_file = write_run(root, "m", tasks, date_id=date_id)
    results = json.loads(results_file.read_text())
    results["config"]["limit"] = limit
    results["n-samples"] = {task: {"original": 9, "effective": n} for task in tasks}
    results_file.write_text(json.dumps(results))
    return results_file


def released_pairs(folder: Path) -> dict[str, int]:
    """The rows behind each category of an export, after the released fit's checks of its input."""
    for row in gapeval_export.read(folder)["m"]:
        assert len(row) == 4 and min(row) >= 0.0 and abs(sum(row) - 1.0) <= 5e-3
    return json.loads((folder / "gapeval_joint_rows.json").read_text())["models"]["m"]["pairs"]


def test_a_limit_run_never_silently_replaces_a_fuller_run_in_the_export(tmp_path, capsys):
    """A newer ``--limit 3`` smoke run of the configuration of a full run (9 questions): the leaderboard keeps the
    newer and marks its cells ``‡`` (``--strict`` refuses them); the export, whose numbers the released fit reads
    with no mark, refuses instead (it shrank the table from 9 items to 3, exit 0). Each run named by its results
    file exports; the smoke run's export is marked as the leaderboard marks it."""
    full = gapeval_run(tmp_path / "full", 9, "20260101T000000")
    smoke = gapeval_run(tmp_path / "smoke", 3, "20260202T000000", limit=3)
    both = [str(tmp_path / "full"), str(tmp_path / "smoke"), "--benchmark", "gapeval"]
    assert ex.main([*both, "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert f"m: the newer run {smoke} replaces {full} with fewer samples: " in error
    assert error.count("(3 of 9 samples)") == 8
    assert not (tmp_path / "out" / "gapeval").exists()
    caveats = task_caveats(load_results([tmp_path / "full", tmp_path / "smoke"]))
    assert all("3 of 9 items (--limit 3)" in reasons[0] for reasons in caveats.values()) and len(caveats) == 8

    assert ex.main([str(full), "--benchmark", "gapeval", "--out", str(tmp_path / "full_out")]) == 0
    assert released_pairs(tmp_path / "full_out" / "gapeval") == dict.fromkeys(ge.CATEGORIES, 9)
    assert not (tmp_path / "full_out" / ex.NOT_COMPARABLE_FILE).exists()
    assert ex.main([str(smoke), "--benchmark", "gapeval", "--out", str(tmp_path / "smoke_out")]) == 0
    assert released_pairs(tmp_path / "smoke_out" / "gapeval") == dict.fromkeys(ge.CATEGORIES, 3)
    marks = (tmp_path / "smoke_out" / ex.NOT_COMPARABLE_FILE).read_text().splitlines()
    leaderboard = task_caveats(load_results([tmp_path / "smoke"]))
    assert sorted(marks) == sorted(f"m: {reason}" for reasons in leaderboard.values() for reason in reasons)
