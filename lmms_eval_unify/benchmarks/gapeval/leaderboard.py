"""GapEval's part of ``lmms-eval-unify leaderboard``: Table 2 (Succ./Und./Gen./Gap per category), the joint
counts, the Gap fit's convergence per cell, their split-half checks and figures (the ``BenchmarkLeaderboard``
interface of ``lmms_eval_unify.reports.boards``).

The Gap Score's MIRT fit (torch) runs in a child interpreter (``gap_fit``), started by `start` and collected
when the section is finished, so it overlaps the boards of the benchmarks printed before GapEval; its answer goes
to a file, so it exits (freeing torch's memory) as soon as the fit is done, not when the answer is read. A Gap
cell whose fit did not converge carries a comparability caveat (``Row.caveats``: '‡' with a note naming the
variant, its steps and the convergence test, and for ``official`` how far the converged ``stable`` fit lies),
which ``--strict`` refuses; Fig. 3 rings its point.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from typing import IO, NamedTuple

from lmms_eval_unify.benchmarks import paper_score
from lmms_eval_unify.benchmarks.gapeval import paper
from lmms_eval_unify.benchmarks.gapeval.gap_fit import GAP_FIT_CODE, NOT_CONVERGED, GapFit
from lmms_eval_unify.benchmarks.gapeval.spec import BENCHMARK
from lmms_eval_unify.reports.boards import (
    Board,
    CellSamples,
    Entry,
    Figure,
    Finish,
    Options,
    Row,
    Scored,
    Section,
    evaluate,
    ranges,
    split_half_boards,
    to_row,
    unit_sources,
)
from lmms_eval_unify.reports.comparability import Caveat
from lmms_eval_unify.reports.results_io import ModelResults, sample_failure

GAP_KEYS = (*(f"{c} {paper.GAP}" for c in paper.CATEGORIES), paper.OVERALL_GAP)
"""The value keys a model's Gap fit gives (they share its convergence)."""


class GapChild(NamedTuple):
    """The running Gap fit: its process and the files its answer (JSON) and its errors go to."""

    process: subprocess.Popen
    out: IO[str]
    err: IO[str]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--gap-variant``: which fit gives the Gap Scores."""
    parser.add_argument(
        "--gap-variant",
        choices=["official", "stable"],
        default="official",
        help="GapEval Gap Score fit: the authors' optimiser (paper numbers; unstable on ill-conditioned "
        "cells) or the identifiable, converged fit (docs/gap_score.md)",
    )


def labels(args: argparse.Namespace) -> dict[str, str]:
    """GapEval's flags name no models."""
    return {}


def score_models(models: Mapping[str, ModelResults], options: Options) -> list[Scored]:
    """Succ./Und./Gen. per category for every model with paired GapEval samples."""
    parts_row = paper_score(BENCHMARK)
    scored = []
    for label, res in models.items():
        units, failures = {}, {}
        for category in paper.CATEGORIES:
            und, gen = (res.supported(t) for t in paper.task_names(category))
            if und and gen:
                units[category] = paper.joint_features(und, gen)
                failures[category] = pair_failures(und, gen)
        sources = unit_sources(res, {c: paper.task_names(c) for c in units})
        if units:
            scored.append(evaluate(Entry(label, units, parts_row, failures=failures, sources=sources), options))
    return scored


def pair_failures(und_rows: Sequence[Mapping], gen_rows: Sequence[Mapping]) -> list[str]:
    """Each paired (question, repeat) row's failure reason, the first of its two directions' ('' = scored)."""
    reasons: dict = {}
    for row in [*und_rows, *gen_rows]:
        key = paper.pair_key(row)
        reasons[key] = reasons.get(key) or sample_failure(row)
    return list(reasons.values())


def warn_unpaired(models: Mapping[str, ModelResults], warn=None) -> list[str]:
    """One line per model, category and missing direction: questions answered in one direction only
    (counted as wrong on the missing side), or a whole direction not run; each line is also printed as a warning."""
    lines = []
    for label, res in models.items():
        for category in paper.CATEGORIES:
            und, gen = (res.supported(t) for t in paper.task_names(category))
            if und and gen:
                lines += [f"{label} / {category}: {line}" for line in paper.describe_unpaired(und, gen)]
            elif und or gen:
                missing = "generation" if und else "understanding"
                lines.append(f"{label} / {category}: no {missing} samples, category not scored")
    for line in lines:
        print(f"warning: GapEval unpaired: {line}", file=warn or sys.stderr)
    return lines


def gap_inputs(scored: list[Scored]) -> dict[str, dict[str, tuple[float, float, float, float]]]:
    """Joint proportions (p11, p10, p01, p00) per category of the models that ran all four categories."""
    return {
        s.label: {c: paper.joint_proportions(*(s.values[f"{c} {p}"] for p in paper.PARTS)) for c in paper.CATEGORIES}
        for s in scored
        if all(s.values.get(f"{c} Succ.") is not None for c in paper.CATEGORIES)
    }


def fit_caveats(
    gaps: Mapping[str, Mapping[str, float]], variant: str, not_converged: Mapping[str, str]
) -> dict[str, str]:
    """The caveat of every model whose Gap fit did not converge (a `<category> Gap converged` flag of 0.0): its
    reason from the fit, else a line naming the variant."""
    failed = [
        m for m, values in gaps.items() if 0.0 in (values.get(f"{c} {paper.GAP_CONVERGED}") for c in paper.CATEGORIES)
    ]
    fallback = f"{NOT_CONVERGED} ({variant} variant, docs/gap_score.md)"
    return {m: not_converged.get(m, fallback) for m in failed}


def mark_gap_cells(rows: Sequence[Row], caveats: Mapping[str, str]) -> None:
    """Put each model's fit caveat on its Gap cells that have a value (`Row.caveats`, printed '‡'; the notes
    group them under :data:`NOT_CONVERGED`)."""
    for row in rows:
        if text := caveats.get(row.label):
            caveat = Caveat(text, NOT_CONVERGED, detail=text.removeprefix(NOT_CONVERGED).removeprefix(": "))
            for key in GAP_KEYS:
                if row.values.get(key) is not None:
                    row.caveats[key] = (*row.caveats.get(key, ()), caveat)


def gap_not_converged(gaps: Mapping[str, Mapping[str, float]], variant: str, warn=None) -> list[str]:
    """One warning line naming every (model / category) cell whose Gap fit did not converge (none if all
    did); the line is also printed to `warn` (stderr)."""
    cells = [
        f"{label} / {c}"
        for label, values in gaps.items()
        for c in paper.CATEGORIES
        if values.get(f"{c} {paper.GAP_CONVERGED}") == 0.0
    ]
    if not cells:
        return []
    why = (
        "the official variant runs a fixed 2000-step AdamW budget and does not reach a minimum "
        "(docs/gap_score.md); --gap-variant stable runs to convergence"
        if variant == "official"
        else "the stable fit ran out of iterations; these gaps are not at a minimum"
    )
    line = f"Gap fit not converged in {len(cells)} cell(s): {', '.join(cells)} ({why})"
    print(f"warning: GapEval {line}", file=warn or sys.stderr)
    return [line]


def boards(
    scored: list[Scored],
    gaps: Mapping[str, Mapping[str, float]],
    options: Options,
    variant: str = "official",
    unpaired: Sequence[str] = (),
    warn=None,
    not_converged: Mapping[str, str] | None = None,
) -> tuple[list[Board], dict]:
    """GapEval Table 2 (Succ./Und./Gen./Gap per category, overall Gap), the Gap fit's convergence per cell
    (with a warning naming the cells that did not converge) and Fig. 3's (ability, gap) points; `variant`
    names the fit that gave `gaps`, `not_converged` says why a model's fit did not converge (`GapFit`): its Gap
    cells carry that caveat (:func:`fit_caveats`)."""
    if not scored:
        return [], {}
    rows = [to_row(s) for s in scored]
    for row in rows:
        row.values.update(gaps.get(row.label, {}))
        parts = {c: row.cells[f"{c} Succ."] for c in paper.CATEGORIES if f"{c} Succ." in row.cells}
        row.cells |= {f"{c} {paper.GAP}": cell for c, cell in parts.items()}
        if parts:
            row.cells[paper.OVERALL_GAP] = sum(parts.values(), CellSamples())
    mark_gap_cells(rows, fit_caveats(gaps, variant, not_converged or {}))
    columns = [
        (f"{paper.CATEGORY_TITLES[c]} {p}", (f"{c} {p}",)) for c in paper.CATEGORIES for p in (*paper.PARTS, paper.GAP)
    ]
    notes = [
        "Succ. = both directions correct, Und./Gen. = text/image accuracy (%); Gap↓ from the MIRT fit "
        f"(lmms_eval_unify.benchmarks.gapeval.gap_score, {variant} variant) for models that ran all four categories. "
        "Intervals (CSV/HTML) cover Succ./Und./Gen. only.",
        *(f"Unpaired: {line}" for line in unpaired),
    ]
    gap_not_converged(gaps, variant, warn)  # the warning; the cells carry '‡' with the reason (mark_gap_cells)
    table2 = Board(
        "gapeval_table2",
        "GapEval (Table 2)",
        [*columns, (paper.OVERALL_GAP, (paper.OVERALL_GAP,))],
        rows,
        notes,
        ranges([k for _, keys in columns for k in keys] + [paper.OVERALL_GAP]),
    )
    counts = Board(
        "gapeval_joint_counts",
        "GapEval joint counts (the Gap Score's input)",
        [
            (f"{paper.CATEGORY_TITLES[c]} {cell}", (f"{c} {cell}",))
            for c in paper.CATEGORIES
            for cell in paper.JOINT_CELLS
        ],
        [Row(r.label, r.values, cells=r.cells) for r in rows],  # counts: no intervals
        [
            "Paired (question, repeat) rows per category: n11 both directions correct, n10 text only, "
            "n01 image only, n00 neither. A missing side counts as wrong."
        ],
    )
    tables = [table2, counts]
    if gaps:
        tables.append(
            Board(
                "gapeval_gap_convergence",
                "GapEval Gap fit convergence per cell",
                [(paper.CATEGORY_TITLES[c], (f"{c} {paper.GAP_CONVERGED}",)) for c in paper.CATEGORIES],
                [Row(r.label, r.values) for r in rows if r.label in gaps],
                [
                    f"1.00 = the {variant} fit of this model reached a local minimum (full Newton step "
                    "< step_tol, docs/gap_score.md), 0.00 = it did not; '-' = not fitted."
                ],
            )
        )
    if options.split_half:
        tables += split_half_boards(
            "gapeval", "GapEval", scored, [f"{c} {p}" for c in paper.CATEGORIES for p in paper.PARTS]
        )
    return tables, {r.label: (paper.ability(r.values), r.values.get(paper.OVERALL_GAP)) for r in rows}


def _start_gap_fit(joint: Mapping[str, Mapping[str, Sequence[float]]], variant: str) -> GapChild:
    """Start the Gap Score fit (`gap_fit.GAP_FIT_CODE`) in a fresh interpreter; JSON in and out through temporary
    files, so the child never waits on a full pipe for the leaderboard to read it."""
    out, err = (tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") for _ in range(2))
    with tempfile.TemporaryFile("w+", encoding="utf-8") as inputs:
        json.dump(joint, inputs)
        inputs.seek(0)
        process = subprocess.Popen([sys.executable, "-c", GAP_FIT_CODE, variant], stdin=inputs, stdout=out, stderr=err)
    return GapChild(process, out, err)


def _gap_fit_result(child: GapChild) -> GapFit:
    """Wait for the child and read its answer; a failed fit is warned about (with its stderr) and gives nothing."""
    with child.out, child.err:
        child.process.wait()
        child.out.seek(0)
        child.err.seek(0)
        if child.process.returncode != 0:
            print(f"warning: Gap Score fit failed, its cells are left '-':\n{child.err.read()}", file=sys.stderr)
            return GapFit({}, {})
        return GapFit(**json.load(child.out))


def unconverged_points(table2: Board) -> list[str]:
    """The rows whose overall Gap carries a fit caveat (:func:`mark_gap_cells`): Fig. 3 rings their points."""
    return [
        row.label
        for row in table2.rows
        if any(r.startswith(NOT_CONVERGED) for r in row.caveats.get(paper.OVERALL_GAP, ()))
    ]


def start(
    models: Mapping[str, ModelResults],
    shown: Mapping[str, str],
    args: argparse.Namespace,
    options: Options,
    plots: bool,
) -> Finish:
    """Score the models and start the Gap fit (``--gap-variant``) of those that ran all four categories in a
    child process; finishing waits for it, then builds the tables, the Und./Gen. bar chart and Fig. 3."""
    scored = score_models(models, options)
    joint = gap_inputs(scored)
    fit = _start_gap_fit(joint, args.gap_variant) if joint else None

    def finish() -> Section:
        unpaired_lines = warn_unpaired(models)
        gap_fit = _gap_fit_result(fit) if fit else GapFit({}, {})
        tables, points = boards(
            scored, gap_fit.values, options, args.gap_variant, unpaired_lines, not_converged=gap_fit.not_converged
        )
        figures: list[Figure] = []
        if plots and tables:
            from lmms_eval_unify.reports import plots as pl

            keys = [k for h, ks in tables[0].columns for k in ks if "Und." in h or "Gen." in h]
            figures += pl.grouped_bars(tables[0], keys, "GapEval Und./Gen. per model", ylabel="accuracy (%)")
            scatter = pl.scatter(
                points,
                "ability: mean of Und. and Gen. accuracy (%)",
                "overall Gap Score (0–100, lower is better)",
                "GapEval: gap vs ability",
                flagged=unconverged_points(tables[0]),
                flag_label=f"‡ Gap fit not converged ({args.gap_variant} variant)",
                board=tables[0],
                mark_keys=[*keys, paper.OVERALL_GAP],
            )
            if scatter is not None:
                figures.append(("GapEval gap vs ability (Fig. 3)", scatter))
        return tables, figures

    return finish
