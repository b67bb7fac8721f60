"""Render boards as Markdown, CSV, LaTeX and one self-contained HTML page (figures embedded as PNG data URIs).

A cell none of whose samples could be scored prints '—', a cell with some invalid samples its value and '†',
a cell whose samples are not comparable with the other rows' (``reports.comparability``) adds '‡' (a row none of
whose values is, once after its label); the notes under the board say which cells and why (:func:`sample_notes`,
:func:`caveat_notes`), one line per reason and set of rows that share it, listing the cells
(:func:`grouped_notes`), so notes grow with the reasons, not the cells.
The CSV (and :func:`board_record`, for JSON) carries every cell's value, clipped interval, samples and caveats.
"""

from __future__ import annotations

import base64
import csv
import html
import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from lmms_eval_unify.reports.boards import Board, CellSamples, Row
from lmms_eval_unify.reports.comparability import Caveat
from lmms_eval_unify.writes import write_text

MISSING = "-"
"""A value that was not computed: the task was not run, or a part the value needs is missing."""
UNSCORED = "—"
"""A value none of whose samples could be scored (all invalid, or the model could not run them)."""
NEEDS_UNSCORED = "no value: it needs a part with no sample scored"
"""The reason of a value withheld because a part it needs has no scored sample (``CellSamples.withheld``)."""
PARTLY_INVALID = "†"
"""Marks a value some of whose samples could not be scored."""
NOT_COMPARABLE = "‡"
"""Marks a value whose samples are not comparable with the other rows' or the full dataset (``Row.caveats``)."""


def fmt(value: float | None) -> str:
    """Two decimals, or '-' for a missing/unsupported value."""
    return MISSING if value is None else f"{value:.2f}"


def value_text(row: Row, key: str, mark_caveat: bool = True) -> str:
    """One value as a table prints it: '—' when none of its samples was scored, else the number ('-' if
    missing), with '†' when some of its samples were invalid; '‡' when its samples are not comparable (unless
    `mark_caveat` is off: its row's label carries the mark)."""
    value, cell = row.values.get(key), row.cells.get(key)
    mark = NOT_COMPARABLE if mark_caveat and row.caveats.get(key) else ""
    if cell is not None and cell.unscored:
        return UNSCORED + mark
    return fmt(value) + (PARTLY_INVALID if value is not None and cell is not None and cell.n_invalid else "") + mark


def cell_text(row: Row, keys: tuple[str, ...], mark_caveat: bool = True) -> str:
    """A table cell: one value, or 'step/sample' style for two keys."""
    return "/".join(value_text(row, k, mark_caveat) for k in keys)


def shows_value(row: Row, key: str) -> bool:
    """Whether the row's cell of `key` prints a value or '—' (not '-', nothing computed)."""
    cell = row.cells.get(key)
    return row.values.get(key) is not None or (cell is not None and cell.unscored)


def row_marked(board: Board, row: Row) -> bool:
    """Whether none of the values the row shows on the board is comparable (every one has a caveat)."""
    keys = [key for key in board.value_keys() if shows_value(row, key)]
    return bool(keys) and all(row.caveats.get(key) for key in keys)


def row_texts(board: Board, row: Row) -> list[str]:
    """A row as tables print it: its label, then each column's cell. A row none of whose values is comparable
    (:func:`row_marked`) carries one '‡' after its label instead of one after every value."""
    whole = row_marked(board, row)
    cells = [cell_text(row, keys, not whole) for _, keys in board.columns]
    return [row.label + (NOT_COMPARABLE if whole else ""), *cells]


def failure_reasons(counts: Mapping[str, int], n: int) -> str:
    """The failure reasons of a cell's samples, most frequent first: one alone (``judge_failed``), several with
    their shares of the cell's `n` samples (``judge_failed 75%, unsupported 25%``)."""
    reasons = sorted(((reason, count) for reason, count in counts.items() if count), key=lambda kv: -kv[1])
    if len(reasons) == 1:
        return reasons[0][0]
    return ", ".join(f"{reason} {100.0 * count / n:.3g}%" for reason, count in reasons)


def unscored_reason(cell: CellSamples) -> str:
    """Why none of a cell's samples was scored (``no sample scored (judge_failed)``), or why a value some of
    whose samples were is withheld (:data:`NEEDS_UNSCORED`; which parts: their own '—' cells)."""
    if cell.scored:
        return NEEDS_UNSCORED
    return f"no sample scored ({failure_reasons({**cell.invalid, 'unsupported': cell.unsupported}, cell.n)})"


def invalid_reason(cell: CellSamples) -> str:
    """Why some of a cell's samples could not be scored (``some samples invalid (judge_failed)``)."""
    return f"some samples invalid ({failure_reasons(cell.invalid, cell.n)})"


Mark = tuple[str, str, str]
"""One reason a cell is marked: (row label, column name, the reason: a plain text or a ``Caveat``)."""


def board_cells(board: Board) -> Iterator[tuple[Row, str, str]]:
    """Every (row, value key, column name) of a board: columns named by their header, or by value key for
    'step/sample' columns."""
    for row in board.rows:
        for header, keys in board.columns:
            for key in keys:
                yield row, key, header if len(keys) == 1 else key


def shown_columns(board: Board) -> dict[str, list[str]]:
    """Row label -> the names of the columns where it shows a value or '—' (:func:`shows_value`)."""
    shown: dict[str, list[str]] = {row.label: [] for row in board.rows}
    for row, key, name in board_cells(board):
        shown[row.label] += [name] if shows_value(row, key) and name not in shown[row.label] else []
    return shown


def grouped_notes(symbol: str, marks: Iterable[Mark], shown: Mapping[str, Sequence[str]]) -> list[str]:
    """One line per reason and set of rows marked with it on the same columns: ``<symbol> <rows> / <columns>:
    <reason>.``, or ``<symbol> <rows>: <reason>.`` for rows it marks on every column they show a value in
    (`shown`: row label -> those columns). Every marked cell is listed under each of its reasons, and a reason is
    printed once per set of rows, never once per cell; a caveat's reason is the same words for every task it
    concerns (``Caveat.reason``), its tasks and their details are in the CSV's ``<column> caveats``."""
    by_reason: dict[str, dict[str, list[str]]] = {}
    for row, column, text in marks:
        marked = by_reason.setdefault(Caveat.of(text).reason, {}).setdefault(row, [])
        marked += [] if column in marked else [column]
    lines = []
    for reason, rows in by_reason.items():
        shared: dict[tuple[str, ...], list[str]] = {}
        for row, columns in rows.items():
            every = bool(shown.get(row)) and set(shown[row]) <= set(columns)
            shared.setdefault(() if every else tuple(columns), []).append(row)
        for named, labels in shared.items():
            where = f" / {', '.join(named)}" if named else ""
            lines.append(f"{symbol} {', '.join(labels)}{where}: {reason}.")
    return lines


def sample_notes(board: Board) -> list[str]:
    """The lines under a board that explain its '—' and '†' cells (:func:`grouped_notes`; the samples' counts
    are the CSV's)."""
    unscored: list[Mark] = []
    partial: list[Mark] = []
    for row, key, name in board_cells(board):
        cell = row.cells.get(key)
        if cell is None or not cell.n:
            continue
        if cell.unscored:
            unscored.append((row.label, name, unscored_reason(cell)))
        elif cell.n_invalid and row.values.get(key) is not None:
            partial.append((row.label, name, invalid_reason(cell)))
    shown = shown_columns(board)
    return grouped_notes(UNSCORED, unscored, shown) + grouped_notes(PARTLY_INVALID, partial, shown)


def caveat_notes(board: Board) -> list[str]:
    """The lines under a board that explain its '‡' cells (:func:`grouped_notes` of every cell's caveats)."""
    marks = [(row.label, name, caveat) for row, key, name in board_cells(board) for caveat in row.caveats.get(key, ())]
    return grouped_notes(NOT_COMPARABLE, marks, shown_columns(board))


def all_notes(board: Board) -> list[str]:
    """The board's own notes, then :func:`sample_notes` and :func:`caveat_notes`."""
    return [*board.notes, *sample_notes(board), *caveat_notes(board)]


def cell_record(board: Board, row: Row, key: str) -> dict:
    """One cell as data: its value (None when missing or unscored), clipped 95% interval, and samples (`n`,
    `invalid`, `unsupported`, `reasons`: failure reason -> samples; absent when not built from samples)."""
    cell = row.cells.get(key)
    unscored = cell is not None and cell.unscored
    interval = None if unscored else board.interval(row, key)
    record: dict = {
        "value": None if unscored else row.values.get(key),
        "ci_low": interval[0] if interval else None,
        "ci_high": interval[1] if interval else None,
    }
    if cell is not None:
        record |= {"n": cell.n, "invalid": cell.n_invalid, "unsupported": cell.unsupported}
        record["reasons"] = dict(cell.invalid)
    if key in row.caveats:
        record["caveats"] = list(row.caveats[key])
    return record


def board_record(board: Board) -> dict:
    """A board as JSON-ready data: key, title, columns, notes (:func:`all_notes`) and per row every cell's
    :func:`cell_record`."""
    return {
        "key": board.key,
        "title": board.title,
        "columns": [{"header": header, "keys": list(keys)} for header, keys in board.columns],
        "notes": all_notes(board),
        "rows": [
            {"model": row.label, "cells": {k: cell_record(board, row, k) for k in board.value_keys()}}
            for row in board.rows
        ],
    }


def markdown(board: Board) -> str:
    header = ["Model", *(h for h, _ in board.columns)]
    lines = [
        f"### {board.title}",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" + "---:|" * len(board.columns),
    ]
    lines += ["| " + " | ".join(row_texts(board, r)) + " |" for r in board.rows]
    lines += ["", *(f"_{note}_" for note in all_notes(board))]
    return "\n".join(lines).rstrip() + "\n"


SAMPLE_COLUMNS = ("n", "invalid", "unsupported")
"""The CSV's per-cell sample counts (`<key> n`, ...)."""


def csv_text(board: Board) -> str:
    """The board as CSV: one row per model; every value key ('-' when missing or unscored), plus
    `<key> ci_low/ci_high` where an interval exists (clipped to the key's range), `<key> n/invalid/unsupported`
    where the value is built from samples and `<key> caveats` where some row's value is not comparable
    ('; '-joined, '' for none)."""
    keys = board.value_keys()
    with_ci = [k for k in keys if any(r.intervals.get(k) for r in board.rows)]
    with_samples = [k for k in keys if any(k in r.cells for r in board.rows)]
    with_caveats = [k for k in keys if any(k in r.caveats for r in board.rows)]
    header = [f"{k} {side}" for k in with_ci for side in ("ci_low", "ci_high")]
    header += [f"{k} {count}" for k in with_samples for count in SAMPLE_COLUMNS]
    header += [f"{k} caveats" for k in with_caveats]
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(["model", *keys, *header])
    for r in board.rows:
        cells = {k: cell_record(board, r, k) for k in keys}
        writer.writerow(
            [
                r.label,
                *(_csv_number(cells[k]["value"]) for k in keys),
                *(_csv_number(cells[k][side]) for k in with_ci for side in ("ci_low", "ci_high")),
                *(cells[k].get(count, MISSING) for k in with_samples for count in SAMPLE_COLUMNS),
                *("; ".join(cells[k].get("caveats", ())) for k in with_caveats),
            ]
        )
    return buffer.getvalue()


def write_csv(board: Board, path: Path, root: Path | None = None) -> None:
    """Write :func:`csv_text` of ``board`` to ``path`` through the write gate, confined to ``root`` (default: the
    file's own folder); ``WriteRefused`` when the gate refuses it."""
    write_text(path, csv_text(board), path.parent if root is None else root)


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
    UNSCORED: "---",
    PARTLY_INVALID: r"$^\dagger$",
    NOT_COMPARABLE: r"$^\ddagger$",
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
    lines += [" & ".join(latex_escape(text) for text in row_texts(board, r)) + " \\\\" for r in board.rows]
    lines += ["\\bottomrule", "\\end{tabular}"]
    lines += [f"\\par\\footnotesize {latex_escape(note)}" for note in all_notes(board)]
    lines += ["\\end{table}", ""]
    return "\n".join(lines)


def _interval_text(interval: tuple[float, float] | None) -> str:
    return MISSING if interval is None else f"[{interval[0]:.2f}, {interval[1]:.2f}]"


def _html_cell(board: Board, row: Row, keys: tuple[str, ...], shown: str) -> str:
    """A cell of the HTML table: `shown` (:func:`row_texts`) and, where it has one, each value's interval."""
    text = html.escape(shown)
    records = [cell_record(board, row, k) for k in keys]
    intervals = [(c["ci_low"], c["ci_high"]) if c["ci_low"] is not None else None for c in records]
    if any(intervals):
        ci = " / ".join(_interval_text(iv) for iv in intervals)
        text += f'<br><span class="ci">{html.escape(ci)}</span>'
    return f"<td>{text}</td>"


def html_board(board: Board) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ["Model", *(h for h, _ in board.columns)])
    rows = [(r, row_texts(board, r)) for r in board.rows]
    body = "".join(
        f"<tr><th>{html.escape(label)}</th>"
        + "".join(_html_cell(board, r, keys, shown) for (_, keys), shown in zip(board.columns, cells, strict=True))
        + "</tr>"
        for r, (label, *cells) in rows
    )
    notes = "".join(f"<p class='note'>{html.escape(n)}</p>" for n in all_notes(board))
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
