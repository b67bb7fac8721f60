"""Samples are never silently lost: a plain lmms-eval model (not a ``UnifiedModel``) whose answers hold lone
surrogates still gets its samples file written; when lmms-eval's writer fails anyway, the run exits non-zero
naming the task and the file."""

from __future__ import annotations

import datetime
import json
import subprocess
from pathlib import Path

import pytest
from cli_runs import BIN, offline_env, write_model_plugin

from lmms_eval_unify.integration.run_hooks import make_samples_encodable
from lmms_eval_unify.puzzles.dataset import write_puzzles

PLUGIN = "surrogate_model"


def test_every_string_of_the_samples_becomes_encodable_in_place() -> None:
    samples = {"t": [{"resps": [["a\ud800b"]], "doc": {"k\udfff": ("x\ud83d", 3)}, "n": 1.5, "ok": "fine"}]}
    row = samples["t"][0]
    assert make_samples_encodable(samples) is samples and samples["t"][0] is row
    json.dumps(samples, ensure_ascii=False).encode("utf-8")
    assert row["ok"] == "fine" and row["n"] == 1.5 and row["resps"][0][0].startswith("a\ufffd")
    (key,) = row["doc"]
    assert key.startswith("k\ufffd") and row["doc"][key][1] == 3


def write_plugin(root: Path) -> Path:
    """A plain lmms-eval model plugin answering with lone and split surrogates."""
    answer = repr("lone \udc80 surrogates \ud800 and a split pair \ud83d\ude00")
    return write_model_plugin(root, PLUGIN, "SurrogateModel", answer)


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("samples_never_lost")
    write_puzzles(root / "data" / "uni_mmmu", 3, 2, seed=1)
    return {**offline_env(root / "data"), "PYTHONPATH": str(write_plugin(root / "plugin"))}


def run(out: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    command = [str(BIN / "lmms-eval"), "--model", PLUGIN, "--tasks", "uni_mmmu_maze,uni_mmmu_sliding",
               "--output_path", str(out), "--log_samples", *extra]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_lone_surrogates_of_a_plain_model_are_written_to_the_samples_file(plugin_env, tmp_path):
    done = run(tmp_path / "out", plugin_env)
    assert done.returncode == 0, done.stderr[-3000:]
    for task, n in (("uni_mmmu_maze", 3), ("uni_mmmu_sliding", 2)):
        (path,) = (tmp_path / "out").rglob(f"*_samples_{task}.jsonl")
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert len(rows) == n
        assert all(row["filtered_resps"].startswith("lone \ufffd") for row in rows)
    assert "could not save sample results" not in done.stderr.lower()


@pytest.mark.slow
def test_a_samples_file_the_writer_cannot_write_makes_the_run_exit_nonzero_naming_the_task(plugin_env, tmp_path):
    """A folder stands where the maze samples file goes (for every second the run may start in): lmms-eval's
    writer logs a warning and goes on; the run must fail, naming the task and the file."""
    out = tmp_path / "out"
    now = datetime.datetime.now(datetime.UTC)
    for second in range(600):
        stamp = (now + datetime.timedelta(seconds=second)).strftime("%Y%m%d_%H%M%S")
        (out / f"{stamp}_samples_uni_mmmu_maze.jsonl").mkdir(parents=True)
    done = run(out, plugin_env, "--timezone", "UTC")
    assert done.returncode == 1, done.stderr[-3000:]
    assert next(out.rglob("*_results.json")).is_file()
    (sliding,) = out.rglob("*_samples_uni_mmmu_sliding.jsonl")
    assert len(sliding.read_text().splitlines()) == 2
    summary = next(line for line in reversed(done.stderr.splitlines()) if "task(s) scored" in line)  # caveats follow
    assert "1 task(s) scored, 1 failed (uni_mmmu_maze: samples file" in summary, summary
    assert "_samples_uni_mmmu_maze.jsonl holds 0 of its 3 samples" in done.stderr
