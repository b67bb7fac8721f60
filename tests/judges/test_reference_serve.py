"""``lmms-eval-unify judge serve``: the reference judges one command away, labelled as such (issue 26 item 4)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_runs import BIN, offline_env

from lmms_eval_unify.benchmarks import part
from lmms_eval_unify.judges.config import REFERENCE_JUDGE_MODEL
from lmms_eval_unify.judges.reference import NOT_JUDGED, reference_verdict
from lmms_eval_unify.testing.openai_server import ChatRequest

TASKS = "gapeval_reasoning_und,gapeval_reasoning_gen,uni_mmmu_geometry,unig2u_geometry"


def test_a_prompt_no_benchmark_recognises_gets_no_verdict():
    request = ChatRequest({"model": "m", "messages": [{"role": "user", "content": "Is the sky green?"}]}, {})
    assert reference_verdict(request) == NOT_JUDGED


@pytest.mark.slow
def test_served_reference_judges_judge_every_benchmark_and_tables_say_so(tmp_path):
    for benchmark in ("gapeval", "uni_mmmu", "unig2u"):
        part(benchmark, "offline.data").generate(tmp_path / "data", 3, seed=5)
    server = subprocess.Popen([str(BIN / "lmms-eval-unify"), "judge", "serve"], stdout=subprocess.PIPE, text=True)
    try:
        lines = [server.stdout.readline() for _ in range(4)]
        exports = dict(line.removeprefix("export ").strip().split("=", 1) for line in lines[1:])
        assert exports["LMMS_EVAL_UNIFY_JUDGE_MODEL"] == REFERENCE_JUDGE_MODEL
        env = {**offline_env(tmp_path / "data"), **exports}
        out = tmp_path / "run"
        command = [str(BIN / "lmms-eval"), "--model", "unify_oracle", "--tasks", TASKS, "--output_path", str(out),
                   "--log_samples"]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
    finally:
        server.terminate()
        server.wait(timeout=30)
    results = json.loads(next(out.glob("*_results.json")).read_text())["results"]
    for task in TASKS.split(","):
        assert results[task]["invalid_outputs,none"] == 0, task
    assert results["gapeval_reasoning_und"]["correct,none"] == 1.0
    board = tmp_path / "board"
    done = subprocess.run([str(BIN / "lmms-eval-unify"), "leaderboard", str(out), "--no-plots", "-o", str(board)],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    for table in ("gapeval", "uni_mmmu", "unig2u"):
        text = (board / "leaderboard.md").read_text()
        assert f"{table}_" in text and "judged by the offline reference judge" in text
    site = tmp_path / "site"
    done = subprocess.run([str(BIN / "lmms-eval-unify"), "gallery", str(out), "-o", str(site)], capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert REFERENCE_JUDGE_MODEL in "".join(p.read_text() for p in Path(site).rglob("*.html"))
