"""The run lifecycle through the real ``lmms-eval`` CLI: preflight, exit status, sibling tasks, staged
scoring and per-configuration media folders (issue 14)."""

from __future__ import annotations

import importlib
import json
import socket
import subprocess
from pathlib import Path

import pytest
from cli_runs import BIN, offline_env, results_of, samples_of

pytestmark = pytest.mark.slow  # every test runs the real lmms-eval CLI

PUZZLES = "uni_mmmu_maze,uni_mmmu_sliding"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lifecycle_data")
    importlib.import_module("lmms_eval_unify.benchmarks.uni_mmmu.offline.data").generate(str(root), 4, 3)
    return root


def lmms_eval(out: Path, model: str, tasks: str, env: dict, *extra: str) -> subprocess.CompletedProcess:
    command = [str(BIN / "lmms-eval"), "--model", model, "--tasks", tasks, "--output_path", str(out)]
    return subprocess.run([*command, "--log_samples", *extra], env=env, capture_output=True, text=True, timeout=600)


def clean_env(data_dir: Path, **extra: str) -> dict:
    """An offline environment with no judge, no metric overrides and the preflight on, plus ``extra``."""
    env = offline_env(data_dir)
    unset = ("LMMS_EVAL_UNIFY_JUDGE", "OPENAI_", "LMMS_EVAL_UNIFY_UNI_MMMU", "LMMS_EVAL_UNIFY_DREAMSIM")
    for name in [n for n in env if n.startswith(unset) or n == "LMMS_EVAL_UNIFY_SKIP_PREFLIGHT"]:
        env.pop(name)
    return {**env, **extra}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_preflight_lists_every_missing_piece_and_generates_nothing(data_dir, tmp_path):
    """Missing DreamSim weights (jigsaw), no judge (geometry) and missing data (MME-Unify) in one listing."""
    out = tmp_path / "run"
    done = lmms_eval(out, "unify_oracle", "uni_mmmu_jigsaw,uni_mmmu_geometry,mme_unify_sipu", clean_env(data_dir))
    assert done.returncode == 2, done.stderr[-3000:]
    block = done.stderr
    assert "preflight: 3 problem(s); nothing was generated" in block
    assert "[weights] dreamsim backbone" in block and "LMMS_EVAL_UNIFY_DREAMSIM_DIR" in block
    assert "[judge] no model-as-judge endpoint is configured" in block and "uni_mmmu_geometry" in block
    assert "[data] cannot read the data of mme_unify_sipu" in block
    assert "data prepare mme_unify" in block and "huggingface-cli" not in block
    assert not list(out.rglob("*.png")) and not list(out.rglob("*_results.json"))


def test_preflight_pings_the_judge(data_dir, tmp_path):
    env = clean_env(data_dir, LMMS_EVAL_UNIFY_JUDGE_BASE_URL=f"http://127.0.0.1:{closed_port()}/v1",
                    LMMS_EVAL_UNIFY_JUDGE_API_KEY="sk-secret-key")  # fmt: skip
    done = lmms_eval(tmp_path / "run", "unify_oracle", "uni_mmmu_geometry", env)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "does not answer" in done.stderr and "uni_mmmu_geometry" in done.stderr
    assert "sk-secret-key" not in done.stderr + done.stdout


def test_preflight_without_data_dir_names_the_fix(tmp_path):
    env = clean_env(tmp_path)
    env.pop("LMMS_EVAL_UNIFY_DATA_DIR")
    done = lmms_eval(tmp_path / "run", "unify_oracle", "mme_unify_sipu", {**env, "PWD": str(tmp_path)})
    assert done.returncode == 2
    assert "reads local data only: set LMMS_EVAL_UNIFY_DATA_DIR" in done.stderr
    assert "ArrowInvalid" not in done.stderr and "EmptyDatasetError" not in done.stderr


def test_failed_task_exits_nonzero_and_siblings_keep_their_results(data_dir, tmp_path):
    out = tmp_path / "run"
    env = {**clean_env(data_dir), "LMMS_EVAL_UNIFY_SKIP_PREFLIGHT": "1"}
    done = lmms_eval(out, "unify_oracle", f"{PUZZLES},uni_mmmu_jigsaw", env)
    assert done.returncode == 1, done.stderr[-3000:]
    results = results_of(out)
    assert results["uni_mmmu_maze"]["text_sample_acc,none"] == 1.0
    assert results["uni_mmmu_sliding"]["img_step_acc,none"] == 1.0
    assert results["uni_mmmu_jigsaw"]["text_acc,none"] == "failed"
    jigsaw = samples_of(out, "uni_mmmu_jigsaw")
    assert jigsaw and all("MissingWeightsError" in row["details"]["scoring_error"] for row in jigsaw)
    assert "2 task(s) scored, 1 failed (uni_mmmu_jigsaw: scoring raised MissingWeightsError" in done.stderr


def test_model_that_cannot_be_built_exits_nonzero(data_dir, tmp_path):
    done = lmms_eval(tmp_path / "run", "unify_oracle", PUZZLES, clean_env(data_dir), "--model_args", "seed=x")
    assert done.returncode == 1
    assert (
        "run FAILED before any task was scored: ModelArgumentError: unify_oracle: model argument seed='x': "
        "expected int" in done.stderr
    )


def test_every_sample_invalid_exits_nonzero(data_dir, tmp_path):
    """The replay model with nothing saved answers every request with an error record."""
    missing = tmp_path / "nothing" / "x_results.json"
    done = lmms_eval(tmp_path / "run", "unify_replay", "uni_mmmu_maze", clean_env(data_dir),
                     "--model_args", f"results_file={missing}")  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    assert "uni_mmmu_maze: all 4 samples invalid" in done.stderr


def metric_values(results: dict, task: str) -> dict:
    return {k: v for k, v in results[task].items() if "stderr" not in k and k != "alias"}


def test_score_rescores_a_predict_only_run_to_the_normal_numbers(data_dir, tmp_path):
    env = clean_env(data_dir)
    normal, staged = tmp_path / "normal", tmp_path / "staged"
    assert lmms_eval(normal, "unify_random", PUZZLES, env, "--model_args", "seed=3").returncode == 0
    predicted = lmms_eval(staged, "unify_random", PUZZLES, env, "--model_args", "seed=3", "--predict_only")
    assert predicted.returncode == 0 and "predicted only" in predicted.stderr
    done = subprocess.run([str(BIN / "lmms-eval-unify"), "score", str(staged)], env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "served from saved records" in done.stderr
    rescored = results_of(staged / "scored")
    for task in PUZZLES.split(","):
        assert metric_values(rescored, task) == metric_values(results_of(normal), task)
        assert 0 < rescored[task]["text_step_acc,none"] < 1


def test_runs_with_different_model_args_keep_separate_media(data_dir, tmp_path):
    out, env = tmp_path / "run", clean_env(data_dir)
    roots = {}
    for seed in ("1", "2"):
        assert lmms_eval(out, "unify_random", "uni_mmmu_maze", env, "--model_args", f"seed={seed}").returncode == 0
        rows = sorted(out.rglob("*_samples_uni_mmmu_maze.jsonl"), key=lambda p: p.stat().st_mtime)[-1]
        records = [json.loads(json.loads(line)["filtered_resps"]) for line in rows.read_text().splitlines()]
        roots[seed] = {r["root"] for r in records}
        assert len(roots[seed]) == 1
        assert json.loads((Path(next(iter(roots[seed]))) / "model.json").read_text())["seed"] == int(seed)
    assert roots["1"] != roots["2"]
    assert len(list((out / "unify_media").iterdir())) == 2
