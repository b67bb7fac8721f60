"""A value that needs a part none of whose samples was scored has no value (`reports.boards.evaluate`), whatever
the roll-up does with a part the model cannot do."""

from __future__ import annotations

import numpy as np
import pytest

from lmms_eval_unify.reports.boards import Board, CellSamples, Entry, Options, evaluate, to_row
from lmms_eval_unify.reports.render import NEEDS_UNSCORED, sample_notes, value_text
from lmms_eval_unify.scoring.aggregate import mean_missing_as_zero


def average_row(means, sizes):
    """Two parts and their mean, a missing part counted as 0 (MME-U's rule for a subtask the model cannot do)."""
    a, b = (means.get(u, {}).get("acc") for u in ("a", "b"))
    return {"a": a, "b": b, "avg": mean_missing_as_zero([a, b])}


def entry(b_failures: list[str], b_supported: bool = True) -> Entry:
    units = {"a": {"acc": np.array([100.0, 0.0])}}
    if b_supported:
        units["b"] = {"acc": np.array([0.0 if reason else 100.0 for reason in b_failures])}
    return Entry("m", units, average_row, failures={"a": ["", ""], "b": b_failures})


def test_an_average_over_a_part_with_no_scored_sample_is_withheld_and_says_which_part():
    scored = evaluate(entry(["judge_failed"] * 3), Options(replicates=20))
    assert scored.values["a"] == 50.0 and scored.values["b"] is None and scored.values["avg"] is None
    assert scored.replicates is not None and scored.replicates["avg"] is None
    cell = scored.cells["avg"]
    assert (cell.withheld, cell.empty_parts, cell.scored, cell.unscored) == (True, frozenset({"b"}), 2, True)
    row = to_row(scored)
    assert value_text(row, "avg") == "—"
    board = Board("t", "T", [("a", ("a",)), ("avg", ("avg",))], [row])
    assert sample_notes(board) == [f"— m / avg: {NEEDS_UNSCORED}."]


def test_a_part_the_model_cannot_do_keeps_the_papers_zero_and_a_partly_scored_part_its_mark():
    unsupported = evaluate(entry(["unsupported"] * 2, b_supported=False), Options(replicates=0))
    assert unsupported.values["avg"] == pytest.approx(25.0) and not unsupported.cells["avg"].withheld
    partial = evaluate(entry(["judge_failed", ""]), Options(replicates=0))
    assert partial.values["avg"] == pytest.approx(50.0) and not partial.cells["avg"].unscored
    assert value_text(to_row(partial), "avg") == "50.00†"


def test_empty_parts_add_up_and_a_withheld_value_stays_withheld():
    empty = CellSamples.of(["model_error"], sources=[("c", "t")], unit="b")
    total = CellSamples.of(["", ""], unit="a") + empty
    assert (empty.empty_parts, total.empty_parts, total.withheld) == (frozenset({"b"}), frozenset({"b"}), False)
    assert CellSamples.of(["unsupported"], unit_supported=False, unit="b").empty_parts == frozenset()
