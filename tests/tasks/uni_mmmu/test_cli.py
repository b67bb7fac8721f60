"""Real-CLI runs of the uni_mmmu group (maze, sliding, jigsaw) with both baselines on generated data."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_eval_unify.benchmarks.uni_mmmu.data import generate
from lmms_eval_unify.benchmarks.uni_mmmu.jigsaw import METRICS_ENV
from lmms_eval_unify.metrics.tiny import TINY_DREAMSIM_TYPE, write_tiny_dreamsim_checkpoint

BIN = Path(sys.executable).parent
N_ITEMS = 8


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("uni_mmmu_cli")
    generate(root / "data", N_ITEMS, seed=4)
    (root / "dreamsim").mkdir()
    write_tiny_dreamsim_checkpoint(root / "dreamsim")
    metrics = {"dreamsim": {"backbone": TINY_DREAMSIM_TYPE, "weights": str(root / "dreamsim"), "device": "cpu"}}
    env = {**os.environ, "LMMS_EVAL_UNIFY_DATA_DIR": str(root / "data"), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", METRICS_ENV: json.dumps(metrics)}  # fmt: skip
    env.pop("LMMS_EVAL_UNIFY_OUTPUT_DIR", None)
    results = {}
    for model in ("unify_oracle", "unify_random"):
        command = [str(BIN / "lmms-eval"), "--model", model, "--tasks", "uni_mmmu",
                   "--output_path", str(root / model), "--log_samples"]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        results[model] = json.loads(next((root / model).rglob("*_results.json")).read_text())["results"]
    return results


@pytest.mark.slow
def test_oracle_scores_100_on_every_subtask(runs):
    oracle = runs["unify_oracle"]
    for task in ("uni_mmmu_maze", "uni_mmmu_sliding", "uni_mmmu_jigsaw"):
        metrics = {k.split(",")[0]: v for k, v in oracle[task].items() if "," in k and "stderr" not in k}
        scores = {k: v for k, v in metrics.items() if k not in ("invalid_outputs", "details")}
        assert len(scores) >= 2 and all(v == pytest.approx(1.0) for v in scores.values()), (task, scores)
        assert metrics["invalid_outputs"] == 0


@pytest.mark.slow
def test_random_jigsaw_is_below_oracle(runs):
    jig = runs["unify_random"]["uni_mmmu_jigsaw"]
    assert 0.0 <= jig["text_acc,none"] <= 1.0
    assert jig["img_score,none"] < 1.0
    assert jig["invalid_outputs,none"] == 0
