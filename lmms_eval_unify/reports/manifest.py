"""The leaderboard's ``manifest.json``: for every row, the full recipe behind its numbers.

Per row (one model configuration): the run folders and results files it was read from, the model's arguments
and configuration (``describe()`` of our adapters), what the runs learnt of the model beyond it (the provenance
in its ``model.json``: the server, version and weights revision that answered, the official code's commit), seeds
and decoding settings of each run, and per task the run it came from, its samples and items (limit, offset,
dataset size, item fingerprint, dataset), its scorer version and variant, and the judges with their templates.
Beside the rows: the version and commit of lmms-eval-unify and of lmms-eval that built the table, and the
command. Every table's notes point to it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from lmms_eval_unify.integration.provenance import run_provenance
from lmms_eval_unify.redaction import redact_secrets
from lmms_eval_unify.reports.results_io import ModelResults, RunInfo, TaskRun
from lmms_eval_unify.writes import write_text

MANIFEST = "manifest.json"
SCHEMA = "lmms_eval_unify/leaderboard-manifest@1"


def run_record(run: RunInfo) -> dict[str, object]:
    """One run's provenance as JSON data."""
    return {
        "folder": str(run.results_file.parent),
        "results_file": str(run.results_file),
        "date": run.date,
        "lmms_eval_version": run.lmms_eval_version,
        "lmms_eval_unify": dict(run.ours),
        "model_args": run.model_args,
        "seeds": dict(run.seeds),
        "gen_kwargs": run.gen_kwargs,
    }


def task_record(task: TaskRun) -> dict[str, object]:
    """What one task's cells rest on, as JSON data (its runs named by results file: several for merged shards)."""
    return {
        "results_files": [str(f) for f in task.files],
        "n": task.n,
        "n_dataset": task.n_dataset,
        "limit": task.limit,
        "offset": task.offset,
        "items": task.items,
        "scorer_version": task.version,
        "variant": task.variant,
        "judges": list(task.judges),
        "dataset": dict(task.dataset),
    }


def row_record(model: ModelResults) -> dict[str, object]:
    """One row's recipe: its configuration, the runs it was read from and each task's basis."""
    runs = {task.run.results_file: task.run for task in model.runs.values()}
    return {
        "model": model.model,
        "config_id": model.config_id,
        "distinction": model.distinction,
        "configuration": model.configuration,
        "provenance": model.provenance,
        "runs": [run_record(run) for _, run in sorted(runs.items())],
        "tasks": {name: task_record(task) for name, task in sorted(model.runs.items())},
    }


def manifest(models: Mapping[str, ModelResults], command: Sequence[str]) -> dict[str, object]:
    """The manifest of a leaderboard over `models` (keyed by shown label), built by `command`."""
    try:
        lmms_eval_version = metadata.version("lmms-eval")
    except metadata.PackageNotFoundError:
        lmms_eval_version = ""
    return {
        "schema": SCHEMA,
        "built": {
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "lmms_eval_unify": run_provenance(),
            "lmms_eval": lmms_eval_version,
            "python": sys.version.split()[0],
            "command": list(command),
        },
        "rows": {label: row_record(model) for label, model in models.items()},
    }


def write_manifest(models: Mapping[str, ModelResults], command: Sequence[str], folder: Path) -> Path:
    """Write ``manifest.json`` into `folder` through the write gate (confined to `folder`), every secret redacted
    (``redaction.redact_secrets``: the model arguments and the command included); returns its path.
    ``WriteRefused`` when the gate refuses it."""
    text = json.dumps(redact_secrets(manifest(models, command)), indent=1, ensure_ascii=False, default=str)
    return write_text(folder / MANIFEST, text + "\n", folder)
