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
twice or replacing a results file. Every file the scoring run writes passes the write gate (``run/files.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
from pathlib import Path

from lmms_eval_unify.run.saved import REPLAY_MODEL, SavedRun, read_saved_samples, saved_runs
from lmms_eval_unify.writes import EXIT_REFUSED, FolderBusy, WriteRefused, folder_lock, make_folder, output_root


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
