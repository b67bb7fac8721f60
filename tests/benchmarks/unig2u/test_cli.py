"""Real-CLI runs of the UniG2U groups (Direct and GtA) on generated data, the judged subtasks against the
local test judge server, and the leaderboard's G2U gains."""

import csv
import subprocess

import pytest
from cli_runs import BIN, judged_cli_runs, offline_env, results_of, samples_of

from lmms_eval_unify.benchmarks.unig2u.offline.data import generate
from lmms_eval_unify.benchmarks.unig2u.reference_judge import verdict
from lmms_eval_unify.benchmarks.unig2u.spec import SUBTASKS

N_ITEMS = 3
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
    models = {"unify_oracle": [], "unify_random": []}
    return root, judged_cli_runs(root, "unig2u,unig2u_gta", verdict, offline_env(root / "data"), models)


@pytest.mark.slow
def test_oracle_scores_100_and_random_runs_in_both_modes(runs):
    _, out = runs
    oracle, random_ = results_of(out["unify_oracle"]), results_of(out["unify_random"])
    for task in TASKS:
        expected_n = 2 * N_ITEMS if task.startswith("unig2u_vsp_reason") else N_ITEMS
        assert len(samples_of(out["unify_oracle"], task)) == expected_n, task
        assert oracle[task]["acc,none"] == 1.0, task
        assert oracle[task]["invalid_outputs,none"] == 0 and random_[task]["invalid_outputs,none"] == 0, task
        assert 0.0 <= random_[task]["acc,none"] <= 1.0, task
    assert sum(random_[t]["acc,none"] for t in TASKS) < 0.6 * len(TASKS)  # random is far from the oracle
    # GtA records keep the generated auxiliary image for RA/AL and the gallery.
    gta = samples_of(out["unify_oracle"], "unig2u_chartqa_gta")[0]
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
        scored = [(s["acc"], 1) for n in names for s in samples_of(out["unify_random"], f"unig2u_{n}")]
        base = 100 * sum(a for a, _ in scored) / len(scored)  # sample-weighted over the subtasks
        assert float(delta_direct[column]) == pytest.approx(100 - base, abs=1e-3), column
        assert float(delta_gta[column]) == pytest.approx(0.0, abs=1e-9), column
    # Overall = sample-weighted over the categories = the mean over every sample of the 30 subtasks (on the
    # published data the counts are the paper's 200, 200, 200, 537, 100, 500, 1263).
    scored = [s["acc"] for n in SUBTASKS for s in samples_of(out["unify_random"], f"unig2u_{n}")]
    base_overall = 100 * sum(scored) / len(scored)
    assert float(delta_direct["Overall"]) == pytest.approx(100 - base_overall, abs=1e-3)
    assert float(delta_gta["Overall"]) == pytest.approx(0.0, abs=1e-9)
