"""Real-CLI runs of the `gapeval` group (oracle once, random with --repeats 2) against the local judge server
with the reference policy, then `lmms-eval-unify leaderboard --benchmark gapeval` on their samples."""

import csv
import subprocess

import pytest
from cli_runs import BIN, judged_cli_runs, offline_env, results_of, samples_of

from lmms_eval_unify.benchmarks.gapeval.offline.data import generate
from lmms_eval_unify.benchmarks.gapeval.paper import CATEGORIES, JOINT_CELLS, task_names
from lmms_eval_unify.benchmarks.gapeval.reference_judge import verdict

N_ITEMS = 4
TASKS = [t for c in CATEGORIES for t in task_names(c)]
RANDOM_REPEATS = 2


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gapeval_cli")
    generate(root / "data", N_ITEMS, seed=7)
    models = {"unify_oracle": [], "unify_random": ["--repeats", str(RANDOM_REPEATS)]}
    return root, judged_cli_runs(root, "gapeval", verdict, offline_env(root / "data"), models)


@pytest.mark.slow
def test_oracle_scores_100_and_random_repeats_get_their_ownsamples_of(runs):
    _, out = runs
    oracle, random_ = results_of(out["unify_oracle"]), results_of(out["unify_random"])
    for task in TASKS:
        assert len(samples_of(out["unify_oracle"], task)) == N_ITEMS, task
        assert oracle[task]["correct,none"] == 1.0, task
        assert oracle[task]["invalid_outputs,none"] == 0 and random_[task]["invalid_outputs,none"] == 0, task
        rows = samples_of(out["unify_random"], task)
        assert [(r["doc_id"], r["repeat"]) for r in rows] == [(i, i % RANDOM_REPEATS) for i in range(len(rows))]
        assert len({r["question_id"] for r in rows}) == N_ITEMS and len(rows) == N_ITEMS * RANDOM_REPEATS
        if task.endswith("_gen"):  # every repeat drew its own image into its own folder
            assert len({r["details"]["generated_images"][0] for r in rows}) == len(rows)
    # Random picks uniformly among 4 candidates per direction: chance 25%.
    mean = sum(random_[t]["correct,none"] for t in TASKS) / len(TASKS)
    assert 0.0 < mean < 0.6, mean


@pytest.mark.slow
def test_leaderboard_succ_und_gen_and_gap_from_thesamples_of(runs):
    root, out = runs
    command = [str(BIN / "lmms-eval-unify"), "leaderboard", str(out["unify_oracle"]), str(out["unify_random"]),
               "--benchmark", "gapeval", "-o", str(root / "lb"), "--no-plots", "--bootstrap", "0"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Unpaired" not in done.stdout
    rows = {row["model"]: row for row in csv.DictReader((root / "lb" / "gapeval_table2.csv").open())}
    counts = {row["model"]: row for row in csv.DictReader((root / "lb" / "gapeval_joint_counts.csv").open())}
    for category in CATEGORIES:
        for part in ("Succ.", "Und.", "Gen."):
            assert float(rows["unify_oracle"][f"{category} {part}"]) == pytest.approx(100.0)
        und, gen = (samples_of(out["unify_random"], t) for t in task_names(category))
        gen_by = {(r["question_id"], r["repeat"]): r["correct"] for r in gen}
        pairs = [(r["correct"], gen_by[(r["question_id"], r["repeat"])]) for r in und]
        expected = {"Succ.": sum(u * g for u, g in pairs), "Und.": sum(u for u, _ in pairs),
                    "Gen.": sum(g for _, g in pairs)}  # fmt: skip
        for part, hits in expected.items():
            assert float(rows["unify_random"][f"{category} {part}"]) == pytest.approx(100 * hits / len(pairs), abs=1e-3)
        random_counts = [float(counts["unify_random"][f"{category} {cell}"]) for cell in JOINT_CELLS]
        n10, n01 = expected["Und."] - expected["Succ."], expected["Gen."] - expected["Succ."]
        assert random_counts == pytest.approx(
            [expected["Succ."], n10, n01, len(pairs) - expected["Succ."] - n10 - n01], abs=1e-6
        )
        oracle_counts = [float(counts["unify_oracle"][f"{category} {cell}"]) for cell in JOINT_CELLS]
        assert oracle_counts == pytest.approx([N_ITEMS, 0, 0, 0], abs=1e-6)
        for model in rows:
            assert 0.0 <= float(rows[model][f"{category} Gap"]) <= 100.0
    assert 0.0 <= float(rows["unify_oracle"]["Overall Gap"]) < float(rows["unify_random"]["Overall Gap"]) <= 100.0
