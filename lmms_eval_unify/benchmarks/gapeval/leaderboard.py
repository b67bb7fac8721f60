"""GapEval's part of ``lmms-eval-unify leaderboard``: Table 2 (Succ./Und./Gen./Gap per category), the joint
counts, the Gap fit's convergence per cell, their split-half checks and figures (the ``BenchmarkLeaderboard``
interface of ``lmms_eval_unify.reports.boards``).

The Gap Score's MIRT fit (torch) runs in a child interpreter, started by `start` and collected when the
section is finished, so it overlaps the boards of the benchmarks printed before GapEval. A Gap cell whose fit did
not converge carries a comparability caveat (``Row.caveats``: '‡' with a note naming the variant, its steps and
the convergence test, and for ``official`` how far the converged ``stable`` fit lies), which ``--strict``
refuses; Fig. 3 rings its point.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from lmms_eval_unify.benchmarks.gapeval import paper
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
    paper_score,
    ranges,
    split_half_boards,
    to_row,
    unit_sources,
)
from lmms_eval_unify.reports.results_io import ModelResults, sample_failure

if TYPE_CHECKING:  # the fit (torch) is imported only in the child interpreter
    from lmms_eval_unify.benchmarks.gapeval.gap_score import GapScoreResult, ModelGap

GAP_FIT_CODE = (
    "import json, sys; from lmms_eval_unify.benchmarks.gapeval.leaderboard import fit_gap_report; "
    "json.dump(fit_gap_report(json.load(sys.stdin), sys.argv[1]), sys.stdout)"
)
"""The child interpreter's program: joint proportions in (stdin), `fit_gap_report` of the variant (argv) out."""
NOT_CONVERGED = "Gap fit not converged"
"""How the caveat of a Gap cell whose fit did not converge begins."""
GAP_KEYS = (*(f"{c} {paper.GAP}" for c in paper.CATEGORIES), paper.OVERALL_GAP)
"""The value keys a model's Gap fit gives (they share its convergence)."""


class GapFit(NamedTuple):
    """What the child's fit returns: per model the Gap values (`fit_gaps`) and, for each model whose fit did not
    converge, why (the caveat its Gap cells carry)."""

    values: dict[str, dict[str, float]]
    not_converged: dict[str, str]


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


def _fit(joint: Mapping[str, Mapping[str, Sequence[float]]], variant: str) -> GapScoreResult:
    """`fit_gap_scores` with its non-convergence warning silenced: `boards` reports it per cell."""
    import warnings

    from lmms_eval_unify.benchmarks.gapeval.gap_score import fit_gap_scores

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_gap_scores(joint, variant=variant)  # type: ignore[arg-type]


def gap_values(result: GapScoreResult) -> dict[str, dict[str, float]]:
    """Gap Scores (0-100, lower is better) per model and category, the overall Gap, and per cell whether its fit
    converged (`<category> Gap converged`: 1.0 or 0.0)."""
    return {
        label: {
            **{f"{c} {paper.GAP}": cell.gap for c, cell in fit.categories.items()},
            **{f"{c} {paper.GAP_CONVERGED}": float(cell.converged) for c, cell in fit.categories.items()},
            paper.OVERALL_GAP: fit.overall,
        }
        for label, fit in result.models.items()
    }


def fit_gaps(
    joint: Mapping[str, Mapping[str, tuple[float, ...]]], variant: str = "official"
) -> dict[str, dict[str, float]]:
    """:func:`gap_values` of the MIRT fit in `gap_score` (`variant`)."""
    return gap_values(_fit(joint, variant))


def not_converged_caveat(fit: ModelGap, stable: ModelGap | None) -> str:
    """The caveat of a model's Gap cells when its fit did not converge: the variant, its steps and the test
    (`FitStatus.describe`), and how far `stable`, the converged fit of the same rows, lies from it."""
    line = f"{NOT_CONVERGED}: {fit.fit.describe()}"
    if stable is None:
        return f"{line} (docs/gap_score.md)"
    apart = max(abs(cell.gap - stable.categories[c].gap) for c, cell in fit.categories.items())
    state = "the converged stable fit" if stable.converged else "the stable fit, which did not converge either,"
    return f"{line}; {state} differs by up to {apart:.1f} points on these cells (docs/gap_score.md)"


def fit_gap_report(joint: Mapping[str, Mapping[str, Sequence[float]]], variant: str = "official") -> dict:
    """The child's answer (JSON-ready `GapFit`): :func:`gap_values` and, per model whose fit did not converge,
    :func:`not_converged_caveat`; for `official` such models are also fitted with `stable` to say how far off
    they are."""
    result = _fit(joint, variant)
    failed = result.not_converged()
    stable = _fit({m: joint[m] for m in failed}, "stable").models if failed and variant == "official" else {}
    caveats = {m: not_converged_caveat(result.models[m], stable.get(m)) for m in failed}
    return GapFit(gap_values(result), caveats)._asdict()


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
    """Put each model's fit caveat on its Gap cells that have a value (`Row.caveats`, printed '‡')."""
    for row in rows:
        if reason := caveats.get(row.label):
            for key in GAP_KEYS:
                if row.values.get(key) is not None:
                    row.caveats[key] = (*row.caveats.get(key, ()), reason)


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


def _start_gap_fit(joint: Mapping[str, Mapping[str, Sequence[float]]], variant: str) -> subprocess.Popen:
    """Start the Gap Score fit in a fresh interpreter (JSON in via a temporary file, JSON out on stdout)."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as inputs:
        json.dump(joint, inputs)
        inputs.seek(0)
        return subprocess.Popen(
            [sys.executable, "-c", GAP_FIT_CODE, variant],
            stdin=inputs,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            encoding="utf-8",
            errors="replace",
        )


def _gap_fit_result(process: subprocess.Popen) -> GapFit:
    out, err = process.communicate()
    if process.returncode != 0:
        print(f"warning: Gap Score fit failed, its cells are left '-':\n{err}", file=sys.stderr)
        return GapFit({}, {})
    return GapFit(**json.loads(out))


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
            figures += pl.grouped_bars(tables[0], keys, "GapEval Und./Gen. per model")
            scatter = pl.scatter(
                points,
                "ability: mean of Und. and Gen. accuracy (%)",
                "overall Gap Score ↓",
                "GapEval: gap vs ability",
                flagged=unconverged_points(tables[0]),
                flag_label=f"‡ Gap fit not converged ({args.gap_variant} variant)",
            )
            if scatter is not None:
                figures.append(("GapEval gap vs ability (Fig. 3)", scatter))
        return tables, figures

    return finish
