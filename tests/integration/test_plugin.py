"""Registration, and end-to-end runs through the real lmms-eval CLI on generated data."""

import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_eval_unify.integration.plugin import install_task_index, manifests
from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.dataset import random_baseline_expectation, write_puzzles
from lmms_eval_unify.puzzles.scoring import METRICS
from lmms_eval_unify.run.paths import tasks_path

N_ITEMS = 40


def test_manifests_name_our_models():
    assert {m.model_id for m in manifests()} >= {"unify_random", "unify_oracle"}


def test_tasks_path_holds_our_yaml():
    assert (tasks_path() / "uni_mmmu" / "uni_mmmu_maze.yaml").is_file()


@pytest.mark.heavy  # lmms-eval's task index
def test_our_names_take_precedence_over_builtins():
    from lmms_eval.tasks import TaskManager

    install_task_index()
    install_task_index()  # idempotent
    index = TaskManager("WARNING").task_index
    assert Path(index["uni_mmmu"]["yaml_path"]).is_relative_to(tasks_path())
    assert Path(index["uni_mmmu_maze"]["yaml_path"]).is_relative_to(tasks_path())
    assert Path(index["uni_mmmu_jigsaw"]["yaml_path"]).is_relative_to(tasks_path())
    assert Path(index["uni_mmmu_geometry"]["yaml_path"]).is_relative_to(tasks_path())


@pytest.fixture(scope="module")
def generated_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_puzzles(root / "uni_mmmu", N_ITEMS, N_ITEMS, seed=1)
    return root


def _run_cli(model, data_dir, out_dir):
    env = {
        **os.environ,
        "LMMS_EVAL_UNIFY_DATA_DIR": str(data_dir),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    env.pop("LMMS_EVAL_UNIFY_OUTPUT_DIR", None)
    env.pop("LMMS_EVAL_UNIFY_MEDIA_ROOTS", None)  # a real run trusts only its own media roots
    command = [
        "lmms-eval",
        "--model",
        model,
        "--tasks",
        "uni_mmmu_maze,uni_mmmu_sliding",  # the whole group runs in tests/tasks/uni_mmmu
        "--output_path",
        str(out_dir),
        "--log_samples",
    ]
    done = subprocess.run(
        [str(Path(sys.executable).parent / command[0]), *command[1:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(next(out_dir.rglob("*_results.json")).read_text())["results"]
    samples = {
        task: [json.loads(line) for line in next(out_dir.rglob(f"*_samples_{task}.jsonl")).read_text().splitlines()]
        for task in ("uni_mmmu_maze", "uni_mmmu_sliding")
    }
    return results, samples


@pytest.mark.slow
def test_cli_oracle_scores_100(generated_data, tmp_path):
    results, samples = _run_cli("unify_oracle", generated_data, tmp_path / "oracle")
    for task in ("uni_mmmu_maze", "uni_mmmu_sliding"):
        assert len(samples[task]) == N_ITEMS
        for metric in METRICS:
            assert results[task][f"{metric},none"] == 1.0, (task, metric)
        assert results[task]["invalid_outputs,none"] == 0
    (media,) = (tmp_path / "oracle" / "unify_media").glob("unify_oracle-*")  # one folder per configuration
    images = list((media / "uni_mmmu_maze").rglob("step_*.png"))
    assert len(images) == sum(len(json.loads(s["target"])) for s in samples["uni_mmmu_maze"])


@pytest.mark.slow
def test_cli_random_matches_its_analytic_chance_level(generated_data, tmp_path):
    results, samples = _run_cli("unify_random", generated_data, tmp_path / "random")
    for task, domain in (("uni_mmmu_maze", "maze"), ("uni_mmmu_sliding", "sliding")):
        parquet = generated_data / "uni_mmmu" / domain / "test.parquet"
        expected = random_baseline_expectation(DOMAINS[domain], parquet)
        for metric in METRICS:
            measured = results[task][f"{metric},none"]
            values = [s[metric] for s in samples[task]]
            # standard error of the mean; 0/1 metrics use the Bernoulli sd at the expected rate
            sd = statistics.pstdev(values) if "step" in metric else math.sqrt(expected[metric] * (1 - expected[metric]))
            assert abs(measured - expected[metric]) <= 4 * sd / math.sqrt(N_ITEMS) + 1e-9, (task, metric)
        assert 0 < results[task]["text_step_acc,none"] < 0.6


@pytest.mark.slow
def test_lmms_eval_tasks_list_shows_ours_without_flags():
    lmms_eval = str(Path(sys.executable).parent / "lmms-eval")
    done = subprocess.run([lmms_eval, "--tasks", "list"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0
    output = done.stdout + done.stderr
    assert "our definitions replace built-in uni_mmmu" in output and "uni_mmmu_sliding" in output
