"""Rendering a board: LaTeX escaping and structure, missing values, step/sample cells, cells that are unscored
or partly invalid, notes grouped by reason and row set, clipped intervals, and the CSV/JSON record of every cell."""

from __future__ import annotations

import csv

from lmms_eval_unify.reports.boards import Board, CellSamples, Row
from lmms_eval_unify.reports.comparability import Caveat
from lmms_eval_unify.reports.render import (
    board_record,
    caveat_notes,
    html_board,
    latex,
    latex_escape,
    markdown,
    write_csv,
)


def test_latex_escapes_specials_and_writes_the_boards_symbols_as_math():
    assert latex_escape("a_b & 50% #1 {x} ~^\\") == (
        r"a\_b \& 50\% \#1 \{x\} \textasciitilde{}\textasciicircum{}\textbackslash{}"
    )
    assert latex_escape("Δ vs base (ρ, ↓)") == r"$\Delta$ vs base ($\rho$, $\downarrow$)"


def test_latex_table():
    board = Board(
        key="uni_mmmu_table2",
        title="Uni-MMMU (Table 2)",
        columns=[("Maze T", ("step", "sample")), ("Δ Overall", ("overall",))],
        rows=[Row("my_model", {"step": 50.0, "sample": 12.345, "overall": None})],
        notes=["scores in %"],
    )
    assert latex(board).splitlines() == [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        r"\caption{Uni-MMMU (Table 2)}",
        r"\label{tab:uni_mmmu_table2}",
        r"\begin{tabular}{lrr}",
        r"\toprule",
        r"Model & Maze T & $\Delta$ Overall \\",
        r"\midrule",
        r"my\_model & 50.00/12.35 & - \\",
        r"\bottomrule",
        r"\end{tabular}",
        r"\par\footnotesize scores in \%",
        r"\end{table}",
    ]


def test_unscored_and_partly_invalid_cells_and_clipped_intervals():
    outage = CellSamples(40, {"judge_failed": 40})
    partial = CellSamples(40, {"judge_failed": 3})
    unsupported = CellSamples(2, {}, 2)
    board = Board(
        key="b",
        title="B",
        columns=[("Geo I", ("geo_i",)), ("Geo T", ("geo_t",)), ("TIG", ("tig",))],
        rows=[
            Row("m", {"geo_i": None, "geo_t": 75.0, "tig": 15.0}, {"tig": (-30.0, 60.0)}, {"geo_i": outage}),
            Row("n", {"geo_i": 50.0, "geo_t": None, "tig": None}, {}, {"geo_i": partial, "geo_t": unsupported}),
        ],
        ranges={"tig": (0.0, 100.0)},
    )
    text = markdown(board)
    assert "| m | — | 75.00 | 15.00 |" in text and "| n | 50.00† | — | - |" in text
    assert "_— m / Geo I: no sample scored (judge_failed)._" in text
    assert "_— n / Geo T: no sample scored (unsupported)._" in text
    assert "_† n / Geo I: some samples invalid (judge_failed)._" in text
    record = board_record(board)["rows"][0]["cells"]
    assert record["tig"] == {"value": 15.0, "ci_low": 0.0, "ci_high": 60.0}
    assert record["geo_i"] == {
        "value": None, "ci_low": None, "ci_high": None, "n": 40, "invalid": 40, "unsupported": 0,
        "reasons": {"judge_failed": 40},
    }  # fmt: skip


def test_csv_carries_clipped_intervals_and_sample_counts(tmp_path):
    board = Board(
        "b",
        "B",
        [("TIG", ("tig",))],
        [Row("m", {"tig": 15.0}, {"tig": (-30.0, 60.0)}, {"tig": CellSamples(4, {"missing_image": 1})})],
        ranges={"tig": (0.0, 100.0)},
    )
    write_csv(board, tmp_path / "b.csv")
    with (tmp_path / "b.csv").open(newline="") as f:
        (row,) = csv.DictReader(f)
    assert row == {
        "model": "m", "tig": "15.0000", "tig ci_low": "0.0000", "tig ci_high": "60.0000",
        "tig n": "4", "tig invalid": "1", "tig unsupported": "0",
    }  # fmt: skip


def limit_caveat(task: str, n_dataset: int) -> Caveat:
    return Caveat(
        f"{task}: 2 of {n_dataset} items (--limit 2)",
        "part of the dataset (--limit 2)",
        task,
        f"2 of {n_dataset} items",
    )


def marked_board() -> Board:
    """Rows a and b: every value from a --limit run; a also judged differently on Y; c: tiny metrics on X and the
    average; d: unmarked; e: unscored on X and Y for two reasons, partly invalid on the average."""
    limited = {"x": (limit_caveat("t1", 9),), "y": (limit_caveat("t2", 7),)}
    limited["avg"] = limited["x"] + limited["y"]
    tiny = Caveat("t1: tiny metrics", "tiny metrics", "t1")
    outage = CellSamples(4, {"judge_failed": 3}, 1)
    return Board(
        key="b",
        title="B",
        columns=[("X", ("x",)), ("Y", ("y",)), ("Avg", ("avg",))],
        rows=[
            Row("a", {"x": 1.0, "y": 2.0, "avg": 1.5}, caveats={**limited, "y": (*limited["y"], "judges differ")}),
            Row("b", {"x": 3.0, "y": 4.0, "avg": 3.5}, caveats=dict(limited)),
            Row("c", {"x": 5.0, "y": 6.0, "avg": 5.5}, caveats={"x": (tiny,), "avg": (tiny,)}),
            Row("d", {"x": 7.0, "y": 8.0, "avg": 7.5}),
            Row(
                "e",
                {"x": None, "y": None, "avg": 1.0},
                cells={"x": outage, "y": outage, "avg": CellSamples(8, {"judge_failed": 2})},
            ),
        ],
    )


def test_notes_list_the_cells_once_per_reason_and_row_set():
    board = marked_board()
    assert caveat_notes(board) == [
        "‡ a, b: part of the dataset (--limit 2).",
        "‡ a / Y: judges differ.",
        "‡ c / X, Avg: tiny metrics.",
    ]
    text = markdown(board)
    assert "_— e / X, Y: no sample scored (judge_failed 75%, unsupported 25%)._" in text
    assert "_† e / Avg: some samples invalid (judge_failed)._" in text


def test_a_row_none_of_whose_values_is_comparable_carries_one_mark_on_its_label():
    board = marked_board()
    text = markdown(board)
    assert "| a‡ | 1.00 | 2.00 | 1.50 |" in text and "| b‡ | 3.00 | 4.00 | 3.50 |" in text
    assert "| c | 5.00‡ | 6.00 | 5.50‡ |" in text and "| d | 7.00 | 8.00 | 7.50 |" in text
    assert r"a$^\ddagger$ & 1.00 & 2.00 & 1.50 \\" in latex(board)
    assert "<th>a‡</th><td>1.00</td>" in html_board(board)
