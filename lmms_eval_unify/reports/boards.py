"""Leaderboard tables laid out like the papers' tables, with bootstrap intervals and split-half checks.

A `Board` is what gets rendered (Markdown/CSV/HTML). Each benchmark builds its boards from
`Entry`s: one model (or model + protocol), its per-unit features, and the pure row function of
its scoring module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from lmms_eval_unify.benchmarks.gapeval import paper as ge
from lmms_eval_unify.benchmarks.mme_unify import paper as mu
from lmms_eval_unify.benchmarks.uni_mmmu import paper as um
from lmms_eval_unify.benchmarks.unig2u import paper as ug
from lmms_eval_unify.reports.results_io import ModelResults
from lmms_eval_unify.scoring.aggregate import Score, difference
from lmms_eval_unify.scoring.resample import (
    Interval,
    RowFn,
    bootstrap,
    percentile_interval,
    rank_agreement,
    score,
    split_halves,
)
from lmms_eval_unify.scoring.samples import Features

Column = tuple[str, tuple[str, ...]]  # header, value keys (two keys print as "a/b")


@dataclass
class Options:
    """Resampling settings: bootstrap replicates (0 = no intervals), seed, and the split-half check; the
    GapEval fit and the MME-Unify scoring variant (``corrected`` tasks or the ``*_official`` ones)."""

    replicates: int = 1000
    seed: int = 0
    split_half: bool = False
    gap_variant: str = "official"
    mme_variant: str = "corrected"


@dataclass
class Row:
    label: str
    values: dict[str, Score]
    intervals: dict[str, Interval | None] = field(default_factory=dict)


@dataclass
class Board:
    key: str
    title: str
    columns: list[Column]
    rows: list[Row]
    notes: list[str] = field(default_factory=list)

    def value_keys(self) -> list[str]:
        return [k for _, keys in self.columns for k in keys]


@dataclass
class Entry:
    """One scored row: a model's units (tasks or task pairs) and how to turn their means into a row."""

    label: str
    units: dict[str, Features]
    row_fn: RowFn
    pair_key: Callable[[str], str] = str


@dataclass
class Scored:
    label: str
    values: dict[str, Score]
    replicates: dict[str, Score] | None
    halves: tuple[dict, dict] | None


def evaluate(entry: Entry, options: Options) -> Scored:
    """Point values, bootstrap replicates and split halves of one entry."""
    units = {entry.pair_key(u): f for u, f in entry.units.items()}
    fn = _rekeyed(entry)
    replicates = bootstrap(units, fn, options.replicates, options.seed) if options.replicates else None
    halves = split_halves(units, fn, options.seed) if options.split_half else None
    return Scored(entry.label, score(units, fn), replicates, halves)


def _rekeyed(entry: Entry) -> RowFn:
    """Row function over pair-keyed units (pair keys only choose the resampling index)."""
    original = {entry.pair_key(u): u for u in entry.units}

    def fn(means, sizes):
        return entry.row_fn(
            {original[k]: v for k, v in means.items()}, {original[k]: v for k, v in sizes.items()}
        )

    return fn


def to_row(scored: Scored, label: str | None = None) -> Row:
    intervals = {k: percentile_interval(v) for k, v in (scored.replicates or {}).items()}
    return Row(label or scored.label, {k: _float(v) for k, v in scored.values.items()}, intervals)


def _float(value: Score) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def split_half_boards(key: str, title: str, scored: list[Scored], columns: list[str]) -> list[Board]:
    """Split-half stability (MME-U Appendix B): per-model scores on halves A/B and rank agreement."""
    halves = [s for s in scored if s.halves]
    per_model = [
        Row(f"{name} / {s.label}", {c: _float(h.get(c)) for c in columns})
        for name, part in (("Split A", 0), ("Split B", 1))
        for s in halves
        for h in [s.halves[part]]
    ]
    agreement = []
    for c in columns:
        pairs = [(s.halves[0].get(c), s.halves[1].get(c)) for s in halves]
        pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
        tau, rho = rank_agreement([a for a, _ in pairs], [b for _, b in pairs])
        agreement.append(
            Row(f"{c} (n={len(pairs)})", {"Kendall τ_b": _float(tau), "Spearman ρ": _float(rho)})
        )
    note = "Each unit's samples are split into the same two random halves for every model (seeded)."
    return [
        Board(
            f"{key}_split_half",
            f"{title}: split-half scores",
            [(c, (c,)) for c in columns],
            per_model,
            [note],
        ),
        Board(
            f"{key}_split_half_agreement",
            f"{title}: split-half rank agreement (half A vs half B across models)",
            [(h, (h,)) for h in ("Kendall τ_b", "Spearman ρ")],
            agreement,
            [
                "Rows are scores; n = models scored on both halves. '-' = undefined (fewer than two distinct scores)."
            ],
        ),
    ]


# --- MME-Unify ------------------------------------------------------------------------------------

MME_HEADLINE = ["Und. Avg", "Gen. Avg", "Unify Avg", "MME-U"]
MME_TABLE3 = [
    *[(f"{s} {p}", (f"{s} {p}",) if p != "Acc" else (s,)) for s in mu.UNIFY_QA for p in ("Text", "Image", "Acc", "Acc+")],
    *[(f"VCoT {p}", (f"VCoT {p}",) if p != "Acc" else ("VCoT",)) for p in ("Action", "Coordinate", "Image", "Acc", "Acc+")],
    ("Unify Acc", ("Unify Avg",)),
    ("Unify Acc+", ("Unify Acc+",)),
]  # fmt: skip


def mme_unify_boards(models: Mapping[str, ModelResults], options: Options) -> list[Board]:
    subtasks = (*mu.UNDERSTANDING, *mu.GENERATION, *mu.UNIFY)
    variant = options.mme_variant
    scored = []
    for label, res in models.items():
        if not any(mu.task_name(s, variant) in res.samples for s in subtasks):
            continue
        units = {
            mu.task_name(s): mu.task_features(s, rows, variant)
            for s in subtasks
            if (rows := res.supported(mu.task_name(s, variant)))
        }
        scored.append(evaluate(Entry(label, units, lambda means, sizes: mu.table2_row(means)), options))
    if not scored:
        return []
    rows = [to_row(s) for s in scored]
    official = variant == "official"
    scope = (
        "the mme_unify_*_official tasks: the released scripts' rules, bugs included"
        if official
        else "the mme_unify_* tasks: documented bugs of the released scripts fixed"
    )
    notes = [
        "Scores 0-100. '-' = subtask not run or unsupported; averages count it as 0 (paper Table 2 rule).",
        "Bootstrap 95% intervals (seeded, resampling each subtask's samples) are in the CSV/HTML.",
        f"Scoring variant: {variant} ({scope}). CIVG/TVG/VP FVD/FID normalisation 100(1-(x-1)/999) is "
        "unclipped, as released: a distance below 1 scores up to 100.1"
        + ("; all-equal distances score 100 each (released rule)." if official else "."),
    ]
    key, suffix = ("_official", ", official variant") if official else ("", "")
    boards = [
        Board(
            f"mme_unify_table2{key}",
            f"MME-Unify (Table 2){suffix}",
            [(c, (c,)) for c in mu.TABLE2_COLUMNS],
            rows,
            notes,
        ),
        Board(
            f"mme_unify_table3{key}",
            f"MME-Unify unify tasks (Table 3){suffix}",
            MME_TABLE3,
            rows,
            [notes[0], notes[2]],
        ),
    ]
    if options.split_half:
        boards += split_half_boards("mme_unify", "MME-Unify", scored, MME_HEADLINE)
    return boards


# --- UniG2U ---------------------------------------------------------------------------------------


def _unig2u_pair_key(unit: str) -> str:
    return unit.removesuffix("_gta_agentic").removesuffix("_gta")


def _unig2u_protocol(res: ModelResults, suffix: str, options: Options) -> Scored | None:
    tasks = {ug.task_name(s, suffix) for s in ug.SUBTASKS}
    if not tasks & res.samples.keys():
        return None
    units = {t: ug.task_features(rows) for t in tasks if (rows := res.supported(t))}
    entry = Entry(
        res.model, units, lambda means, sizes: ug.protocol_row(means, suffix, sizes), _unig2u_pair_key
    )
    return evaluate(entry, options)


def _best_of_gta(variants: list[Scored]) -> Scored | None:
    if not variants:
        return None
    reps = [v.replicates for v in variants]
    return Scored(
        variants[0].label,
        ug.best_of_gta([v.values for v in variants]),
        None if reps[0] is None else ug.best_of_gta(reps),
        variants[0].halves if len(variants) == 1 else None,
    )


def _gain(model: Scored, base: Scored, label: str) -> Scored:
    values = ug.g2u_gain(model.values, base.values)
    reps = None
    if model.replicates is not None and base.replicates is not None:
        reps = {k: difference(v, base.replicates.get(k)) for k, v in model.replicates.items()}
    return Scored(label, values, reps, None)


def unig2u_boards(
    models: Mapping[str, ModelResults], pairs: Mapping[str, str], options: Options
) -> tuple[list[Board], dict]:
    """Table 4 (with Δ vs the paired base VLM), the Δ_Direct/Δ_GtA table, and Δ per subtask for plots."""
    direct = {m: s for m, res in models.items() if (s := _unig2u_protocol(res, "", options))}
    gta = {}
    for m, res in models.items():
        best = _best_of_gta(
            [s for suffix in ug.GTA_VARIANTS if (s := _unig2u_protocol(res, suffix, options))]
        )
        if best:
            gta[m] = best
    if not direct and not gta:
        return [], {}
    bases = [b for b in dict.fromkeys(pairs.values()) if b in direct]
    blocks = {base: [m for m in models if pairs.get(m) == base and m != base] for base in bases}
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
                    row = _with_delta(row, gain.values[ug.OVERALL], to_row(gain).intervals.get(ug.OVERALL))
                    deltas[row.label] = {s: gain.values.get(s) for s in ug.SUBTASKS + ug.CATEGORIES}
                table4.append(row)
            if base and m in direct:
                gains.append(to_row(_gain(direct[m], direct[base], f"{m}: Δ_Direct (vs {base})")))
            if m in direct and m in gta:
                gains.append(to_row(_gain(gta[m], direct[m], f"{m}: Δ_GtA (GtA − Direct)")))
    cat_columns = [(c, (c,)) for c in ug.CATEGORIES]
    notes = [
        "Accuracy (%). Overall = sample-weighted mean of the 7 categories; '*' = base VLM; "
        "Δ = Overall minus the paired base VLM's Overall (--pairs). GtA = best GtA variant (Eq. 5).",
    ]
    boards = [
        Board(
            "unig2u_table4",
            "UniG2U-Bench (Table 4)",
            [*cat_columns, (ug.OVERALL, (ug.OVERALL,)), (ug.DELTA, (ug.DELTA,))],
            table4,
            notes,
        ),
        Board(
            "unig2u_subtasks",
            "UniG2U-Bench subtasks (Tables 11/12)",
            [(s, (s,)) for s in ug.SUBTASKS],
            table4,
        ),
    ]
    if gains:
        boards.append(
            Board(
                "unig2u_gains",
                "UniG2U-Bench G2U gains (Eq. 6)",
                [*cat_columns, (ug.OVERALL, (ug.OVERALL,))],
                gains,
                ["Paired bootstrap intervals (same resampled documents for both runs) in the CSV/HTML."],
            )
        )
    if options.split_half:
        entries = [Scored(f"{m} (direct)", s.values, None, s.halves) for m, s in direct.items()]
        entries += [Scored(f"{m} (GtA)", s.values, None, s.halves) for m, s in gta.items()]
        boards += split_half_boards("unig2u", "UniG2U-Bench", entries, [*ug.CATEGORIES, ug.OVERALL])
    return boards, deltas


def _with_delta(row: Row, delta: Score, interval: Interval | None = None) -> Row:
    row.values[ug.DELTA] = _float(delta)
    row.intervals[ug.DELTA] = interval
    return row


# --- Uni-MMMU -------------------------------------------------------------------------------------


def uni_mmmu_boards(models: Mapping[str, ModelResults], options: Options) -> list[Board]:
    scored = []
    for label, res in models.items():
        if not any(um.task_name(t) in res.samples for t in um.TASKS):
            continue
        units = {
            um.task_name(t): um.task_features(t, rows)
            for t in um.TASKS
            if (rows := res.supported(um.task_name(t)))
        }
        scored.append(evaluate(Entry(label, units, lambda means, sizes: um.table2_row(means)), options))
    if not scored:
        return []
    columns = [
        (c, (f"{c} step", f"{c} sample") if um.COLUMNS[c][0] in um.STEP_TASKS else (c,)) for c in um.COLUMNS
    ]
    notes = [
        "0-100 scale; Maze/Slid. cells are step/sample. C. S / C. P: judge scores 0-5 mapped to 0-100.",
        "Avg. (ours) = unweighted mean of the 14 columns (step-level Maze/Slid.). The paper's Avg. matches "
        "no formula over its own columns; this is not it and is not comparable to it.",
    ]
    boards = [
        Board(
            "uni_mmmu_table2",
            "Uni-MMMU (Table 2)",
            [*columns, (um.OUR_AVG, (um.OUR_AVG,))],
            [to_row(s) for s in scored],
            notes,
        )
    ]
    by_discipline = [to_row(s) for s in scored]
    if any(
        v is not None for row in by_discipline for k, v in row.values.items() if k in um.DISCIPLINE_COLUMNS
    ):
        boards.append(
            Board(
                "uni_mmmu_science_disciplines",
                "Uni-MMMU science by discipline (ours)",
                [(c, (c,)) for c in um.DISCIPLINE_COLUMNS],
                by_discipline,
                [
                    "Sci. R/T/I of Table 2 restricted to one discipline (level_1_category); the paper pools them."
                ],
            )
        )
    if options.split_half:
        boards += split_half_boards(
            "uni_mmmu", "Uni-MMMU", scored, [*(k for _, ks in columns for k in ks), um.OUR_AVG]
        )
    return boards


# --- GapEval --------------------------------------------------------------------------------------


def gapeval_scored(models: Mapping[str, ModelResults], options: Options) -> list[Scored]:
    """Succ./Und./Gen. per category for every model with paired GapEval samples."""
    scored = []
    for label, res in models.items():
        units = {}
        for category in ge.CATEGORIES:
            und, gen = (res.supported(t) for t in ge.task_names(category))
            if und and gen:
                units[category] = ge.joint_features(und, gen)
        if units:
            scored.append(evaluate(Entry(label, units, ge.parts_row), options))
    return scored


def gapeval_unpaired(models: Mapping[str, ModelResults], warn=None) -> list[str]:
    """One line per model, category and missing direction: questions answered in one direction only
    (counted as wrong on the missing side), or a whole direction not run; each line is also printed as a warning."""
    import sys

    lines = []
    for label, res in models.items():
        for category in ge.CATEGORIES:
            und, gen = (res.supported(t) for t in ge.task_names(category))
            if und and gen:
                lines += [f"{label} / {category}: {line}" for line in ge.describe_unpaired(und, gen)]
            elif und or gen:
                missing = "generation" if und else "understanding"
                lines.append(f"{label} / {category}: no {missing} samples, category not scored")
    for line in lines:
        print(f"warning: GapEval unpaired: {line}", file=warn or sys.stderr)
    return lines


def gap_inputs(scored: list[Scored]) -> dict[str, dict[str, tuple[float, float, float, float]]]:
    """Joint proportions (p11, p10, p01, p00) per category of the models that ran all four categories."""
    return {
        s.label: {c: ge.joint_proportions(*(s.values[f"{c} {p}"] for p in ge.PARTS)) for c in ge.CATEGORIES}
        for s in scored
        if all(s.values.get(f"{c} Succ.") is not None for c in ge.CATEGORIES)
    }


def fit_gaps(
    joint: Mapping[str, Mapping[str, tuple[float, ...]]], variant: str = "official"
) -> dict[str, dict[str, float]]:
    """Gap Scores (0-100, lower is better) per model and category from the MIRT fit in `gap_score`, and per
    cell whether its fit converged (`<category> Gap converged`: 1.0 or 0.0)."""
    import warnings

    from lmms_eval_unify.benchmarks.gapeval.gap_score import fit_gap_scores

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # non-convergence is reported per cell by `gapeval_boards`
        fitted = fit_gap_scores(joint, variant=variant).models
    return {
        label: {
            **{f"{c} {ge.GAP}": cell.gap for c, cell in fit.categories.items()},
            **{f"{c} {ge.GAP_CONVERGED}": float(cell.converged) for c, cell in fit.categories.items()},
            ge.OVERALL_GAP: fit.overall,
        }
        for label, fit in fitted.items()
    }


def gap_not_converged(gaps: Mapping[str, Mapping[str, float]], variant: str, warn=None) -> list[str]:
    """One warning line naming every (model / category) cell whose Gap fit did not converge (none if all
    did); the line is also printed to `warn` (stderr)."""
    import sys

    cells = [
        f"{label} / {c}"
        for label, values in gaps.items()
        for c in ge.CATEGORIES
        if values.get(f"{c} {ge.GAP_CONVERGED}") == 0.0
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


def gapeval_boards(
    scored: list[Scored],
    gaps: Mapping[str, Mapping[str, float]],
    options: Options,
    unpaired: Sequence[str] = (),
    warn=None,
) -> tuple[list[Board], dict]:
    """GapEval Table 2 (Succ./Und./Gen./Gap per category, overall Gap), the Gap fit's convergence per cell
    (with a warning naming the cells that did not converge) and Fig. 3's (ability, gap) points."""
    if not scored:
        return [], {}
    rows = [to_row(s) for s in scored]
    for row in rows:
        row.values.update(gaps.get(row.label, {}))
    columns = [
        (f"{ge.CATEGORY_TITLES[c]} {p}", (f"{c} {p}",)) for c in ge.CATEGORIES for p in (*ge.PARTS, ge.GAP)
    ]
    notes = [
        "Succ. = both directions correct, Und./Gen. = text/image accuracy (%); Gap↓ from the MIRT fit "
        f"(lmms_eval_unify.benchmarks.gapeval.gap_score, {options.gap_variant} variant) for models that ran all four categories. "
        "Intervals (CSV/HTML) cover Succ./Und./Gen. only.",
        *(f"Unpaired: {line}" for line in unpaired),
        *(f"Warning: {line}" for line in gap_not_converged(gaps, options.gap_variant, warn)),
    ]
    board = Board(
        "gapeval_table2", "GapEval (Table 2)", [*columns, (ge.OVERALL_GAP, (ge.OVERALL_GAP,))], rows, notes
    )
    counts = Board(
        "gapeval_joint_counts",
        "GapEval joint counts (the Gap Score's input)",
        [(f"{ge.CATEGORY_TITLES[c]} {cell}", (f"{c} {cell}",)) for c in ge.CATEGORIES for cell in ge.JOINT_CELLS],
        [Row(r.label, r.values) for r in rows],  # counts: no intervals
        ["Paired (question, repeat) rows per category: n11 both directions correct, n10 text only, "
         "n01 image only, n00 neither. A missing side counts as wrong."],
    )  # fmt: skip
    boards = [board, counts]
    if gaps:
        boards.append(
            Board(
                "gapeval_gap_convergence",
                "GapEval Gap fit convergence per cell",
                [(ge.CATEGORY_TITLES[c], (f"{c} {ge.GAP_CONVERGED}",)) for c in ge.CATEGORIES],
                [Row(r.label, r.values) for r in rows if r.label in gaps],
                [f"1.00 = the {options.gap_variant} fit of this model reached a local minimum (full Newton step "
                 "< step_tol, docs/gap_score.md), 0.00 = it did not; '-' = not fitted."],
            )
        )  # fmt: skip
    if options.split_half:
        boards += split_half_boards(
            "gapeval", "GapEval", scored, [f"{c} {p}" for c in ge.CATEGORIES for p in ge.PARTS]
        )
    return boards, {r.label: (ge.ability(r.values), r.values.get(ge.OVERALL_GAP)) for r in rows}
