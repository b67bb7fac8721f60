"""Render boards as Markdown, CSV, LaTeX and one self-contained HTML page (figures embedded as PNG data URIs)."""

from __future__ import annotations

import base64
import csv
import html
from collections.abc import Iterable
from pathlib import Path

from lmms_eval_unify.reports.boards import Board, Row

MISSING = "-"


def fmt(value: float | None) -> str:
    """Two decimals, or '-' for a missing/unsupported value."""
    return MISSING if value is None else f"{value:.2f}"


def cell_text(row: Row, keys: tuple[str, ...]) -> str:
    """A table cell: one value, or 'step/sample' style for two keys."""
    return "/".join(fmt(row.values.get(k)) for k in keys)


def markdown(board: Board) -> str:
    header = ["Model", *(h for h, _ in board.columns)]
    lines = [
        f"### {board.title}",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" + "---:|" * len(board.columns),
    ]
    lines += [
        "| " + " | ".join([r.label, *(cell_text(r, k) for _, k in board.columns)]) + " |" for r in board.rows
    ]
    lines += ["", *(f"_{note}_" for note in board.notes)]
    return "\n".join(lines).rstrip() + "\n"


def write_csv(board: Board, path: Path) -> None:
    """One row per model; every value key, plus `<key> ci_low/ci_high` where an interval exists."""
    keys = board.value_keys()
    with_ci = [k for k in keys if any(r.intervals.get(k) for r in board.rows)]
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["model", *keys, *(f"{k} {side}" for k in with_ci for side in ("ci_low", "ci_high"))])
        for r in board.rows:
            cis = [r.intervals.get(k) for k in with_ci]
            writer.writerow(
                [
                    r.label,
                    *(_csv_number(r.values.get(k)) for k in keys),
                    *(_csv_number(ci[i] if ci else None) for ci in cis for i in (0, 1)),
                ]
            )


def _csv_number(value: float | None) -> str:
    return MISSING if value is None else f"{value:.4f}"


LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "Δ": r"$\Delta$",
    "ρ": r"$\rho$",
    "τ": r"$\tau$",
    "↓": r"$\downarrow$",
    "↑": r"$\uparrow$",
    "−": "-",
    "×": r"$\times$",
    "±": r"$\pm$",
}


def latex_escape(text: str) -> str:
    """Text safe inside a LaTeX table (special characters escaped, the boards' Greek letters and arrows as math)."""
    return "".join(LATEX_SPECIAL.get(ch, ch) for ch in text)


def latex(board: Board) -> str:
    """A booktabs ``table`` (needs ``\\usepackage{booktabs}``); notes become the lines under the tabular."""
    header = ["Model", *(h for h, _ in board.columns)]
    lines = [
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        f"\\caption{{{latex_escape(board.title)}}}",
        f"\\label{{tab:{board.key}}}",
        "\\begin{tabular}{l" + "r" * len(board.columns) + "}",
        "\\toprule",
        " & ".join(latex_escape(h) for h in header) + " \\\\",
        "\\midrule",
    ]
    lines += [
        " & ".join([latex_escape(r.label), *(cell_text(r, k) for _, k in board.columns)]) + " \\\\"
        for r in board.rows
    ]
    lines += ["\\bottomrule", "\\end{tabular}"]
    lines += [f"\\par\\footnotesize {latex_escape(note)}" for note in board.notes]
    lines += ["\\end{table}", ""]
    return "\n".join(lines)


def _interval_text(interval: tuple[float, float] | None) -> str:
    return MISSING if interval is None else f"[{interval[0]:.2f}, {interval[1]:.2f}]"


def _html_cell(row: Row, keys: tuple[str, ...]) -> str:
    text = html.escape(cell_text(row, keys))
    intervals = [row.intervals.get(k) for k in keys]
    if any(intervals):
        ci = " / ".join(_interval_text(iv) for iv in intervals)
        text += f'<br><span class="ci">{html.escape(ci)}</span>'
    return f"<td>{text}</td>"


def html_board(board: Board) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ["Model", *(h for h, _ in board.columns)])
    body = "".join(
        f"<tr><th>{html.escape(r.label)}</th>{''.join(_html_cell(r, k) for _, k in board.columns)}</tr>"
        for r in board.rows
    )
    notes = "".join(f"<p class='note'>{html.escape(n)}</p>" for n in board.notes)
    return f"<h2>{html.escape(board.title)}</h2><table><tr>{head}</tr>{body}</table>{notes}"


STYLE = """
body{font-family:sans-serif;margin:1.5em} table{border-collapse:collapse;font-size:13px;margin-bottom:.5em}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:right} tr th:first-child{text-align:left}
.ci{color:#777;font-size:10px} .note{color:#555;font-size:12px;margin:.2em 0} img{max-width:100%}
"""


def html_page(title: str, boards: Iterable[Board], figures: Iterable[tuple[str, bytes]]) -> str:
    sections = [html_board(b) for b in boards]
    sections += [
        f"<h2>{html.escape(name)}</h2><img alt='{html.escape(name)}' "
        f"src='data:image/png;base64,{base64.b64encode(png).decode()}'>"
        for name, png in figures
    ]
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{''.join(sections)}</body></html>"
    )
