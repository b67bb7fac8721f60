"""Staged scoring: ``lmms-eval-unify score RUN_DIR…`` scores a run again from its saved outputs, no model.

A run's samples files keep every model response (our JSON records point at the images under the run's
media folder). ``score`` re-runs lmms-eval on the same tasks, limit and repeats with the ``unify_replay``
model, which answers each request with the response saved for that task and document. Scoring, aggregation
and the results/samples files are therefore exactly those of a normal run, and ``leaderboard`` reads them
(the newer files win). Use it after ``--predict_only``, after a scoring failure (missing metric weights, a
judge that was down), or to score with another variant (``LMMS_EVAL_UNIFY_METRIC_VARIANT=standard``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

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

    @property
    def samples_prefix(self) -> str:
        return self.results_file.name[: -len(RESULTS_SUFFIX)]


def saved_runs(run_dir: Path) -> list[SavedRun]:
    """The newest results file of each model in ``run_dir`` (replays of earlier ``score`` calls excluded)."""
    newest: dict[str, SavedRun] = {}
    for path in sorted(run_dir.rglob(f"*{RESULTS_SUFFIX}"), key=lambda p: p.name):
        try:
            results = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        config = results.get("config") or {}
        if config.get("model") == REPLAY_MODEL:
            continue
        cli = config.get("resolved_cli_args") or {}
        label = results.get("model_name") or config.get("model") or "unknown-model"
        newest[str(path.parent) + "\0" + label] = SavedRun(
            results_file=path,
            label=label,
            tasks=cli.get("tasks") or ",".join(results.get("configs", {})),
            limit=cli.get("limit"),
            offset=int(cli.get("offset") or 0),
            repeats=int(cli.get("repeats") or 1),
        )
    return list(newest.values())


def saved_responses(results_file: Path) -> dict[tuple[str, int], list[str]]:
    """``(task, doc_id) -> responses`` from the samples files written beside ``results_file``."""
    prefix = results_file.name[: -len(RESULTS_SUFFIX)] + SAMPLES_INFIX
    responses: dict[tuple[str, int], list[str]] = {}
    for samples in sorted(results_file.parent.glob(f"{prefix}*.jsonl")):
        task = samples.name[len(prefix) : -len(".jsonl")]
        with samples.open(encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                row = json.loads(line)
                resps = row.get("resps") or [[row.get("filtered_resps")]]
                texts = [r[0] if isinstance(r, list) and r else r for r in resps]
                responses.setdefault((task, int(row["doc_id"])), []).extend(
                    t if isinstance(t, str) else json.dumps(t) for t in texts
                )
    return responses


def replay_command(run: SavedRun, out: Path, run_dir: Path, tasks: str | None, media: list[str]) -> list[str]:
    """The ``lmms-eval`` command that scores ``run`` again with the replay model."""
    model_args = f"results_file={run.results_file},run_dir={run_dir},model_name={run.label}"
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="lmms-eval-unify score", description=__doc__)
    parser.add_argument("run_dirs", nargs="+", type=Path, help="--output_path folders of earlier runs")
    parser.add_argument("--tasks", help="score only these tasks/groups (default: the run's --tasks)")
    parser.add_argument("--out", type=Path, help="where to write the new results (default RUN_DIR/scored)")
    parser.add_argument("--media", action="append", default=[], help="extra folder holding the run's images (if moved)")
    args = parser.parse_args(argv)
    status = 0
    for run_dir in args.run_dirs:
        runs = saved_runs(run_dir)
        if not runs:
            print(f"score: no lmms-eval results under {run_dir}", file=sys.stderr)
            status = status or 1
        for run in runs:
            out = args.out or run_dir / "scored"
            print(f"score: {run.label} ({run.results_file}) -> {out}", file=sys.stderr, flush=True)
            done = subprocess.run(replay_command(run, out, run_dir.resolve(), args.tasks, args.media))
            status = status or done.returncode
    return status
