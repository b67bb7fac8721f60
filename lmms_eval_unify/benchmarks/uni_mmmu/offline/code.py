"""Offline generator of Uni-MMMU code items in the official data's fields (images as PIL): the data that
``lmms-eval-unify data generate uni_mmmu`` writes; the scorer and answer space stay in ``uni_mmmu.code``."""

from __future__ import annotations

import random
from typing import Any

from lmms_eval_unify.benchmarks.uni_mmmu.svg import (
    TIERS,
    describe_svg,
    generate_svg,
    render_svg,
)


def generate_code_items(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` programs in the official ``svg/metadata.json`` fields (tiers A, B, C in turn), with the
    reference rendering and, for the baselines, a ground-truth summary (the official data has none)."""
    rng = random.Random(f"code/{seed}")
    items = []
    for index in range(n):
        program = generate_svg(TIERS[index % len(TIERS)], rng)
        items.append(
            {
                "id": f"svg_{seed}_{index:05d}",
                "difficulty": TIERS[index % len(TIERS)],
                "svg": program,
                "summary": describe_svg(program),
                "gt_image": render_svg(program),
            }
        )
    return items
