"""GapEval Table 2 parts: per-category Succ./Und./Gen. from paired understanding and generation samples.

Each GapEval question is asked in both directions (`gapeval_<category>_und`, `gapeval_<category>_gen`,
the same doc_ids). Und./Gen. are the two accuracies; Succ. is the share of questions answered
correctly in both. The Gap Score itself is a MIRT fit (`lmms_eval_unify.scoring.gap_score`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from lmms_eval_unify.scoring.aggregate import Score
from lmms_eval_unify.scoring.samples import Features, TaskMeans, field

CATEGORIES = ("world_knowledge", "numerical_perception", "instruction_following", "reasoning")
CATEGORY_TITLES = dict(
    zip(
        CATEGORIES,
        ("World Knowledge", "Numerical Perception", "Instruction Following", "Reasoning"),
        strict=True,
    )
)
PARTS = ("Succ.", "Und.", "Gen.")
GAP = "Gap"
OVERALL_GAP = "Overall Gap"


def task_names(category: str) -> tuple[str, str]:
    """The understanding and generation task of a category."""
    return f"gapeval_{category}_und", f"gapeval_{category}_gen"


def joint_features(und_rows: Sequence[Mapping], gen_rows: Sequence[Mapping]) -> Features:
    """Per-question understanding, generation and joint correctness (percent), paired by doc_id."""
    gen_by_doc = {row["doc_id"]: row for row in gen_rows}
    und = [row for row in und_rows if row["doc_id"] in gen_by_doc]
    gen = [gen_by_doc[row["doc_id"]] for row in und]
    u, g = field(und, "correct", "zero"), field(gen, "correct", "zero")
    return {"und": 100.0 * u, "gen": 100.0 * g, "succ": 100.0 * u * g}


def joint_proportions(succ: float, und: float, gen: float) -> tuple[float, float, float, float]:
    """(p11, p10, p01, p00) from Succ./Und./Gen. in percent: both right, text only, image only, both wrong."""
    p11, pu, pg = succ / 100.0, und / 100.0, gen / 100.0
    return p11, pu - p11, pg - p11, 1.0 - pu - pg + p11


def parts_row(means: TaskMeans, sizes: Mapping[str, int] | None = None) -> dict[str, Score]:
    """Succ./Und./Gen. per category (keys like `reasoning Succ.`); `None` where a category was not run."""
    row: dict[str, Score] = {}
    for category in CATEGORIES:
        m = means.get(category)
        for part, key in zip(PARTS, ("succ", "und", "gen"), strict=True):
            row[f"{category} {part}"] = None if m is None else m[key]
    return row


def ability(row: Mapping[str, Score]) -> Score:
    """Fig. 3's x-axis as we define it: mean of Und. and Gen. over the categories the model ran."""
    values = [
        row[f"{c} {p}"] for c in CATEGORIES for p in ("Und.", "Gen.") if row.get(f"{c} {p}") is not None
    ]
    return float(np.mean(values)) if values else None
