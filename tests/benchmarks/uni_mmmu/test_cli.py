"""Real-CLI runs of the uni_mmmu group (all six tasks) with both baselines on generated data; the judged
tasks (geometry, science, code) against the local judge server with the reference policy."""

import csv
import json

import pytest
from cli_runs import judged_cli_runs, offline_env, results_of

from lmms_eval_unify.benchmarks.uni_mmmu.jigsaw import METRICS_ENV
from lmms_eval_unify.benchmarks.uni_mmmu.offline.data import generate
from lmms_eval_unify.benchmarks.uni_mmmu.reference_judge import verdict
from lmms_eval_unify.metrics.tiny import TINY_DREAMSIM_TYPE, write_tiny_dreamsim_checkpoint
from lmms_eval_unify.reports.leaderboard import main

N_ITEMS = 8
TASKS = [f"uni_mmmu_{name}" for name in ("maze", "sliding", "jigsaw", "geometry", "science", "code")]
JUDGED = {"uni_mmmu_geometry": ("img_acc", "text_acc"), "uni_mmmu_science": ("reasoning_acc", "text_acc", "img_acc"),
          "uni_mmmu_code": ("text_acc", "shape_color_score", "position_score")}  # fmt: skip
FULL_MARKS = {"shape_color_score": 5.0, "position_score": 5.0}  # the code judge's 0-5 scale


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("uni_mmmu_cli")


@pytest.fixture(scope="module")
def runs(root):
    generate(root / "data", N_ITEMS, seed=4)
    (root / "dreamsim").mkdir()
    write_tiny_dreamsim_checkpoint(root / "dreamsim")
    metrics = {"dreamsim": {"backbone": TINY_DREAMSIM_TYPE, "weights": str(root / "dreamsim"), "device": "cpu"}}
    env = offline_env(root / "data", **{METRICS_ENV: json.dumps(metrics)})
    out = judged_cli_runs(root, "uni_mmmu", verdict, env, {"unify_oracle": [], "unify_random": []})
    return {model: results_of(run) for model, run in out.items()}


@pytest.mark.slow
def test_oracle_scores_100_on_every_subtask(runs):
    oracle = runs["unify_oracle"]
    for task in TASKS:
        metrics = {k.split(",")[0]: v for k, v in oracle[task].items() if "," in k and "stderr" not in k}
        scores = {k: v for k, v in metrics.items() if k not in ("invalid_outputs", "details")}
        assert len(scores) >= 2, (task, scores)
        assert all(v == pytest.approx(FULL_MARKS.get(k, 1.0)) for k, v in scores.items()), (task, scores)
        assert metrics["invalid_outputs"] == 0


@pytest.mark.slow
def test_random_jigsaw_is_below_oracle(runs):
    jig = runs["unify_random"]["uni_mmmu_jigsaw"]
    assert 0.0 <= jig["text_acc,none"] <= 1.0
    assert jig["img_score,none"] < 1.0
    assert jig["invalid_outputs,none"] == 0


@pytest.mark.slow
def test_random_is_between_zero_and_the_oracle_on_the_judged_tasks(runs):
    random_ = runs["unify_random"]
    for task, metrics in JUDGED.items():
        assert random_[task]["invalid_outputs,none"] == 0
        for metric in metrics:
            assert 0.0 <= random_[task][f"{metric},none"] < FULL_MARKS.get(metric, 1.0), (task, metric)
    # Two fair coins per item (truth or a plausible wrong answer): the mean is below the oracle's.
    assert sum(random_[t][f"{m},none"] / FULL_MARKS.get(m, 1.0) for t, ms in JUDGED.items() for m in ms) < 6


@pytest.mark.slow
def test_leaderboard_table_shows_the_judged_columns(root, runs):
    out = root / "leaderboard"
    command = [root / "unify_oracle", root / "unify_random", "--benchmark", "uni_mmmu", "-o", out,
               "--no-plots", "--bootstrap", "0"]  # fmt: skip
    assert main([str(part) for part in command]) == 0
    with (out / "uni_mmmu_table2.csv").open(newline="", encoding="utf-8") as handle:
        table = {row["model"]: row for row in csv.DictReader(handle)}
    columns = ("Geo I", "Geo T", "Sci. R", "Sci. T", "Sci. I", "C. T", "C. S", "C. P")
    assert all(float(table["unify_oracle"][c]) == pytest.approx(100.0) for c in columns)
    assert all(float(table["unify_random"][c]) < 100.0 for c in columns)
    with (out / "uni_mmmu_science_disciplines.csv").open(newline="", encoding="utf-8") as handle:
        disciplines = {row["model"]: row for row in csv.DictReader(handle)}
    values = {k: v for k, v in disciplines["unify_oracle"].items() if k.partition(" ")[2] in ("R", "T", "I")}
    assert len(values) == 3 * 3 and all(float(v) == pytest.approx(100.0) for v in values.values())  # 3 x R/T/I
    assert disciplines["unify_oracle"]["Physics R n"] != "" and "Physics R caveats" in disciplines["unify_oracle"]
