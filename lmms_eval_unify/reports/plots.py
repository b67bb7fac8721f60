"""Leaderboard figures (matplotlib, Agg backend), each rendered as a 300-dpi PNG, an SVG and a PDF."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from lmms_eval_unify.reports.boards import Board  # noqa: E402
from lmms_eval_unify.reports.figure import FORMATS, Rendered  # noqa: E402

PNG_DPI = 300
# Text stays text in PDFs (TrueType, editable and searchable in papers); SVG text is drawn as paths.
RC = {"pdf.fonttype": 42, "svg.fonttype": "path"}


def _render(fig: plt.Figure) -> Rendered:
    """Raster at PNG_DPI and the two vector formats; closes the figure."""
    out = {}
    with matplotlib.rc_context(RC):
        for fmt in FORMATS:
            buffer = io.BytesIO()
            fig.savefig(buffer, format=fmt, dpi=PNG_DPI)
            out[fmt] = buffer.getvalue()
    plt.close(fig)
    return Rendered(**out)


def _values(board: Board, keys: Sequence[str]) -> np.ndarray:
    """models x keys, NaN where missing."""
    return np.array([[np.nan if r.values.get(k) is None else r.values[k] for k in keys] for r in board.rows])


def grouped_bars(board: Board, keys: Sequence[str], title: str) -> Rendered:
    """One group of bars per model, one bar per score (missing scores drawn as 0-height gaps)."""
    data = _values(board, keys)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(board.rows) * len(keys) ** 0.5 + 3), 4), layout="constrained")
    width = 0.8 / len(keys)
    x = np.arange(len(board.rows))
    for i, key in enumerate(keys):
        ax.bar(x + i * width, np.nan_to_num(data[:, i]), width, label=key)
    ax.set_xticks(x + 0.4 - width / 2, [r.label for r in board.rows], rotation=45, ha="right", fontsize=8)
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=min(len(keys), 4))
    return _render(fig)


def heatmap(
    matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str], title: str, symmetric: bool = True
) -> Rendered:
    """Annotated heatmap with a diverging colour map centred on 0."""
    fig, ax = plt.subplots(
        figsize=(max(5.0, 0.45 * len(cols) + 3), max(3.0, 0.35 * len(rows) + 1.5)), layout="constrained"
    )
    bound = np.nanmax(np.abs(matrix)) if np.isfinite(matrix).any() else 1.0
    bound = 1.0 if symmetric and bound <= 1.0 else bound
    image = ax.imshow(matrix, cmap="RdBu_r", vmin=-bound, vmax=bound, aspect="auto")
    ax.set_xticks(range(len(cols)), cols, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    if matrix.size <= 150:
        for (i, j), v in np.ndenumerate(matrix):
            if np.isfinite(v):
                ax.text(
                    j,
                    i,
                    f"{v:.1f}" if abs(v) >= 1 or bound > 1 else f"{v:.2f}",
                    ha="center",
                    va="center",
                    fontsize=6,
                )
    fig.colorbar(image, ax=ax)
    ax.set_title(title)
    return _render(fig)


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing their average rank (as Spearman's rho needs)."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    return (np.cumsum(counts) - (counts - 1) / 2.0)[inverse]


def spearman_matrix(vectors: np.ndarray) -> np.ndarray:
    """Pairwise Spearman correlation between the columns of `vectors`, over the rows where both are finite."""
    k = vectors.shape[1]
    if np.isfinite(vectors).all():
        ranks = np.apply_along_axis(average_ranks, 0, vectors)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.corrcoef(ranks, rowvar=False).reshape(k, k)
    out = np.full((k, k), np.nan)
    for i in range(k):
        for j in range(i, k):
            ok = np.isfinite(vectors[:, i]) & np.isfinite(vectors[:, j])
            if ok.sum() >= 3:
                out[i, j] = out[j, i] = spearman_matrix(vectors[ok][:, [i, j]])[0, 1]
    return out


def scatter(
    points: Mapping[str, tuple[float | None, float | None]], xlabel: str, ylabel: str, title: str
) -> Rendered | None:
    """One labelled point per model; models with a missing coordinate are left out (None if none is left)."""
    points = {m: p for m, p in points.items() if p[0] is not None and p[1] is not None}
    if not points:
        return None
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    for label, (x, y) in points.items():
        ax.scatter(x, y)
        ax.annotate(label, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return _render(fig)
