"""``lmms-eval-unify score`` reads what is intact and reports what is not (issue 25)."""

from __future__ import annotations

import importlib
import json
import subprocess
import time

import pytest
from cli_runs import BIN, offline_env, results_of

from lmms_eval_unify.commands import score
from lmms_eval_unify.run.saved import read_saved_samples, saved_runs
from lmms_eval_unify.testing.synthetic import write_run

PUZZLES = ("uni_mmmu_maze", "uni_mmmu_sliding")


def _row(doc_id: int) -> dict:
    return {"doc_id": doc_id, "resps": [[f"answer {doc_id}"]], "filtered_resps": [f"answer {doc_id}"]}


def _samples(results, task):
    return results.with_name(results.name.replace("_results.json", f"_samples_{task}.jsonl"))


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2 + 3],  # cut mid-line
        lambda text: text.replace('"doc_id": 1,', '"doc_id": 1,,', 1),  # a corrupt line
        lambda text: text.replace('"doc_id": 1,', '"doc_id": "one",', 1),  # a line of the wrong shape
    ],
)
def test_a_damaged_samples_file_costs_only_its_task(tmp_path, monkeypatch, capsys, damage):
    results = write_run(tmp_path / "run", "m", {task: [_row(i) for i in range(3)] for task in PUZZLES})
    config = {"model": "unify_random", "resolved_cli_args": {"tasks": "uni_mmmu"}}
    summary = json.loads(results.read_text())
    summary |= {"config": config, "group_subtasks": {"uni_mmmu": list(PUZZLES), **{t: [] for t in PUZZLES}}}
    results.write_text(json.dumps(summary))
    broken = _samples(results, "uni_mmmu_sliding")
    broken.write_text(damage(broken.read_text()))
    commands = []
    monkeypatch.setattr(score.subprocess, "run", lambda command: commands.append(command) or _Done())

    status = score.main([str(tmp_path / "run")])

    assert status == 1
    (command,) = commands
    assert command[command.index("--tasks") + 1] == "uni_mmmu_maze"  # the group, less its damaged member
    report = capsys.readouterr().err
    assert "uni_mmmu_sliding not scored again" in report and f"{broken}:2" in report
    saved = read_saved_samples(results)
    assert [key for key in saved.responses if key[0] == "uni_mmmu_maze"] == [("uni_mmmu_maze", i) for i in range(3)]
    assert ("uni_mmmu_sliding", 0) in saved.responses  # the intact lines of the damaged file are still read


class _Done:
    returncode = 0


def test_unreadable_results_files_are_reported_and_skipped(tmp_path, capsys):
    write_run(tmp_path / "run", "m", {"uni_mmmu_maze": [_row(0)]})
    (tmp_path / "run" / "x").mkdir()
    (tmp_path / "run" / "x" / "20260101T000000_results.json").write_text("{cut")
    (tmp_path / "run" / "x" / "20260102T000000_results.json").write_text("[1, 2]")
    runs = saved_runs(tmp_path / "run")
    assert [run.label for run in runs] == ["m"]
    report = capsys.readouterr().err
    assert report.count("score: skipped") == 2 and "not valid JSON" in report


@pytest.mark.slow
def test_score_rescores_the_intact_tasks_of_a_run_whose_samples_file_was_cut(tmp_path):
    """Through the real CLI: a samples file cut mid-line gave a raw JSONDecodeError traceback and no task was
    scored; now the intact task is scored again, the cut one is reported with file:line, and the exit is 1."""
    data = tmp_path / "data"
    importlib.import_module("lmms_eval_unify.benchmarks.uni_mmmu.offline.data").generate(str(data), 3, 3)
    env = offline_env(data)
    run = tmp_path / "run"
    command = [str(BIN / "lmms-eval"), "--model", "unify_random", "--tasks", ",".join(PUZZLES), "--output_path",
               str(run), "--log_samples", "--predict_only"]  # fmt: skip
    assert subprocess.run(command, env=env, capture_output=True, text=True, timeout=600).returncode == 0
    (cut,) = run.rglob("*_samples_uni_mmmu_sliding.jsonl")
    cut.write_text(cut.read_text()[:-40])
    done = subprocess.run([str(BIN / "lmms-eval-unify"), "score", str(run)], env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and f"{cut}:3" in done.stderr
    assert set(results_of(run / "scored")) >= {"uni_mmmu_maze"} and "uni_mmmu_sliding" not in results_of(run / "scored")


def _scores(results_file) -> dict:
    """What a results file says about the samples: scores, sample counts and the samples' hashes."""
    data = json.loads(results_file.read_text())
    return {key: data.get(key) for key in ("results", "n-samples", "task_hashes")}


def _samples_rows(path) -> list[dict]:
    volatile = ("resps", "filtered_resps", "token_counts")
    return [{k: v for k, v in json.loads(line).items() if k not in volatile} for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_two_score_calls_on_one_run_take_turns_and_each_writes_what_one_alone_writes(tmp_path):
    """Both calls start while the test holds the run folder, so both say they wait; once it is let go they contend
    for it and take turns. Every doc is written once per call and no results file is replaced (checked by counts:
    two results files with the same scores, each samples file with one row per doc), as two calls one after the
    other would leave it."""
    from lmms_eval_unify.puzzles.dataset import write_puzzles
    from lmms_eval_unify.writes import folder_lock

    write_puzzles(tmp_path / "data" / "uni_mmmu", 3, 2, seed=1)
    env = offline_env(tmp_path / "data")
    run = tmp_path / "run"
    command = [str(BIN / "lmms-eval"), "--model", "unify_oracle", "--tasks", "uni_mmmu_maze", "--output_path",
               str(run), "--log_samples"]  # fmt: skip
    assert subprocess.run(command, env=env, capture_output=True, text=True, timeout=600).returncode == 0
    logs = [tmp_path / f"score_{i}.log" for i in range(2)]
    with folder_lock(run, "test"):
        calls = [subprocess.Popen([str(BIN / "lmms-eval-unify"), "score", str(run)], env=env,
                                  stderr=log.open("w"), stdout=subprocess.DEVNULL) for log in logs]  # fmt: skip
        for _ in range(600):  # both must be waiting before the folder is let go
            if all("is being written by test" in log.read_text() for log in logs):
                break
            time.sleep(0.5)
    codes = [call.wait(timeout=900) for call in calls]
    texts = [log.read_text() for log in logs]
    assert codes == [0, 0], "\n".join(text[-3000:] for text in texts)
    assert [text.count("is being written by test") for text in texts] == [1, 1]
    assert all(text.count("is free, going on") == 1 for text in texts)
    results = sorted((run / "scored").rglob("*_results.json"))
    samples = sorted((run / "scored").rglob("*_samples_uni_mmmu_maze.jsonl"))
    assert len(results) == 2 and len(samples) == 2
    assert [sorted(row["doc_id"] for row in _samples_rows(path)) for path in samples] == [[0, 1, 2], [0, 1, 2]]
    assert _samples_rows(samples[0]) == _samples_rows(samples[1])
    assert _scores(results[0]) == _scores(results[1]) and _scores(results[0])["results"]
