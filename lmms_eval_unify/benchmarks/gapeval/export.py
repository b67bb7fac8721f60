"""GapEval's exchange format (``lmms-eval-unify export --benchmark gapeval``, docs/scoring.md).

``evaluate.py``'s input ``{model: [[p11, p10, p01, p00], ...]}``, one row per category, for all models in one
file under ``out/gapeval/``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from lmms_eval_unify.benchmarks.gapeval import paper as ge
from lmms_eval_unify.benchmarks.gapeval import spec
from lmms_eval_unify.reports.exports import (
    DocSource,
    ExportReport,
    benchmark_tasks,
    fresh,
    write_json,
)
from lmms_eval_unify.reports.gallery import RunInfo
from lmms_eval_unify.scoring.samples import feature_means

NEEDS_DOCS = False
"""The released fit reads the joint proportions alone."""


def joint_rows(run: RunInfo) -> tuple[list[list[float]] | None, dict[str, int]]:
    """``[p11, p10, p01, p00]`` per category (in ``gapeval.CATEGORIES`` order) and the paired rows behind each;
    None when a category lacks a direction (the released fit needs all rows of a model)."""
    rows, sizes = [], {}
    for category in ge.CATEGORIES:
        und, gen = (run.samples.get(t) for t in ge.task_names(category))
        if not und or not gen:
            return None, sizes
        features = ge.joint_features(und, gen)
        means = feature_means(features)
        rows.append(list(ge.joint_proportions(means["succ"], means["und"], means["gen"])))
        sizes[category] = len(features["succ"])
    return rows, sizes


def export(runs: Sequence[RunInfo], out: Path, report: ExportReport, docs: DocSource) -> None:
    """``gapeval/gapeval_joint.json`` (``evaluate.py``'s input, all models) and ``gapeval/gapeval_joint_rows.json``
    (row order, pair counts and failed samples per category); ``docs`` is not read."""
    folder = fresh(out / spec.BENCHMARK)
    joint, meta = {}, {}
    for run in runs:
        if not benchmark_tasks(run, spec.TASK_PREFIX):
            continue
        rows, sizes = joint_rows(run)
        if rows is None:
            report.notes.append(f"{run.label}: GapEval left out, not every category has both directions")
            continue
        for task in benchmark_tasks(run, spec.TASK_PREFIX):
            for row in run.samples[task]:
                report.count_row(f"{run.label}/{task}", row)
        joint[run.label] = rows
        meta[run.label] = {"pairs": sizes}
    if joint:
        write_json(joint, folder / "gapeval_joint.json", report)
        write_json({"row_order": list(ge.CATEGORIES), "models": meta}, folder / "gapeval_joint_rows.json", report)


def read(folder: Path) -> dict[str, list[list[float]]]:
    """The GapEval export read back: model -> rows ``[p11, p10, p01, p00]``."""
    return json.loads((folder / "gapeval_joint.json").read_text(encoding="utf-8"))
