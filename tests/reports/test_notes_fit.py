"""Notes that fit (issue 33 item 3): over nine runs of all four benchmarks made as a new user makes them
(tests/user_runs.py), the leaderboard lists its marked cells once per reason and set of rows, not once per cell,
and every run's printed tables carry short caveat codes spelt out once."""

from __future__ import annotations

import copy
from collections.abc import Sequence

import pytest
from leaderboard_runs import run
from lmms_eval.utils import make_table
from user_runs import in_memory, write_nine_runs

from lmms_eval_unify.benchmarks import metric_families
from lmms_eval_unify.integration.paper_scores import CAVEAT_LEGEND_KEY, add_paper_scores, legend_lines
from lmms_eval_unify.reports import leaderboard as leaderboard_module
from lmms_eval_unify.reports.boards import Board
from lmms_eval_unify.reports.comparability import TINY_METRICS, Caveat
from lmms_eval_unify.reports.render import (
    NOT_COMPARABLE,
    PARTLY_INVALID,
    UNSCORED,
    all_notes,
    board_cells,
    invalid_reason,
    unscored_reason,
)

MARKDOWN_BYTES = 25_000
LATEX_BYTES = 30_000
TABLE_LINE_CHARS = 200


def listed(notes: Sequence[str], symbol: str, row: str, column: str, reason: str) -> bool:
    """Whether a note ``<symbol> <rows>[ / <columns>]: <reason>.`` names the cell: its row among the rows, and its
    column among the columns (a note without columns names every column its rows show a value in)."""
    for note in notes:
        head = note.removesuffix(f": {reason}.")
        if head != note and head.startswith(f"{symbol} "):
            rows, _, columns = head.removeprefix(f"{symbol} ").partition(" / ")
            if row in rows.split(", ") and (not columns or column in columns.split(", ")):
                return True
    return False


def marks(board: Board) -> list[tuple[str, str, str, str]]:
    """Every (symbol, row, column, reason) the board's cells are marked with."""
    found = []
    for row, key, column in board_cells(board):
        cell = row.cells.get(key)
        if cell is not None and cell.n and cell.unscored:
            found.append((UNSCORED, row.label, column, unscored_reason(cell)))
        elif cell is not None and cell.n_invalid and row.values.get(key) is not None:
            found.append((PARTLY_INVALID, row.label, column, invalid_reason(cell)))
        found += [(NOT_COMPARABLE, row.label, column, Caveat.of(c).reason) for c in row.caveats.get(key, ())]
    return found


@pytest.fixture(scope="module")
def nine_runs(tmp_path_factory):
    """The nine runs, their leaderboard (no bootstrap, no figures) and the boards it wrote."""
    root = tmp_path_factory.mktemp("nine_runs")
    files, pairs = write_nine_runs(root)
    boards: list[Board] = []
    markdown = leaderboard_module.markdown

    def recording(board: Board) -> str:
        boards.append(board)
        return markdown(board)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(leaderboard_module, "markdown", recording)
        assert run([root / "runs", "--pairs", pairs, "--bootstrap", 0, "--no-plots", "-o", root / "board"]) == 0
    return files, root / "board", boards


@pytest.mark.heavy
@pytest.mark.subprocess  # the Gap fit runs in a child interpreter
def test_the_leaderboard_of_nine_runs_fits(nine_runs):
    _, out, boards = nine_runs
    assert (out / "leaderboard.md").stat().st_size < MARKDOWN_BYTES
    assert (out / "leaderboard.tex").stat().st_size < LATEX_BYTES
    assert len(boards) == 9


@pytest.mark.heavy
@pytest.mark.subprocess
def test_every_marked_cell_is_listed_under_each_of_its_reasons_once_per_row_set(nine_runs):
    _, _, boards = nine_runs
    cells, lines = 0, 0
    for board in boards:
        notes, found = all_notes(board), marks(board)
        missing = [mark for mark in found if not listed(notes, *mark)]
        assert not missing, (board.key, missing[:3])
        grouped = [note for note in notes if note.startswith((UNSCORED, PARTLY_INVALID, NOT_COMPARABLE))]
        assert len(grouped) <= len({(symbol, row, reason) for symbol, row, _, reason in found})
        cells, lines = cells + len(found), lines + len(grouped)
    assert lines * 10 < cells  # one note lists many cells


@pytest.mark.heavy
@pytest.mark.subprocess
def test_tiny_metrics_mark_only_cells_that_read_a_task_with_a_metric_backbone(nine_runs):
    _, _, boards = nine_runs
    tiny_cells = 0
    for board in boards:
        for row, key, _ in board_cells(board):
            tiny = any(Caveat.of(c).reason == TINY_METRICS for c in row.caveats.get(key, ()))
            cell = row.cells.get(key)
            backbone = cell is not None and any(metric_families(task) for _, task in cell.sources)
            assert not tiny or backbone, (board.key, row.label, key)
            tiny_cells += tiny
    assert tiny_cells


@pytest.mark.heavy
@pytest.mark.subprocess  # every run's Gap fit runs in a child interpreter
def test_every_runs_printed_tables_are_narrow_and_spell_out_their_codes_once(nine_runs):
    files, _, _ = nine_runs
    codes_seen = set()
    for results_file in files:
        results = in_memory(results_file)
        add_paper_scores(results, None)
        printed = [make_table(copy.deepcopy(results), column) for column in ("results", "groups")]
        lines = [line for table in printed for line in table.splitlines()] + legend_lines(results)
        assert max(map(len, lines)) < TABLE_LINE_CHARS, results_file
        codes = {code for row in results["groups"].values() for code in str(row.get("caveats,paper", "")).split()}
        assert codes == set(results.get(CAVEAT_LEGEND_KEY, {}))
        assert all(f"  {code} = " in "\n".join(legend_lines(results)) for code in codes)
        codes_seen |= codes
    assert codes_seen
