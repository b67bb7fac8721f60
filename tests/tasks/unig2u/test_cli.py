"""Real-CLI runs of the UniG2U groups (Direct and GtA) on generated data, the judged subtasks against the
local test judge server, and the leaderboard's G2U gains."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_eval_unify.benchmarks.unig2u.data import generate
from lmms_eval_unify.benchmarks.unig2u.reference_judge import verdict
from lmms_eval_unify.benchmarks.unig2u.subtasks import SUBTASKS
from lmms_eval_unify.testing.openai_server import OpenAICompatServer

N_ITEMS = 3
BIN = Path(sys.executable).parent
TASKS = [f"unig2u_{name}{suffix}" for name in SUBTASKS for suffix in ("", "_gta")]
# Leaderboard column -> our category (all seven are complete).
CATEGORIES = {"Real-world Apps": "real_world_apps", "Geometry Reasoning": "geometry_reasoning",
              "Physics Reasoning": "physics_reasoning", "Puzzles & Games": "puzzles_games",
              "Chart & Table": "chart_table", "Spatial Intelligence": "spatial_intelligence",
              "Perception Reasoning": "perception_reasoning"}  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("unig2u_cli")
    generate(root / "data", N_ITEMS, seed=5)
    env = {**os.environ, "LMMS_EVAL_UNIFY_DATA_DIR": str(root / "data"), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1"}  # fmt: skip
    env.pop("LMMS_EVAL_UNIFY_OUTPUT_DIR", None)
    out = {}
    with OpenAICompatServer(verdict, max_lifetime_s=900) as judge_server:
        env |= {"LMMS_EVAL_UNIFY_JUDGE_BASE_URL": judge_server.base_url,
                "LMMS_EVAL_UNIFY_JUDGE_CACHE": str(root / "judge.sqlite")}  # fmt: skip
        for model in ("unify_oracle", "unify_random"):
            out[model] = root / model
            command = [str(BIN / "lmms-eval"), "--model", model, "--tasks", "unig2u,unig2u_gta",
                       "--output_path", str(out[model]), "--log_samples"]  # fmt: skip
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-3000:]
        assert judge_server.request_count > 0
    return root, out


def _results(run: Path) -> dict:
    return json.loads(next(run.rglob("*_results.json")).read_text())["results"]


def _samples(run: Path, task: str) -> list[dict]:
    return [json.loads(line) for line in next(run.rglob(f"*_samples_{task}.jsonl")).read_text().splitlines()]


@pytest.mark.slow
def test_oracle_scores_100_and_random_runs_in_both_modes(runs):
    _, out = runs
    oracle, random_ = _results(out["unify_oracle"]), _results(out["unify_random"])
    for task in TASKS:
        expected_n = 2 * N_ITEMS if task.startswith("unig2u_vsp_reason") else N_ITEMS
        assert len(_samples(out["unify_oracle"], task)) == expected_n, task
        assert oracle[task]["acc,none"] == 1.0, task
        assert oracle[task]["invalid_outputs,none"] == 0 and random_[task]["invalid_outputs,none"] == 0, task
        assert 0.0 <= random_[task]["acc,none"] <= 1.0, task
    assert sum(random_[t]["acc,none"] for t in TASKS) < 0.6 * len(TASKS)  # random is far from the oracle
    # GtA records keep the generated auxiliary image for RA/AL and the gallery.
    gta = _samples(out["unify_oracle"], "unig2u_chartqa_gta")[0]
    assert gta["details"]["generated_images"]


@pytest.mark.slow
def test_leaderboard_gains_match_a_hand_computation(runs):
    root, out = runs
    pairs = root / "pairs.yaml"
    pairs.write_text("pairs:\n  unify_oracle: unify_random\n")
    command = [str(BIN / "lmms-eval-unify"), "leaderboard", str(out["unify_oracle"]), str(out["unify_random"]),
               "--benchmark", "unig2u", "--pairs", str(pairs), "-o", str(root / "lb"), "--no-plots",
               "--bootstrap", "0"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {row["model"]: row for row in csv.DictReader((root / "lb" / "unig2u_gains.csv").open())}
    delta_direct = rows["unify_oracle: Δ_Direct (vs unify_random)"]
    delta_gta = rows["unify_oracle: Δ_GtA (GtA − Direct)"]
    for column, category in CATEGORIES.items():
        names = [n for n, s in SUBTASKS.items() if s.category == category]
        scored = [(s["acc"], 1) for n in names for s in _samples(out["unify_random"], f"unig2u_{n}")]
        base = 100 * sum(a for a, _ in scored) / len(scored)  # sample-weighted over the subtasks
        assert float(delta_direct[column]) == pytest.approx(100 - base, abs=1e-3), column
        assert float(delta_gta[column]) == pytest.approx(0.0, abs=1e-9), column
    # Overall = sample-weighted over the categories = the mean over every sample of the 30 subtasks (on the
    # published data the counts are the paper's 200, 200, 200, 537, 100, 500, 1263).
    scored = [s["acc"] for n in SUBTASKS for s in _samples(out["unify_random"], f"unig2u_{n}")]
    base_overall = 100 * sum(scored) / len(scored)
    assert float(delta_direct["Overall"]) == pytest.approx(100 - base_overall, abs=1e-3)
    assert float(delta_gta["Overall"]) == pytest.approx(0.0, abs=1e-9)
