"""The leaderboard's ``manifest.json``: for every row, the full recipe behind its numbers.

Per row (one model configuration): the run folders and results files it was read from (every shard's), the
model's arguments and configuration (``describe()`` of our adapters), what the runs learnt of the model beyond it
(the provenance in its ``model.json``: the server, version and weights revision that answered, the official code's
commit), the versions of lmms-eval-unify (and its commit) and of lmms-eval that made each run, its seeds and
decoding settings, and per task the runs it came from, its samples and items (limit, offset, dataset size, item
fingerprint, the doc ids its shards miss), the data it read (``dataset``: the recorded source, Hub repository and
revision, prepared release or generated data with seed and n, each with the loaded dataset's fingerprint; what its
YAML names in ``dataset_config``), its scorer version and variant, and the judges with their templates. Beside the
rows: the same software of the leaderboard itself, and the command. Every table's notes point to it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from lmms_eval_unify.redaction import redact_secrets
from lmms_eval_unify.reports.results_io import ModelResults, RunInfo, TaskRun
from lmms_eval_unify.run.provenance import run_provenance
from lmms_eval_unify.writes import write_text

MANIFEST = "manifest.json"
SCHEMA = "lmms_eval_unify/leaderboard-manifest@2"
NOT_RECORDED = {"kind": "not recorded"}
"""The data source of a task run made before runs recorded one."""


def run_record(run: RunInfo) -> dict[str, object]:
    """One run's provenance as JSON data: lmms-eval's version as the run recorded it (importlib.metadata; '' for
    runs made before), and what lmms-eval itself calls ``lmms_eval_version`` (the run's git checkout) apart."""
    return {
        "folder": str(run.results_file.parent),
        "results_file": str(run.results_file),
        "date": run.date,
        "lmms_eval_version": str(run.ours.get("lmms_eval") or ""),
        "git_checkout": run.git_checkout,
        "lmms_eval_unify": {key: value for key, value in run.ours.items() if key != "data"},
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
        "missing_doc_ids": list(task.missing),
        "judges": list(task.judges),
        "dataset": dict(task.source or NOT_RECORDED),
        "dataset_config": dict(task.dataset),
    }


def row_record(model: ModelResults) -> dict[str, object]:
    """One row's recipe: its configuration, the runs it was read from and each task's basis."""
    runs = {run.results_file: run for task in model.runs.values() for run in task.runs}
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
    software = run_provenance()
    return {
        "schema": SCHEMA,
        "built": {
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "lmms_eval_unify": software,
            "lmms_eval": software["lmms_eval"],
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
