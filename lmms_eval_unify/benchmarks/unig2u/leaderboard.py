"""UniG2U-Bench's part of ``lmms-eval-unify leaderboard``: Table 4 with Δ against each unified model's base
VLM (``--pairs``), the subtask table, the G2U gains (Eq. 6), their split-half checks and figures (the
``BenchmarkLeaderboard`` interface of ``lmms_eval_unify.reports.boards``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from lmms_eval_unify.benchmarks import paper_score
from lmms_eval_unify.benchmarks.unig2u import paper
from lmms_eval_unify.benchmarks.unig2u.spec import BENCHMARK
from lmms_eval_unify.reports.boards import (
    PERCENT,
    Board,
    CellSamples,
    Entry,
    Figure,
    Finish,
    Options,
    Row,
    Scored,
    Section,
    combined_cells,
    evaluate,
    finite_float,
    ranges,
    split_half_boards,
    task_failures,
    to_row,
    unit_sources,
)
from lmms_eval_unify.reports.leaderboard import load_labels, yaml_map
from lmms_eval_unify.reports.results_io import ModelResults
from lmms_eval_unify.scoring.aggregate import Score, difference
from lmms_eval_unify.scoring.resample import Interval

DEFAULT_PAIRS = Path(__file__).parent / "pairs_table3.yaml"
"""The paper's pairing of unified models with their base VLMs (Table 3)."""
GAIN = (-PERCENT[1], PERCENT[1])
"""The range of a difference of two accuracies (%)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--pairs``: the file pairing unified models with base VLMs (and optionally naming models)."""
    parser.add_argument(
        "--pairs",
        type=Path,
        default=DEFAULT_PAIRS,
        help="YAML `pairs: {unified model: base VLM}` for G2U gains (and optionally `labels:`, as --labels)",
    )


def labels(args: argparse.Namespace) -> dict[str, str]:
    """The ``labels:`` map of the ``--pairs`` file."""
    return load_labels(args.pairs)


def load_pairs(path: Path) -> dict[str, str]:
    """`{unified model label: base VLM label}` from a pairs YAML file."""
    return yaml_map(path, "pairs")


def relabel_pairs(pairs: Mapping[str, str], shown: Mapping[str, str]) -> dict[str, str]:
    """Pairs may name models by recorded or display name; both sides end up as display names."""
    return {shown.get(u, u): shown.get(b, b) for u, b in pairs.items()}


def _pair_key(unit: str) -> str:
    return unit.removesuffix("_gta_agentic").removesuffix("_gta")


def _protocol(
    res: ModelResults, suffix: str, protocol_row: Callable[..., dict[str, Score]], options: Options
) -> Scored | None:
    """One protocol's scores ('' = Direct, else a GtA variant's task suffix), None if the model ran none of it."""
    tasks = {paper.task_name(s, suffix) for s in paper.SUBTASKS}
    if not tasks & res.samples.keys():
        return None
    units = {t: paper.task_features(rows) for t in tasks if (rows := res.supported(t))}
    by_unit = {t: t for t in tasks}
    entry = Entry(
        res.model,
        units,
        lambda means, sizes: protocol_row(means, suffix, sizes),
        _pair_key,
        task_failures(res, by_unit),
        unit_sources(res, by_unit),
    )
    return evaluate(entry, options)


def _best_of_gta(variants: list[Scored]) -> Scored | None:
    if not variants:
        return None
    reps = [v.replicates for v in variants if v.replicates is not None]
    return Scored(
        variants[0].label,
        paper.best_of_gta([v.values for v in variants]),
        paper.best_of_gta(reps) if len(reps) == len(variants) else None,
        variants[0].halves if len(variants) == 1 else None,
        combined_cells(*variants),
    )


def _gain(model: Scored, base: Scored, label: str) -> Scored:
    values = paper.g2u_gain(model.values, base.values)
    reps = None
    if model.replicates is not None and base.replicates is not None:
        reps = {k: difference(v, base.replicates.get(k)) for k, v in model.replicates.items()}
    return Scored(label, values, reps, None, combined_cells(model, base))


def boards(models: Mapping[str, ModelResults], pairs: Mapping[str, str], options: Options) -> tuple[list[Board], dict]:
    """Table 4 (with Δ vs the paired base VLM), the Δ_Direct/Δ_GtA table, and Δ per subtask for plots."""
    protocol_row = paper_score(BENCHMARK)
    direct = {m: s for m, res in models.items() if (s := _protocol(res, "", protocol_row, options))}
    gta = {}
    for m, res in models.items():
        best = _best_of_gta(
            [s for suffix in paper.GTA_VARIANTS if (s := _protocol(res, suffix, protocol_row, options))]
        )
        if best:
            gta[m] = best
    if not direct and not gta:
        return [], {}
    bases = [b for b in dict.fromkeys(pairs.values()) if b in direct]
    blocks: dict[str | None, list[str]] = {
        base: [m for m in models if pairs.get(m) == base and m != base] for base in bases
    }
    blocks[None] = [m for m in models if m not in bases and pairs.get(m) not in bases]
    table4, gains, deltas = [], [], {}
    for base, block in blocks.items():
        if base:
            table4.append(_with_delta(to_row(direct[base], f"{base} *"), 0.0))
        for m in block:
            for protocol, scored in (("direct", direct.get(m)), ("GtA", gta.get(m))):
                if scored is None:
                    continue
                row = to_row(scored, f"{m} ({protocol})")
                if base:
                    gain = _gain(scored, direct[base], row.label)
                    overall = to_row(gain)
                    row = _with_delta(
                        row,
                        overall.values[paper.OVERALL],
                        overall.intervals.get(paper.OVERALL),
                        overall.cells.get(paper.OVERALL),
                    )
                    deltas[row.label] = {s: gain.values.get(s) for s in paper.SUBTASKS + paper.CATEGORIES}
                table4.append(row)
            if base and m in direct:
                gains.append(to_row(_gain(direct[m], direct[base], f"{m}: Δ_Direct (vs {base})")))
            if m in direct and m in gta:
                gains.append(to_row(_gain(gta[m], direct[m], f"{m}: Δ_GtA (GtA − Direct)")))
    cat_columns = [(c, (c,)) for c in paper.CATEGORIES]
    notes = [
        "Accuracy (%). Overall = sample-weighted mean of the 7 categories; '*' = base VLM; "
        "Δ = Overall minus the paired base VLM's Overall (--pairs). GtA = best GtA variant (Eq. 5).",
    ]
    accuracies = ranges([*paper.CATEGORIES, *paper.SUBTASKS, paper.OVERALL])
    tables = [
        Board(
            "unig2u_table4",
            "UniG2U-Bench (Table 4)",
            [*cat_columns, (paper.OVERALL, (paper.OVERALL,)), (paper.DELTA, (paper.DELTA,))],
            table4,
            notes,
            {**accuracies, paper.DELTA: GAIN},
        ),
        Board(
            "unig2u_subtasks",
            "UniG2U-Bench subtasks (Tables 11/12)",
            [(s, (s,)) for s in paper.SUBTASKS],
            table4,
            ranges=accuracies,
        ),
    ]
    if gains:
        tables.append(
            Board(
                "unig2u_gains",
                "UniG2U-Bench G2U gains (Eq. 6)",
                [*cat_columns, (paper.OVERALL, (paper.OVERALL,))],
                gains,
                ["Paired bootstrap intervals (same resampled documents for both runs) in the CSV/HTML."],
                ranges([*paper.CATEGORIES, paper.OVERALL], GAIN),
            )
        )
    if options.split_half:
        entries = [Scored(f"{m} (direct)", s.values, None, s.halves) for m, s in direct.items()]
        entries += [Scored(f"{m} (GtA)", s.values, None, s.halves) for m, s in gta.items()]
        tables += split_half_boards("unig2u", "UniG2U-Bench", entries, [*paper.CATEGORIES, paper.OVERALL])
    return tables, deltas


def _with_delta(row: Row, delta: Score, interval: Interval | None = None, cells: CellSamples | None = None) -> Row:
    row.values[paper.DELTA] = finite_float(delta)
    row.intervals[paper.DELTA] = interval
    if cells is not None:
        row.cells[paper.DELTA] = cells
    return row


def delta_figures(
    deltas: Mapping[str, Mapping[str, float | None]], categories: Sequence[str], subtasks: Sequence[str]
) -> list[Figure]:
    """Δ heatmap (models x categories) and Fig. 10's Spearman heatmaps across subtasks and models."""
    if not deltas:
        return []
    from lmms_eval_unify.reports.plots import heatmap, spearman_matrix

    models = list(deltas)

    def matrix(keys):
        return np.array([[np.nan if deltas[m].get(k) is None else deltas[m][k] for k in keys] for m in models])

    by_subtask = matrix(subtasks)
    return [
        *heatmap(matrix(categories), models, categories, "UniG2U Δ vs base VLM in points (models × categories)", False),
        *heatmap(spearman_matrix(by_subtask), subtasks, subtasks, "UniG2U Spearman ρ of Δ across subtasks (Fig. 10a)"),
        *heatmap(
            spearman_matrix(by_subtask.T),
            models,
            models,
            "UniG2U Spearman ρ of Δ across models (Fig. 10b)",
            paged=False,  # a square matrix: one figure, every k-th model labelled
        ),
    ]


def start(
    models: Mapping[str, ModelResults],
    shown: Mapping[str, str],
    args: argparse.Namespace,
    options: Options,
    plots: bool,
) -> Finish:
    """Nothing runs in the background: the tables, the accuracy bar chart and the Δ heatmaps are built when
    the section is finished. ``--pairs`` may name models by recorded or display name."""
    pairs = relabel_pairs(load_pairs(args.pairs), shown)

    def finish() -> Section:
        tables, deltas = boards(models, pairs, options)
        figures: list[Figure] = []
        if plots and tables:
            from lmms_eval_unify.reports import plots as pl

            keys = [*paper.CATEGORIES, paper.OVERALL]
            figures += pl.grouped_bars(tables[0], keys, "UniG2U-Bench accuracy per model", ylabel="accuracy (%)")
            figures += delta_figures(deltas, paper.CATEGORIES, paper.SUBTASKS)
        return tables, figures

    return finish
