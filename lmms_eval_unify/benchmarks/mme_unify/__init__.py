"""MME-Unify (arXiv 2504.03641): data, prompts, answer spaces and scorers.

This package's ``__init__`` is the benchmark's entry in the registry (``lmms_eval_unify.benchmarks``): its
display names, its parts and its paper roll-up, each part imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lmms_eval_unify.scoring.aggregate import Score

DISPLAY_NAMES = ("MME-Unify", "MME-U")
"""How the paper and the boards name it; no code outside its folders and the registry does (tests/test_layout.py)."""


def _spec() -> ModuleType:
    from lmms_eval_unify.benchmarks.mme_unify import spec

    return spec


def _leaderboard() -> ModuleType:
    from lmms_eval_unify.benchmarks.mme_unify import leaderboard

    return leaderboard


def _export() -> ModuleType:
    from lmms_eval_unify.benchmarks.mme_unify import export

    return export


def _synthetic() -> ModuleType:
    from lmms_eval_unify.benchmarks.mme_unify import synthetic

    return synthetic


def _offline_data() -> ModuleType:
    from lmms_eval_unify.benchmarks.mme_unify.offline import data

    return data


def _offline_prepare() -> ModuleType:
    from lmms_eval_unify.benchmarks.mme_unify.offline import prepare

    return prepare


PARTS: dict[str, Callable[[], ModuleType]] = {
    "spec": _spec,
    "leaderboard": _leaderboard,
    "export": _export,
    "synthetic": _synthetic,
    "offline.data": _offline_data,
    "offline.prepare": _offline_prepare,
}
"""The modules horizontal code reaches through ``benchmarks.part`` (the registry's table of conventions)."""


def paper_score() -> Callable[..., dict[str, Score]]:
    """The paper-level roll-up: how task means become this benchmark's paper row (the one place it is named)."""
    from lmms_eval_unify.benchmarks.mme_unify.paper import table2_row

    return table2_row
