"""LaTeX output of a board: escaping, structure, missing values and step/sample cells."""

from __future__ import annotations

from lmms_eval_unify.reports.boards import Board, Row
from lmms_eval_unify.reports.render import latex, latex_escape


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
