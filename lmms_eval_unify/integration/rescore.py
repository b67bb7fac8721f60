"""Staged scoring: ``lmms-eval-unify score RUN_DIR…`` scores a run again from its saved outputs, no model.

A run's samples files keep every model response (our JSON records point at the images under the run's
media folder). ``score`` re-runs lmms-eval on the same tasks, limit and repeats with the ``unify_replay``
model, which answers each request with the response saved for that task and document. Scoring, aggregation
and the results/samples files are therefore exactly those of a normal run, and ``leaderboard`` reads them
(the newer files win). Use it after ``--predict_only``, after a scoring failure (missing metric weights, a
judge that was down), or to score with another variant (``LMMS_EVAL_UNIFY_METRIC_VARIANT=standard``).

``score`` holds the writer lock of each run folder while it scores it (``writes.folder_lock``), and the
lmms-eval run it starts holds that of its own output folder: two ``score`` calls on one run take turns (the second
says so and waits, up to ``$LMMS_EVAL_UNIFY_LOCK_WAIT`` seconds, then gives up with exit 2), never writing a doc
twice or replacing a results file. Every file the scoring run writes passes the write gate (``run_files``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from lmms_eval_unify import gate
from lmms_eval_unify.env_vars import read
from lmms_eval_unify.integration.run_context import EXTRA_MEDIA_ROOTS_ENV, MEDIA_SUBDIR
from lmms_eval_unify.writes import EXIT_REFUSED, FolderBusy, WriteRefused, folder_lock, make_folder, output_root

REPLAY_MODEL = "unify_replay"
RESULTS_SUFFIX = "_results.json"
SAMPLES_INFIX = "_samples_"


@dataclass(frozen=True)
class SavedRun:
    """One results file of a run directory and what is needed to score it again."""

    results_file: Path
    label: str
    tasks: str
    limit: float | None
    offset: int
    repeats: int
    group_subtasks: dict[str, list[str]]

    def leaf_tasks(self, names: str) -> list[str]:
        """The tasks (no groups) that the comma-separated ``names`` stand for in this run."""
        out: list[str] = []
        pending = [n.strip() for n in names.split(",") if n.strip()]
        while pending:
            name = pending.pop(0)
            if self.group_subtasks.get(name):  # lmms-eval lists every task, a task with no subtasks included
                pending[:0] = self.group_subtasks[name]
            elif name not in out:
                out.append(name)
        return out

    @property
    def samples_prefix(self) -> str:
        return self.results_file.name[: -len(RESULTS_SUFFIX)]


def saved_runs(run_dir: Path, report: TextIO | None = None) -> list[SavedRun]:
    """The newest results file of each model in ``run_dir`` (replays of earlier ``score`` calls excluded); a
    results file that cannot be read (through the gate) is reported on ``report`` and skipped."""
    newest: dict[str, SavedRun] = {}
    for path in sorted(run_dir.rglob(f"*{RESULTS_SUFFIX}"), key=lambda p: p.name):
        try:
            results = gate.read_json(path, "data_file", [run_dir])
            if not isinstance(results, dict) or not isinstance(results.get("config") or {}, dict):
                raise gate.Refused("malformed", path, "not an lmms-eval results object")
            run = _saved_run(path, results)
        except gate.Refused as refused:
            print(f"score: skipped {refused}", file=report or sys.stderr)
            continue
        if run is not None:
            newest[str(path.parent) + "\0" + run.label] = run
    return list(newest.values())


def _saved_run(path: Path, results: dict) -> SavedRun | None:
    config = results.get("config") or {}
    if config.get("model") == REPLAY_MODEL:
        return None
    cli = config.get("resolved_cli_args") or {}
    subtasks = results.get("group_subtasks") or {}
    try:
        return SavedRun(
            results_file=path,
            label=str(results.get("model_name") or config.get("model") or "unknown-model"),
            tasks=str(cli.get("tasks") or ",".join(results.get("configs", {}))),
            limit=None if cli.get("limit") is None else float(cli["limit"]),
            offset=int(cli.get("offset") or 0),
            repeats=int(cli.get("repeats") or 1),
            group_subtasks={str(g): [str(t) for t in ts] for g, ts in subtasks.items()},
        )
    except (TypeError, ValueError, AttributeError) as exc:
        raise gate.Refused("malformed", path, f"unexpected field types: {exc}") from None


@dataclass(frozen=True)
class SavedSamples:
    """The responses of a saved run's samples files, and what of them could not be read."""

    responses: dict[tuple[str, int], list[str]]
    """``(task, doc_id) -> responses`` of every intact line."""
    broken: dict[str, list[gate.Refused]]
    """``task -> refusals`` (each names ``file:line``) of every task with an unreadable file or line."""


def read_saved_samples(results_file: Path) -> SavedSamples:
    """The samples files written beside ``results_file``, read through the gate line by line: a line cut
    mid-way, corrupt or of the wrong shape is recorded in ``broken`` and the rest is still read."""
    prefix = results_file.name[: -len(RESULTS_SUFFIX)] + SAMPLES_INFIX
    responses: dict[tuple[str, int], list[str]] = {}
    broken: dict[str, list[gate.Refused]] = {}
    for samples in sorted(results_file.parent.glob(f"{prefix}*.jsonl")):
        task = samples.name[len(prefix) : -len(".jsonl")]
        try:
            for number, row in gate.jsonl_objects(samples, [results_file.parent]):
                try:
                    key, texts = _row_responses(row, task)
                except gate.Refused as refused:
                    where = f"{samples}:{number}"
                    broken.setdefault(task, []).append(gate.Refused(refused.reason, where, refused.detail, refused.fix))
                    continue
                responses.setdefault(key, []).extend(texts)
        except gate.Refused as refused:
            broken.setdefault(task, []).append(refused)
    return SavedSamples(responses, broken)


def _row_responses(row: dict | gate.Refused, task: str) -> tuple[tuple[str, int], list[str]]:
    """``((task, doc_id), responses)`` of one samples row; ``gate.Refused`` for a row of the wrong shape."""
    if isinstance(row, gate.Refused):
        raise row
    doc_id = row.get("doc_id")
    if not isinstance(doc_id, int) or isinstance(doc_id, bool):
        raise gate.Refused("malformed", task, f"'doc_id' must be an integer, got {type(doc_id).__name__}")
    resps = row.get("resps") or [[row.get("filtered_resps")]]
    if not isinstance(resps, list):
        raise gate.Refused("malformed", task, f"'resps' must be a list, got {type(resps).__name__}")
    texts = [r[0] if isinstance(r, list) and r else r for r in resps]
    return (task, doc_id), [t if isinstance(t, str) else json.dumps(t) for t in texts]


def saved_responses(results_file: Path) -> dict[tuple[str, int], list[str]]:
    """``(task, doc_id) -> responses`` from the intact lines of the samples files beside ``results_file``."""
    return read_saved_samples(results_file).responses


def saved_media_roots(results_dirs: Sequence[Path], extra: Sequence[str | Path] = ()) -> list[Path]:
    """The only folders a saved run's images are read from (``score``, ``gallery``, ``export``): the media
    folder beside each results folder or one level up (``<output_path>/unify_media``, also after the run
    folder was moved), the folders in ``extra`` (``score --media``) and ``$LMMS_EVAL_UNIFY_MEDIA_ROOTS``.
    Never the run folder itself or its parent, whatever a record's ``root`` says."""
    env = read(EXTRA_MEDIA_ROOTS_ENV) or []
    found = [base / MEDIA_SUBDIR for folder in results_dirs for base in (folder, folder.parent)]
    return list(dict.fromkeys(Path(p).resolve() for p in [*found, *extra, *env]))


def rescored_results_file(results: Mapping) -> Path | None:
    """The results file a ``score`` run re-scored: the ``results_file`` argument its ``unify_replay`` model was
    given (:func:`replay_command`), when it is still a regular ``*_results.json`` file; None for any other run."""
    config = results.get("config")
    if not isinstance(config, Mapping) or config.get("model") != REPLAY_MODEL:
        return None
    model_args = config.get("model_args")
    pairs = model_args.split(",") if isinstance(model_args, str) else []
    rescored = Path(dict(pair.split("=", 1) for pair in pairs if "=" in pair).get("results_file", ""))
    if not rescored.name.endswith(RESULTS_SUFFIX):
        return None
    try:
        return gate.check_file(rescored, "data_file", [rescored.parent])
    except gate.Refused:
        return None


def run_media_roots(results_file: Path, results: Mapping) -> list[Path]:
    """The only folders the images of one results file's samples are read from: :func:`saved_media_roots` of its
    folder and, for a ``score`` run, of the run it re-scored (its records name that run's media, where its scorers
    read them). ``score --media`` folders are not taken from the results file (a file cannot widen what is
    read): give them again in ``$LMMS_EVAL_UNIFY_MEDIA_ROOTS``."""
    rescored = rescored_results_file(results)
    return saved_media_roots([results_file.parent, *([rescored.parent] if rescored else [])])


def replay_command(run: SavedRun, out: Path, tasks: str | None, media: list[str]) -> list[str]:
    """The ``lmms-eval`` command that scores ``run`` again with the replay model."""
    model_args = f"results_file={run.results_file.resolve()},model_name={run.label}"
    if media:
        model_args += f",media={os.pathsep.join(media)}"
    command = [sys.executable, "-m", "lmms_eval", "--model", REPLAY_MODEL, "--model_args", model_args]
    command += ["--tasks", tasks or run.tasks, "--output_path", str(out), "--log_samples"]
    if run.limit is not None:
        command += ["--limit", str(int(run.limit) if float(run.limit).is_integer() else run.limit)]
    if run.offset:
        command += ["--offset", str(run.offset)]
    if run.repeats > 1:
        command += ["--repeats", str(run.repeats)]
    return command


def score_folder(run_dir: Path, tasks_asked: str | None, out_asked: Path | None, media: list[str]) -> int:
    """Score every saved run of ``run_dir`` again (:func:`replay_command`); the exit status."""
    status = 0
    runs = saved_runs(run_dir)
    if not runs:
        print(f"score: no lmms-eval results under {run_dir}", file=sys.stderr)
        status = 1
    for run in runs:
        out = out_asked or run_dir / "scored"
        tasks = tasks_asked or run.tasks
        broken = read_saved_samples(run.results_file).broken
        if broken:
            status = 1
            for task, refusals in broken.items():
                print(f"score: {task} not scored again, its samples are damaged:", file=sys.stderr)
                for refused in refusals[:10]:
                    print(f"  {refused}", file=sys.stderr)
                if len(refusals) > 10:
                    print(f"  ... and {len(refusals) - 10} more", file=sys.stderr)
            intact = [t for t in run.leaf_tasks(tasks) if t not in broken]
            if not intact:
                continue
            tasks = ",".join(intact)
        if out_asked is None:
            try:  # the folder score chose below the run folder: never a symlink out of it
                make_folder(output_root(run_dir) / out.name, output_root(run_dir))
            except WriteRefused as refused:
                print(f"score: {run.label} not scored again: {refused}", file=sys.stderr)
                status = status or EXIT_REFUSED
                continue
        print(f"score: {run.label} ({run.results_file}) -> {out}", file=sys.stderr, flush=True)
        done = subprocess.run(replay_command(run, out, tasks, media))
        status = status or done.returncode
    return status


def folder_writer(run_dir: Path, out: Path | None) -> contextlib.AbstractContextManager:
    """The writer lock ``score`` holds on ``run_dir`` while it scores it, so two ``score`` calls on one run take
    turns (``writes.folder_lock``); none for a folder that is not there, or when the new results go into
    ``run_dir`` itself (the lmms-eval run scoring it then holds that folder's lock)."""
    if not run_dir.is_dir() or (out is not None and os.path.realpath(out) == os.path.realpath(run_dir)):
        return contextlib.nullcontext()
    return folder_lock(run_dir, "score")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="lmms-eval-unify score", description=__doc__)
    parser.add_argument("run_dirs", nargs="+", type=Path, help="--output_path folders of earlier runs")
    parser.add_argument("--tasks", help="score only these tasks/groups (default: the run's --tasks)")
    parser.add_argument("--out", type=Path, help="where to write the new results (default RUN_DIR/scored)")
    parser.add_argument("--media", action="append", default=[], help="extra folder holding the run's images (if moved)")
    args = parser.parse_args(argv)
    status = 0
    for run_dir in args.run_dirs:
        try:
            with folder_writer(run_dir, args.out):
                scored = score_folder(run_dir, args.tasks, args.out, args.media)
            status = status or scored
        except (FolderBusy, WriteRefused) as err:
            print(f"score: {err}", file=sys.stderr)
            status = status or EXIT_REFUSED
    return status
