"""Uni-MMMU's part of ``lmms-eval-unify leaderboard``: Table 2, the science disciplines board (ours), their
split-half checks and the per-model bar chart (the ``BenchmarkLeaderboard`` interface of
``lmms_eval_unify.reports.boards``)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from lmms_eval_unify.benchmarks import paper_score
from lmms_eval_unify.benchmarks.uni_mmmu import paper
from lmms_eval_unify.benchmarks.uni_mmmu.spec import BENCHMARK
from lmms_eval_unify.reports.boards import (
    Board,
    Entry,
    Figure,
    Finish,
    Options,
    Section,
    evaluate,
    ranges,
    split_half_boards,
    task_failures,
    to_row,
    unit_sources,
)
from lmms_eval_unify.reports.results_io import ModelResults


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Uni-MMMU has no flags of its own."""


def labels(args: argparse.Namespace) -> dict[str, str]:
    """Uni-MMMU's flags name no models."""
    return {}


def boards(models: Mapping[str, ModelResults], options: Options) -> list[Board]:
    """Table 2 of the models that ran a Uni-MMMU task, the by-discipline board when the records name
    disciplines, and (with `options.split_half`) the split-half boards; none if no model ran a task."""
    row_fn = paper_score(BENCHMARK)
    scored = []
    for label, res in models.items():
        if not any(paper.task_name(t) in res.samples for t in paper.TASKS):
            continue
        units = {
            paper.task_name(t): paper.task_features(t, rows)
            for t in paper.TASKS
            if (rows := res.supported(paper.task_name(t)))
        }
        tasks = {paper.task_name(t): paper.task_name(t) for t in paper.TASKS}
        failures, sources = task_failures(res, tasks), unit_sources(res, tasks)
        entry = Entry(label, units, lambda means, sizes: row_fn(means), failures=failures, sources=sources)
        scored.append(evaluate(entry, options))
    if not scored:
        return []
    columns = [
        (c, (f"{c} step", f"{c} sample") if paper.COLUMNS[c][0] in paper.STEP_TASKS else (c,)) for c in paper.COLUMNS
    ]
    notes = [
        "0-100 scale; Maze/Slid. cells are step/sample. C. S / C. P: judge scores 0-5 mapped to 0-100. "
        "'-' = task not run; '—' = no sample scored (see the lines below).",
        "Avg. (ours) = unweighted mean of the 14 columns (step-level Maze/Slid.). The paper's Avg. matches "
        "no formula over its own columns; this is not it and is not comparable to it.",
    ]
    tables = [
        Board(
            "uni_mmmu_table2",
            "Uni-MMMU (Table 2)",
            [*columns, (paper.OUR_AVG, (paper.OUR_AVG,))],
            [to_row(s) for s in scored],
            notes,
            ranges([*(k for _, keys in columns for k in keys), paper.OUR_AVG]),
        )
    ]
    by_discipline = [to_row(s) for s in scored]
    if any(v is not None for row in by_discipline for k, v in row.values.items() if k in paper.DISCIPLINE_COLUMNS):
        tables.append(
            Board(
                "uni_mmmu_science_disciplines",
                "Uni-MMMU science by discipline (ours)",
                [(c, (c,)) for c in paper.DISCIPLINE_COLUMNS],
                by_discipline,
                [
                    "Sci. R/T/I of Table 2 restricted to one discipline (level_1_category); the paper pools them.",
                    "A cell's samples, and so its marks, are the whole science task's: a sample that failed "
                    "records no discipline.",
                ],
                ranges(list(paper.DISCIPLINE_COLUMNS)),
            )
        )
    if options.split_half:
        tables += split_half_boards(
            "uni_mmmu", "Uni-MMMU", scored, [*(k for _, ks in columns for k in ks), paper.OUR_AVG]
        )
    return tables


def start(
    models: Mapping[str, ModelResults],
    shown: Mapping[str, str],
    args: argparse.Namespace,
    options: Options,
    plots: bool,
) -> Finish:
    """Nothing runs in the background: the tables (and the bar chart of Table 2, Maze/Slid. at step level)
    are built when the section is finished."""

    def finish() -> Section:
        tables = boards(models, options)
        figures: list[Figure] = []
        if plots and tables:
            from lmms_eval_unify.reports import plots as pl

            keys = [k for _, ks in tables[0].columns for k in ks[:1]]
            figures += pl.grouped_bars(tables[0], keys, "Uni-MMMU scores per model (Maze/Slid. step level)")
        return tables, figures

    return finish
