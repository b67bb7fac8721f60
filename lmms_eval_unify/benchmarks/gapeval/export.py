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
from lmms_eval_unify.benchmarks.gapeval.leaderboard import pair_failures
from lmms_eval_unify.reports.exports import (
    DocSource,
    ExportReport,
    benchmark_tasks,
    fresh,
    write_json,
)
from lmms_eval_unify.reports.gallery import ModelSamples
from lmms_eval_unify.scoring.samples import feature_means

NEEDS_DOCS = False
"""The released fit reads the joint proportions alone."""
ROUNDING = 1e-12
"""Float rounding of a share computed as ``1 - und - gen + succ`` (-1.1e-16 for a share that is 0): written as 0,
since ``evaluate.py`` refuses a row with any negative share."""


def released_share(share: float) -> float:
    """A joint share as ``evaluate.py`` accepts it: rounding below 0 written as 0 (a real negative is kept)."""
    return 0.0 if -ROUNDING < share < 0.0 else share


def joint_rows(run: ModelSamples) -> tuple[list[list[float]] | None, dict[str, int]]:
    """``[p11, p10, p01, p00]`` per category (in ``gapeval.CATEGORIES`` order) and the paired rows behind each;
    None when a category lacks a direction or none of its pairs was scored (every one has an invalid side: the
    leaderboard's '—', whose failures would otherwise enter the released fit as wrong answers); the released fit
    needs all rows of a model."""
    rows, sizes = [], {}
    for category in ge.CATEGORIES:
        und, gen = (run.samples.get(t) for t in ge.task_names(category))
        if not und or not gen or all(pair_failures(und, gen)):
            return None, sizes
        features = ge.joint_features(und, gen)
        means = feature_means(features)
        rows.append([released_share(p) for p in ge.joint_proportions(means["succ"], means["und"], means["gen"])])
        sizes[category] = len(features["succ"])
    return rows, sizes


def export(runs: Sequence[ModelSamples], out: Path, report: ExportReport, docs: DocSource) -> None:
    """``gapeval/gapeval_joint.json`` (``evaluate.py``'s input, all models) and ``gapeval/gapeval_joint_rows.json``
    (row order, pair counts and failed samples per category); ``docs`` is not read."""
    folder = fresh(out / spec.BENCHMARK)
    joint, meta = {}, {}
    for run in runs:
        if not benchmark_tasks(run, spec.TASK_PREFIX):
            continue
        rows, sizes = joint_rows(run)
        if rows is None:
            report.notes.append(
                f"{run.label}: GapEval left out, not every category has both directions with a pair scored"
            )
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
