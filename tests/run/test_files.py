"""lmms-eval's own results and samples files go through the write gate (issue "One gate for every byte we write",
item 2): the same bytes as lmms-eval's writers, nothing written through a symlink planted under ``--output_path``
(checked before the run and again at the write), no secret of the model arguments in any file of a run."""

from __future__ import annotations

import copy
import datetime
import json
import os
import subprocess
from pathlib import Path

import pytest
from cli_runs import BIN, offline_env, write_model_plugin
from lmms_eval.loggers.evaluation_tracker import EvaluationTracker

from lmms_eval_unify.integration import run_hooks
from lmms_eval_unify.integration.preflight import OUTPUT, output_problems
from lmms_eval_unify.puzzles.dataset import write_puzzles
from lmms_eval_unify.run import status as run_status
from lmms_eval_unify.run.files import (
    count_rows,
    redact_model_args,
    run_files,
    run_root,
    save_results,
    save_samples,
    unused_date_id,
)
from lmms_eval_unify.writes import LOCK_FILE

SECRET = "sk-run-files-0123456789SECRET"
STAMP = "20260102_030405"


def original(method: object) -> object:
    """lmms-eval's own writer, under the run hooks' wrapper if they are installed."""
    return getattr(method, "__wrapped__", method)


def tracker(out: Path, model_args: str = "pretrained=org/some-model") -> EvaluationTracker:
    made = EvaluationTracker(output_path=str(out))
    made.general_config_tracker.log_experiment_args("hf", model_args, None, None, False)
    return made


def logged_samples() -> list[dict]:
    """Samples as lmms-eval hands them to its writer (three shapes of ``resps``)."""
    base = {"doc": {"q": 1}, "target": 3, "doc_hash": "h", "arguments": [("prompt ‡", {})]}
    return [
        {**base, "doc_id": 0, "resps": [["a"]], "filtered_resps": ["a"]},
        {**base, "doc_id": 1, "resps": [["b", "c"]], "filtered_resps": ["b"]},
        {**base, "doc_id": 2, "resps": [[{"x": 1}]], "filtered_resps": [{"x": 1}]},
    ]


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_text("untouched", encoding="utf-8")
    return path


def test_the_gated_writers_write_the_bytes_lmms_eval_writes(tmp_path: Path) -> None:
    theirs, ours = tracker(tmp_path / "theirs"), tracker(tmp_path / "ours")
    results = {"results": {"t": {"acc,none": 0.5}}, "config": {"model": "m"}, "note": "‡"}
    samples = {"t": logged_samples()}
    original(EvaluationTracker.save_results_aggregated)(theirs, copy.deepcopy(results), samples, STAMP)
    assert save_results(ours, copy.deepcopy(results), samples, STAMP) is None
    original(EvaluationTracker.save_results_samples)(theirs, "t", logged_samples())
    assert save_samples(ours, "t", logged_samples()) is None
    written = {p.relative_to(tmp_path / "theirs"): p for p in (tmp_path / "theirs").rglob("*") if p.is_file()}
    assert sorted(map(str, written)) == [
        f"org__some-model/{STAMP}_results.json",
        f"org__some-model/{STAMP}_samples_t.jsonl",
    ]
    for relative, path in written.items():
        mine = (tmp_path / "ours" / relative).read_text(encoding="utf-8")
        if relative.name.endswith("_results.json"):  # the evaluation times differ
            assert timeless(mine) == timeless(path.read_text(encoding="utf-8"))
        else:
            assert mine == path.read_text(encoding="utf-8")


def timeless(text: str) -> dict:
    """A results file's JSON without the evaluation's times."""
    volatile = ("start_time", "end_time", "total_evaluation_time_seconds")
    return {key: value for key, value in json.loads(text).items() if key not in volatile}


def test_a_second_run_of_the_same_second_keeps_its_own_files(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    assert unused_date_id(folder, STAMP) == STAMP
    (folder / f"{STAMP}_results.json").write_text("{}")
    (folder / "20260102_030406_results.json").write_text("{}")
    (folder / "20260102_030407_results.json").symlink_to(tmp_path / "elsewhere")  # for the write gate to refuse
    assert unused_date_id(folder, STAMP) == "20260102_030407"
    assert unused_date_id(folder, "not-a-date") == "not-a-date"


@pytest.mark.parametrize("where", ["results", "samples", "folder"])
def test_a_symlink_planted_after_the_preflight_is_refused_at_the_write_and_fails_the_run(
    tmp_path: Path, victim: Path, monkeypatch, where: str
) -> None:
    for name in ("save_results_aggregated", "save_results_samples"):  # restored after the test
        monkeypatch.setattr(EvaluationTracker, name, original(getattr(EvaluationTracker, name)))
    monkeypatch.setattr(run_hooks, "_exit_code", None)
    monkeypatch.setattr(run_status, "_status", run_status.RunStatus(scored=["scored_task"]))
    run_hooks._guard_tracker_writers()
    out = tmp_path / "out"
    folder = out / "org__some-model"
    if where == "folder":
        out.mkdir()
        folder.symlink_to(victim.parent, target_is_directory=True)
    else:
        folder.mkdir(parents=True)
        name = f"{STAMP}_results.json" if where == "results" else f"{STAMP}_samples_t.jsonl"
        (folder / name).symlink_to(victim)
    before = sorted(p.name for p in victim.parent.iterdir())
    made = tracker(out)
    made.save_results_aggregated({"results": {}}, None, STAMP)
    made.save_results_samples("t", logged_samples())
    assert victim.read_text(encoding="utf-8") == "untouched"
    assert sorted(p.name for p in victim.parent.iterdir()) == before
    assert run_hooks._exit_code == 1
    status = run_status.status()
    if where in ("results", "folder"):
        assert status.scored == [] and "results file not written" in status.failed["scored_task"]
        assert "symlink" in status.failed["scored_task"]
    if where in ("samples", "folder"):
        assert (
            "t" in status.failed
            and "holds 0 of its 3 samples (the write gate refused it: symlink" in (status.failed["t"])
        )


def test_the_row_count_never_reads_through_a_symlink(tmp_path: Path, victim: Path) -> None:
    (tmp_path / "rows.jsonl").symlink_to(victim)
    os.mkfifo(tmp_path / "fifo.jsonl")
    (tmp_path / "real.jsonl").write_text("1\n2\n")
    assert count_rows(tmp_path / "rows.jsonl") == 0 and count_rows(tmp_path / "fifo.jsonl") == 0
    assert count_rows(tmp_path / "real.jsonl", tmp_path) == 2


def test_the_preflight_names_what_stands_where_the_run_writes(tmp_path: Path, victim: Path) -> None:
    out = tmp_path / "out"
    files = run_files(str(out), "pretrained=org/m,api_key=x", STAMP, ["maze", "sliding"])
    assert [p.name for p in files] == [f"{STAMP}_results.json", f"{STAMP}_samples_maze.jsonl",
                                       f"{STAMP}_samples_sliding.jsonl"]  # fmt: skip
    assert all(p.parent == run_root(out) / "org__m" for p in files)
    assert output_problems(files, run_root(out)) == []  # nothing there yet
    files[0].parent.mkdir(parents=True)
    files[0].symlink_to(victim)
    os.mkfifo(files[1])
    files[2].mkdir()  # a folder at a file's name fails that file when written, not the whole run
    problems = output_problems(files, run_root(out))
    assert [p.kind for p in problems] == [OUTPUT, OUTPUT]
    assert "symlink" in problems[0].what and "not_regular_file" in problems[1].what and "remove" in problems[0].fix


def test_secrets_leave_the_results_and_the_cli_arguments(monkeypatch) -> None:
    from types import SimpleNamespace

    args = f"pretrained=m,api_key={SECRET},und_args='model=x,token={SECRET}'"
    results = {"config": {"model_args": "lmms-eval's own redaction", "resolved_cli_args": {"model_args": "its too"}}}
    cli_args = SimpleNamespace(model_args=args)
    redact_model_args(results, args, cli_args)
    shown = json.dumps(results) + cli_args.model_args
    assert SECRET not in shown and shown.count("[REDACTED:") == 6 and "pretrained=m" in cli_args.model_args


# ---- through the real CLI --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def puzzle_env(tmp_path_factory) -> dict[str, str]:
    data = tmp_path_factory.mktemp("run_files") / "data"
    write_puzzles(data / "uni_mmmu", 3, 2, seed=1)
    return offline_env(data)


def oracle_run(out: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = [str(BIN / "lmms-eval"), "--model", "unify_oracle", "--tasks", "uni_mmmu_maze", "--output_path",
               str(out), "--log_samples", "--timezone", "UTC"]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


def plant_for_the_next_minutes(out: Path, name: str, victim: Path) -> None:
    """A symlink to ``victim`` at ``<date_id><name>`` for every second the run may start in (UTC)."""
    out.mkdir(parents=True)
    now = datetime.datetime.now(datetime.UTC)
    for second in range(300):
        stamp = (now + datetime.timedelta(seconds=second)).strftime("%Y%m%d_%H%M%S")
        (out / f"{stamp}{name}").symlink_to(victim)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["_results.json", "_samples_uni_mmmu_maze.jsonl"])
def test_a_run_whose_files_are_planted_symlinks_stops_before_anything_and_leaves_the_victim(
    puzzle_env, tmp_path, victim, name
):
    out = tmp_path / "out"
    plant_for_the_next_minutes(out, name, victim)
    done = oracle_run(out, puzzle_env)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "[output] the run would write" in done.stderr and "Traceback" not in done.stderr
    assert f"{name} through what stands there: symlink: a symlink stands at the file's name" in done.stderr
    assert victim.read_text(encoding="utf-8") == "untouched"
    assert not list(out.rglob("unify_media"))  # stopped before the model was built


def write_plain_plugin(root: Path) -> Path:
    """A plain lmms-eval model plugin that takes any model argument (an API key included)."""
    return write_model_plugin(root, "plain_model", "PlainModel", '"A"')


@pytest.mark.slow
def test_no_file_of_a_run_and_nothing_it_prints_holds_the_api_key_and_leftovers_are_swept(puzzle_env, tmp_path):
    out = tmp_path / "out"
    (out / "model").mkdir(parents=True)
    leftover = out / "model" / ".old_results.json.0123456789abcdef.tmp"  # an interrupted write of an earlier run
    leftover.write_text("{half")
    env = {**puzzle_env, "PYTHONPATH": str(write_plain_plugin(tmp_path / "plugin"))}
    command = [str(BIN / "lmms-eval"), "--model", "plain_model", "--model_args", f"model=model,api_key={SECRET}",
               "--tasks", "uni_mmmu_maze", "--output_path", str(out), "--log_samples"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert SECRET not in done.stdout + done.stderr
    files = [p for p in out.rglob("*") if p.is_file()]
    assert [p for p in files if SECRET.encode() in p.read_bytes()] == []
    (results,) = out.rglob("*_results.json")
    model_args = json.loads(results.read_text(encoding="utf-8"))["config"]["model_args"]
    assert model_args.startswith("model=model,api_key=[REDACTED:")
    assert not leftover.exists() and (out / LOCK_FILE).is_file()
    assert f"removed 1 unfinished temporary file(s) of an interrupted write under {out.resolve()}" in done.stderr
