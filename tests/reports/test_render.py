"""Rendering a board: LaTeX escaping and structure, missing values, step/sample cells, cells that are unscored
or partly invalid, clipped intervals, and the CSV/JSON record of every cell."""

from __future__ import annotations

import csv

from lmms_eval_unify.reports.boards import Board, CellSamples, Row
from lmms_eval_unify.reports.render import board_record, latex, latex_escape, markdown, write_csv


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
    assert "_— m / Geo I: no sample scored, judge_failed on 100% of 40 samples._" in text
    assert "_— n / Geo T: no sample scored, unsupported on 100% of 2 samples._" in text
    assert "_† n / Geo I: 3 of 40 samples invalid (judge_failed)._" in text
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
