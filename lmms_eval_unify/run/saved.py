"""A saved run, read back: its results and samples files, the responses they keep and the only folders its
images are read from. ``score`` (``commands/score.py``), the gallery, exports and paper-score reading use it;
every byte passes the read gate."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from lmms_eval_unify import gate
from lmms_eval_unify.env_vars import read
from lmms_eval_unify.run.context import EXTRA_MEDIA_ROOTS_ENV, MEDIA_SUBDIR

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
