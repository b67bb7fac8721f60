"""MME-Unify's part of ``lmms-eval-unify leaderboard``: Tables 2 and 3 in a scoring variant (``--variant``),
their split-half checks and the per-model bar chart (the ``BenchmarkLeaderboard`` interface of
``lmms_eval_unify.reports.boards``)."""

from __future__ import annotations

import argparse
from collections.abc import Collection, Mapping, Sequence

from lmms_eval_unify.benchmarks import paper_score
from lmms_eval_unify.benchmarks.mme_unify import paper
from lmms_eval_unify.benchmarks.mme_unify.spec import BENCHMARK, HAS_OFFICIAL, SCORING_VARIANTS
from lmms_eval_unify.reports.boards import (
    Board,
    Column,
    Entry,
    Figure,
    Finish,
    Options,
    Row,
    Section,
    evaluate,
    ranges,
    split_half_boards,
    task_failures,
    to_row,
    unit_sources,
)
from lmms_eval_unify.reports.comparability import Caveat
from lmms_eval_unify.reports.results_io import ModelResults

HEADLINE = ["Und. Avg", "Gen. Avg", "Unify Avg", "MME-U"]
"""The domain averages and MME-U: the split-half check's columns and the bar chart's bars."""
TABLE3: list[Column] = [
    *[
        (f"{s} {p}", (f"{s} {p}",) if p != "Acc" else (s,))
        for s in paper.UNIFY_QA
        for p in ("Text", "Image", "Acc", "Acc+")
    ],
    *[
        (f"VCoT {p}", (f"VCoT {p}",) if p != "Acc" else ("VCoT",))
        for p in ("Action", "Coordinate", "Image", "Acc", "Acc+")
    ],
    ("Unify Acc", ("Unify Avg",)),
    ("Unify Acc+", ("Unify Acc+",)),
]
"""Table 3's columns: (header, value keys of the Table 2 row)."""
RANGES = {
    **ranges([*paper.TABLE2_COLUMNS, *(k for _, keys in TABLE3 for k in keys), "Unify Acc+"]),
    **ranges([*paper.VIDEO, "Gen. Avg", "MME-U"], (0.0, 100.1)),
}
"""Every column's scale: 0-100, up to 100.1 where the unclipped FVD/FID normalisation enters (docs/scoring.md)."""
ABOVE_SCALE = (
    "above the paper's 0-100 scale: an FVD/FID distance below 1, where Appendix H's normalisation "
    "100(1-(s-1)/999) assumes s in [1, 1000]; kept unclipped, as the released script does"
)
"""The caveat of a video subtask score over 100 and of the averages over it (:func:`mark_above_scale`)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--variant``: which scoring variant's tasks the tables read."""
    parser.add_argument(
        "--variant",
        choices=list(SCORING_VARIANTS),
        default="corrected",
        help="MME-Unify scoring: the mme_unify_* tasks (documented bugs fixed) or the mme_unify_*_official "
        "tasks (the released scripts' rules)",
    )


def labels(args: argparse.Namespace) -> dict[str, str]:
    """MME-Unify's flags name no models."""
    return {}


def run_flags(tasks: Collection[str]) -> list[list[str]]:
    """The ``--variant`` of each scoring variant with a generation or unify task among a run's `tasks` (the
    understanding tasks belong to both), the default variant if none: the run's paper scores
    (``lmms_eval_unify.integration.paper_scores``)."""
    run = [v for v in SCORING_VARIANTS if any(paper.task_name(s, v) in tasks for s in HAS_OFFICIAL)]
    return [["--variant", v] for v in run or SCORING_VARIANTS[:1]]


def boards(models: Mapping[str, ModelResults], options: Options, variant: str = "corrected") -> list[Board]:
    """Tables 2 and 3 of the models that ran a subtask in `variant` (and, with `options.split_half`, the
    split-half boards of the headline scores); none if no model did."""
    subtasks = (*paper.UNDERSTANDING, *paper.GENERATION, *paper.UNIFY)
    row_fn = paper_score(BENCHMARK)
    scored = []
    for label, res in models.items():
        if not any(paper.task_name(s, variant) in res.samples for s in subtasks):
            continue
        units = {
            paper.task_name(s): paper.task_features(s, rows, variant)
            for s in subtasks
            if (rows := res.supported(paper.task_name(s, variant)))
        }
        tasks = {paper.task_name(s): paper.task_name(s, variant) for s in subtasks}
        failures, sources = task_failures(res, tasks), unit_sources(res, tasks)
        entry = Entry(label, units, lambda means, sizes: row_fn(means), failures=failures, sources=sources)
        scored.append(evaluate(entry, options))
    if not scored:
        return []
    board_rows = [to_row(s) for s in scored]
    mark_above_scale(board_rows)
    official = variant == "official"
    scope = (
        "the mme_unify_*_official tasks: the released scripts' rules, bugs included"
        if official
        else "the mme_unify_* tasks: documented bugs of the released scripts fixed"
    )
    notes = [
        "Scores 0-100. '-' = subtask not run; '—' = no sample scored (unsupported, or every sample invalid: "
        "see the lines below); averages count an unsupported subtask as 0 (paper Table 2 rule), and have no "
        "value ('—') over a subtask run with every sample invalid, which measures nothing.",
        "Bootstrap 95% intervals (seeded, resampling each subtask's samples) are in the CSV/HTML.",
        f"Scoring variant: {variant} ({scope}). CIVG/TVG/VP FVD/FID normalisation 100(1-(x-1)/999) is "
        "unclipped, as released: a distance below 1 scores up to 100.1"
        + ("; all-equal distances score 100 each (released rule)." if official else "."),
    ]
    key, suffix = ("_official", ", official variant") if official else ("", "")
    tables = [
        Board(
            f"mme_unify_table2{key}",
            f"MME-Unify (Table 2){suffix}",
            [(c, (c,)) for c in paper.TABLE2_COLUMNS],
            board_rows,
            notes,
            RANGES,
        ),
        Board(
            f"mme_unify_table3{key}",
            f"MME-Unify unify tasks (Table 3){suffix}",
            TABLE3,
            board_rows,
            [notes[0], notes[2]],
            RANGES,
        ),
    ]
    if options.split_half:
        tables += split_half_boards("mme_unify", "MME-Unify", scored, HEADLINE)
    return tables


def mark_above_scale(rows: Sequence[Row]) -> None:
    """Put :data:`ABOVE_SCALE` on each row's video subtask scores over 100 and on the averages over them (``Gen.
    Avg``, ``MME-U``): printed '‡' with a note, in the run's paper scores a caveat code."""
    for row in rows:
        high = [s for s in paper.VIDEO if (value := row.values.get(s)) is not None and value > 100.0]
        if high:
            caveat = Caveat(f"{', '.join(high)}: {ABOVE_SCALE}", ABOVE_SCALE, ", ".join(high))
            for key in (*high, "Gen. Avg", "MME-U"):
                if row.values.get(key) is not None:
                    row.caveats[key] = (*row.caveats.get(key, ()), caveat)


def start(
    models: Mapping[str, ModelResults],
    shown: Mapping[str, str],
    args: argparse.Namespace,
    options: Options,
    plots: bool,
) -> Finish:
    """Nothing runs in the background: the tables (and the bar chart of the headline scores) are built when
    the section is finished."""

    def finish() -> Section:
        tables = boards(models, options, args.variant)
        figures: list[Figure] = []
        if plots and tables:
            from lmms_eval_unify.reports import plots as pl

            figures += pl.grouped_bars(tables[0], HEADLINE, "MME-Unify scores per model")
        return tables, figures

    return finish
