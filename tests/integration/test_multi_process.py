"""Two processes (``torchrun``, gloo on CPU) give exactly what one gives, per sample and in aggregate, for a task
of each benchmark; both ranks share the judge cache and the media folder without loss or duplicate calls
(issue 26 item 2)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from cli_runs import BIN, offline_env

from lmms_eval_unify.benchmarks import part
from lmms_eval_unify.benchmarks.gapeval.reference_judge import verdict
from lmms_eval_unify.testing.openai_server import OpenAICompatServer

TASKS = "mme_unify_sipu,unig2u_chartqa_gta,uni_mmmu_maze,gapeval_reasoning_und,gapeval_reasoning_gen"
VOLATILE = ("filtered_resps", "resps", "token_counts")
"""Sample keys that hold timings (the raw record): the only ones allowed to differ."""


def run(root: Path, name: str, judge: OpenAICompatServer, cache: Path, processes: int) -> Path:
    out = root / name
    env = {**offline_env(root / "data"), "ACCELERATE_USE_CPU": "true", "LMMS_EVAL_UNIFY_JUDGE_BASE_URL": judge.base_url,
           "LMMS_EVAL_UNIFY_JUDGE_CACHE": str(cache)}  # fmt: skip
    launcher = [str(BIN / "torchrun"), "--nproc_per_node", str(processes), "-m", "lmms_eval"] if processes > 1 else [
        str(BIN / "lmms-eval")]  # fmt: skip
    command = [*launcher, "--model", "unify_random", "--tasks", TASKS, "--output_path", str(out), "--log_samples"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def judgements(judge: OpenAICompatServer) -> int:
    """Judge requests so far, not counting the preflight's one-word ping (each process checks the endpoint)."""
    return sum("Reply with the word OK." not in request.texts() for request in judge.requests_to())


def samples(out: Path) -> dict[str, list[dict]]:
    """Every task's rows with the run folder's path replaced, timings left out."""
    found = {}
    for path in sorted(out.glob("*_samples_*.jsonl")):
        task = path.stem.split("_samples_", 1)[1]
        text = path.read_text().replace(str(out), "<OUT>")
        rows = [{k: v for k, v in json.loads(line).items() if k not in VOLATILE} for line in text.splitlines()]
        found[task] = sorted(rows, key=lambda r: (r["doc_id"], r.get("repeat", 0)))
    return found


def scores(out: Path) -> dict[str, list[dict]]:
    """Every task's rows without their ``details`` (judge logs say whether a reply came from the cache)."""
    return {task: [{k: v for k, v in r.items() if k != "details"} for r in rows] for task, rows in samples(out).items()}


def aggregates(out: Path) -> dict:
    results = json.loads(next(out.glob("*_results.json")).read_text())
    return {task: metrics for task, metrics in results["results"].items()}


def cached_replies(cache: Path) -> int:
    with sqlite3.connect(cache) as db:
        (table,) = [name for (name,) in db.execute("select name from sqlite_master where type='table'")][:1]
        return db.execute(f"select count(*) from {table}").fetchone()[0]


@pytest.mark.slow
def test_two_processes_equal_one_per_sample_and_in_aggregate(tmp_path):
    for benchmark in ("mme_unify", "unig2u", "uni_mmmu", "gapeval"):
        part(benchmark, "offline.data").generate(tmp_path / "data", 4, seed=3)
    with OpenAICompatServer(verdict, max_lifetime_s=1800) as judge:
        one = run(tmp_path, "one", judge, tmp_path / "one.sqlite", 1)
        calls_one = judgements(judge)
        two = run(tmp_path, "two", judge, tmp_path / "two.sqlite", 2)
        calls_two = judgements(judge) - calls_one
        again = run(tmp_path, "again", judge, tmp_path / "two.sqlite", 1)
        calls_again = judgements(judge) - calls_one - calls_two
    assert samples(one) == samples(two) and len(samples(one)) == len(TASKS.split(","))
    assert aggregates(one) == aggregates(two)
    assert calls_one == calls_two > 0  # no judgement asked twice across the ranks
    assert cached_replies(tmp_path / "two.sqlite") == cached_replies(tmp_path / "one.sqlite") > 0
    assert calls_again == 0  # the cache both ranks wrote holds every judgement
    assert scores(again) == scores(one)  # the same scores from cached replies (the logs say "cached")
    media = sorted(p.relative_to(two / "unify_media") for p in (two / "unify_media").rglob("*.png"))
    assert media == sorted(p.relative_to(one / "unify_media") for p in (one / "unify_media").rglob("*.png")) and media
