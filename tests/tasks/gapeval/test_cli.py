"""Real-CLI runs of the `gapeval` group (oracle once, random with --repeats 2) against the local judge server
with the reference policy, then `lmms-eval-unify leaderboard --benchmark gapeval` on their samples."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_eval_unify.benchmarks.gapeval.data import generate
from lmms_eval_unify.benchmarks.gapeval.reference_judge import verdict
from lmms_eval_unify.scoring.gapeval import CATEGORIES, task_names
from lmms_eval_unify.testing.openai_server import OpenAICompatServer

N_ITEMS = 4
BIN = Path(sys.executable).parent
TASKS = [t for c in CATEGORIES for t in task_names(c)]
RANDOM_REPEATS = 2


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gapeval_cli")
    generate(root / "data", N_ITEMS, seed=7)
    env = {**os.environ, "LMMS_EVAL_UNIFY_DATA_DIR": str(root / "data"), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1"}  # fmt: skip
    env.pop("LMMS_EVAL_UNIFY_OUTPUT_DIR", None)
    out = {}
    with OpenAICompatServer(verdict, max_lifetime_s=900) as judge_server:
        env |= {"LMMS_EVAL_UNIFY_JUDGE_BASE_URL": judge_server.base_url,
                "LMMS_EVAL_UNIFY_JUDGE_CACHE": str(root / "judge.sqlite")}  # fmt: skip
        for model, extra in (("unify_oracle", []), ("unify_random", ["--repeats", str(RANDOM_REPEATS)])):
            out[model] = root / model
            command = [str(BIN / "lmms-eval"), "--model", model, "--tasks", "gapeval",
                       "--output_path", str(out[model]), "--log_samples", *extra]  # fmt: skip
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-3000:]
        assert judge_server.request_count > 0
    return root, out


def _results(run: Path) -> dict:
    return json.loads(next(run.rglob("*_results.json")).read_text())["results"]


def _samples(run: Path, task: str) -> list[dict]:
    return [json.loads(line) for line in next(run.rglob(f"*_samples_{task}.jsonl")).read_text().splitlines()]


@pytest.mark.slow
def test_oracle_scores_100_and_random_repeats_get_their_own_samples(runs):
    _, out = runs
    oracle, random_ = _results(out["unify_oracle"]), _results(out["unify_random"])
    for task in TASKS:
        assert len(_samples(out["unify_oracle"], task)) == N_ITEMS, task
        assert oracle[task]["correct,none"] == 1.0, task
        assert oracle[task]["invalid_outputs,none"] == 0 and random_[task]["invalid_outputs,none"] == 0, task
        rows = _samples(out["unify_random"], task)
        assert [(r["doc_id"], r["repeat"]) for r in rows] == [
            (i, i % RANDOM_REPEATS) for i in range(len(rows))
        ]
        assert len({r["question_id"] for r in rows}) == N_ITEMS and len(rows) == N_ITEMS * RANDOM_REPEATS
        if task.endswith("_gen"):  # every repeat drew its own image into its own folder
            assert len({r["details"]["generated_images"][0] for r in rows}) == len(rows)
    # Random picks uniformly among 4 candidates per direction: chance 25%.
    mean = sum(random_[t]["correct,none"] for t in TASKS) / len(TASKS)
    assert 0.0 < mean < 0.6, mean


@pytest.mark.slow
def test_leaderboard_succ_und_gen_and_gap_from_the_samples(runs):
    root, out = runs
    command = [str(BIN / "lmms-eval-unify"), "leaderboard", str(out["unify_oracle"]), str(out["unify_random"]),
               "--benchmark", "gapeval", "-o", str(root / "lb"), "--no-plots", "--bootstrap", "0"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Unpaired" not in done.stdout
    rows = {row["model"]: row for row in csv.DictReader((root / "lb" / "gapeval_table2.csv").open())}
    for category in CATEGORIES:
        for part in ("Succ.", "Und.", "Gen."):
            assert float(rows["unify_oracle"][f"{category} {part}"]) == pytest.approx(100.0)
        und, gen = (_samples(out["unify_random"], t) for t in task_names(category))
        gen_by = {(r["question_id"], r["repeat"]): r["correct"] for r in gen}
        pairs = [(r["correct"], gen_by[(r["question_id"], r["repeat"])]) for r in und]
        expected = {"Succ.": sum(u * g for u, g in pairs), "Und.": sum(u for u, _ in pairs),
                    "Gen.": sum(g for _, g in pairs)}  # fmt: skip
        for part, hits in expected.items():
            assert float(rows["unify_random"][f"{category} {part}"]) == pytest.approx(
                100 * hits / len(pairs), abs=1e-3
            )
        for model in rows:
            assert 0.0 <= float(rows[model][f"{category} Gap"]) <= 100.0
    assert (
        0.0
        <= float(rows["unify_oracle"]["Overall Gap"])
        < float(rows["unify_random"]["Overall Gap"])
        <= 100.0
    )
