"""GapEval Table 2 parts: per-category Succ./Und./Gen. from paired understanding and generation samples.

Each GapEval question is asked in both directions (`gapeval_<category>_und`, `gapeval_<category>_gen`),
paired by question id and repeat (else doc_id). Und./Gen. are the two accuracies; Succ. is the share of
questions answered correctly in both (a question answered in one direction only counts as wrong on the other
side and is reported). The Gap Score itself is a MIRT fit (`lmms_eval_unify.benchmarks.gapeval.gap_score`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from lmms_eval_unify.benchmarks.gapeval.spec import CATEGORIES, CATEGORY_TITLES, task_name  # noqa: F401 - re-exported
from lmms_eval_unify.scoring.aggregate import Score, Value
from lmms_eval_unify.scoring.samples import Features, TaskMeans, field

PARTS = ("Succ.", "Und.", "Gen.")
# The 2x2 table of paired (question, repeat) rows the Gap Score is fitted on: both right, text only, image
# only, both wrong.
JOINT_CELLS = ("n11", "n10", "n01", "n00")
GAP = "Gap"
GAP_CONVERGED = "Gap converged"
OVERALL_GAP = "Overall Gap"


def task_names(category: str) -> tuple[str, str]:
    """The understanding and generation task of a category."""
    return task_name(category, "und"), task_name(category, "gen")


def pair_key(row: Mapping) -> Hashable:
    """What pairs a question's two directions: ``(question_id, repeat)`` when the task wrote them (our GapEval
    tasks do, so runs with different ``--limit``/repeats still pair correctly), else ``doc_id``."""
    if row.get("question_id") is not None:
        return str(row["question_id"]), int(row.get("repeat") or 0)
    return row["doc_id"]


def _order(key: Hashable) -> tuple:
    return str(type(key)), key


def unpaired(und_rows: Sequence[Mapping], gen_rows: Sequence[Mapping]) -> tuple[list, list]:
    """(questions answered only in text, questions answered only with an image), by :func:`pair_key`."""
    und, gen = {pair_key(r) for r in und_rows}, {pair_key(r) for r in gen_rows}
    return sorted(und - gen, key=_order), sorted(gen - und, key=_order)


def describe_unpaired(und_rows: Sequence[Mapping], gen_rows: Sequence[Mapping], shown: int = 10) -> list[str]:
    """Report lines for :func:`unpaired` questions (ids as ``question_id``, ``question_id#r<repeat>`` or the
    doc_id; the first ``shown`` of each side)."""

    def name(key: Hashable) -> Hashable:
        return key if not isinstance(key, tuple) else key[0] if key[1] == 0 else f"{key[0]}#r{key[1]}"

    lines = []
    for missing, keys in zip(
        ("a generation answer", "an understanding answer"), unpaired(und_rows, gen_rows), strict=True
    ):
        if keys:
            more = f", ... ({len(keys) - shown} more)" if len(keys) > shown else ""
            ids = ", ".join(str(name(k)) for k in keys[:shown])
            lines.append(f"{len(keys)} question(s) without {missing}, counted as wrong there: {ids}{more}")
    return lines


def joint_features(und_rows: Sequence[Mapping], gen_rows: Sequence[Mapping]) -> Features:
    """Per-question understanding, generation and joint correctness (percent), paired by :func:`pair_key`.

    A question with only one direction in the samples keeps its answered side; the missing side counts as
    wrong (``unpaired`` lists them for the report).
    """
    und_by_key = {pair_key(row): row for row in und_rows}
    gen_by_key = {pair_key(row): row for row in gen_rows}
    keys = sorted(und_by_key.keys() | gen_by_key.keys(), key=_order)
    u = field([und_by_key.get(k, {}) for k in keys], "correct", "zero")
    g = field([gen_by_key.get(k, {}) for k in keys], "correct", "zero")
    return {"und": 100.0 * u, "gen": 100.0 * g, "succ": 100.0 * u * g}


def joint_proportions(succ: Value, und: Value, gen: Value) -> tuple[Value, Value, Value, Value]:
    """(p11, p10, p01, p00) from Succ./Und./Gen. in percent: both right, text only, image only, both wrong."""
    p11, pu, pg = succ / 100.0, und / 100.0, gen / 100.0
    return p11, pu - p11, pg - p11, 1.0 - pu - pg + p11


def parts_row(means: TaskMeans, sizes: Mapping[str, int] | None = None) -> dict[str, Score]:
    """Succ./Und./Gen. per category (keys like `reasoning Succ.`) and, given the number of paired rows per
    category (`sizes`), the joint counts (`reasoning n11`, ...); `None` where a category was not run."""
    row: dict[str, Score] = {}
    for category in CATEGORIES:
        m = means.get(category)
        for part, key in zip(PARTS, ("succ", "und", "gen"), strict=True):
            row[f"{category} {part}"] = None if m is None else m[key]
        n = (sizes or {}).get(category)
        counts: tuple[Score, ...] = (None,) * 4
        if m is not None and n is not None:
            counts = tuple(share * n for share in joint_proportions(m["succ"], m["und"], m["gen"]))
        for cell, count in zip(JOINT_CELLS, counts, strict=True):
            row[f"{category} {cell}"] = count
    return row


def ability(row: Mapping[str, Score]) -> float | None:
    """Fig. 3's x-axis as we define it: mean of Und. and Gen. over the categories the model ran."""
    values = [v for c in CATEGORIES for p in ("Und.", "Gen.") if (v := row.get(f"{c} {p}")) is not None]
    return float(np.mean(np.asarray(values))) if values else None
