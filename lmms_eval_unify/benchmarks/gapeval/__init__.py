"""GapEval: paired understanding/generation items, judged scorers, the Gap Score and offline data.

This package's ``__init__`` is the benchmark's entry in the registry (``lmms_eval_unify.benchmarks``): its
display names, its parts and its paper roll-up, each part imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lmms_eval_unify.benchmarks.parts import lazy_parts

if TYPE_CHECKING:
    from lmms_eval_unify.scoring.aggregate import Score

DISPLAY_NAMES = ("GapEval",)
"""How the paper and the boards name it; no code outside its folders and the registry does (tests/test_layout.py)."""


PARTS = lazy_parts(
    __name__,
    ("spec", "leaderboard", "export", "synthetic", "judge_plan", "reference_judge", "offline.data", "offline.prepare"),
)
"""The modules horizontal code reaches through ``benchmarks.part`` (the registry's table of conventions)."""


def paper_score() -> Callable[..., dict[str, Score]]:
    """The paper-level roll-up: how task means become this benchmark's paper row (the one place it is named)."""
    from lmms_eval_unify.benchmarks.gapeval.paper import parts_row

    return parts_row
