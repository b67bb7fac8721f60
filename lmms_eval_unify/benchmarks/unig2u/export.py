"""UniG2U's exchange format (``lmms-eval-unify export --benchmark unig2u``, docs/scoring.md).

The ``summary.json`` that the fork's ``script/eval_all.sh`` collects (task -> metric -> value), one per model
under ``out/<model>/unig2u/``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lmms_eval_unify import gate
from lmms_eval_unify.benchmarks.unig2u import spec
from lmms_eval_unify.reports.exports import DocSource, ExportReport, model_folders, write_json
from lmms_eval_unify.reports.gallery import ModelSamples
from lmms_eval_unify.reports.results_io import sample_failure
from lmms_eval_unify.scoring.task_aggregations import count_invalid, failure_reason, mean_supported

NEEDS_DOCS = False
"""The released collector reads aggregate metrics alone."""

AGGREGATIONS: dict[str, Callable[[list[Any]], object]] = {"acc": mean_supported, "invalid_outputs": count_invalid}
"""The ``metric_list`` aggregations of every UniG2U task (``tasks/unig2u/_default_template_yaml``; a test holds
the two equal), applied to the merged samples of a task run as shards."""


def score_value(value: object) -> float | None:
    """A saved per-sample score as ``mean_supported`` takes it: ``None`` (unsupported) kept, a finite number as
    is, anything else (a damaged record) counted as 0."""
    if value is None:
        return None
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return 0.0


SAMPLE_VALUES: dict[str, Callable[[object], Any]] = {"acc": score_value, "invalid_outputs": failure_reason}
"""How a saved sample's value of each metric is read before its aggregation (saved runs are untrusted)."""


def results_summary(run: ModelSamples, report: ExportReport | None = None) -> dict[str, dict]:
    """task -> metric -> value as ``script/eval_all.sh`` collects it from lmms-eval's results files (``alias``
    and ``*stderr*`` keys dropped), UniG2U tasks only, from the configuration's own results files. A task run
    twice keeps the newest run's values; a task run as shards gets each value computed again over the merged
    samples, as one run would have given it (:func:`merged_values`)."""
    summary: dict[str, dict] = {}
    for results_file in sorted(run.results_files, key=lambda p: (p.name, str(p))):
        results = gate.read_json(results_file, "data_file", [results_file.parent])
        for task, metrics in results.get("results", {}).items():
            if task in run.samples and task.startswith(spec.TASK_PREFIX):
                summary[task] = {k: v for k, v in metrics.items() if k not in ("alias", " ") and "stderr" not in k}
    for task in summary.keys() & run.shards.keys():
        summary[task] = merged_values(summary[task], run.samples[task])
        if report is not None:
            report.notes.append(
                f"{run.label}/{task}: {run.shards[task]} shards; values computed over their "
                f"{len(run.samples[task])} merged samples"
            )
    return summary


def merged_values(values: Mapping[str, object], rows: Sequence[Mapping]) -> dict[str, object]:
    """Each ``<metric>,<filter>`` of `values` computed over `rows` with the task's aggregation; a metric with
    no known aggregation is left out rather than reported from one shard."""
    merged = {}
    for key in values:
        metric = key.partition(",")[0]
        if metric in AGGREGATIONS:
            merged[key] = AGGREGATIONS[metric]([SAMPLE_VALUES[metric](row.get(metric)) for row in rows])
    return merged


def export(runs: Sequence[ModelSamples], out: Path, report: ExportReport, docs: DocSource) -> None:
    """Each run's ``summary.json`` under ``out/<model>/unig2u/`` (:func:`export_run`); ``docs`` is not read."""
    for run, folder in model_folders(runs, out, spec.BENCHMARK):
        export_run(run, folder, report)


def export_run(run: ModelSamples, out: Path, report: ExportReport) -> None:
    """``summary.json`` of the run's UniG2U tasks; a task none of whose samples was scored (the leaderboard's '—')
    is left out, with a note, rather than collected as an accuracy of 0."""
    summary = results_summary(run, report)
    for task in [t for t in summary if run.samples[t] and all(sample_failure(r) for r in run.samples[t])]:
        del summary[task]
        report.notes.append(f"{run.label}/{task}: left out, no sample scored")
    for task in summary:
        for row in run.samples[task]:
            report.count_row(f"{run.label}/{task}", row)
    if summary:
        write_json(summary, out / "summary.json", report)


def read(folder: Path) -> dict[str, dict]:
    """A UniG2U export read back: task -> metric -> value."""
    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))
