"""GapEval: paired understanding/generation items, judged scorers, the Gap Score and offline data.

This package's ``__init__`` is the benchmark's entry in the registry (``lmms_eval_unify.benchmarks``): its
display names, its parts and its paper roll-up, each part imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lmms_eval_unify.scoring.aggregate import Score

DISPLAY_NAMES = ("GapEval",)
"""How the paper and the boards name it; no code outside its folders and the registry does (tests/test_layout.py)."""


def _spec() -> ModuleType:
    from lmms_eval_unify.benchmarks.gapeval import spec

    return spec


def _leaderboard() -> ModuleType:
    from lmms_eval_unify.benchmarks.gapeval import leaderboard

    return leaderboard


def _export() -> ModuleType:
    from lmms_eval_unify.benchmarks.gapeval import export

    return export


def _synthetic() -> ModuleType:
    from lmms_eval_unify.benchmarks.gapeval import synthetic

    return synthetic


def _judge_plan() -> ModuleType:
    from lmms_eval_unify.benchmarks.gapeval import judge_plan

    return judge_plan


def _reference_judge() -> ModuleType:
    from lmms_eval_unify.benchmarks.gapeval import reference_judge

    return reference_judge


def _offline_data() -> ModuleType:
    from lmms_eval_unify.benchmarks.gapeval.offline import data

    return data


def _offline_prepare() -> ModuleType:
    from lmms_eval_unify.benchmarks.gapeval.offline import prepare

    return prepare


PARTS: dict[str, Callable[[], ModuleType]] = {
    "spec": _spec,
    "leaderboard": _leaderboard,
    "export": _export,
    "synthetic": _synthetic,
    "judge_plan": _judge_plan,
    "reference_judge": _reference_judge,
    "offline.data": _offline_data,
    "offline.prepare": _offline_prepare,
}
"""The modules horizontal code reaches through ``benchmarks.part`` (the registry's table of conventions)."""


def paper_score() -> Callable[..., dict[str, Score]]:
    """The paper-level roll-up: how task means become this benchmark's paper row (the one place it is named)."""
    from lmms_eval_unify.benchmarks.gapeval.paper import parts_row

    return parts_row
