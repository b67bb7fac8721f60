"""Leaderboard figures (matplotlib, no pyplot state), each rendered as SVG and PDF (vector, for papers) and a
PNG for the HTML page, every one of a bounded size whatever the number of models.

- Size: a figure is at most ``MAX_FIGURE_INCHES``; the PNG, at ``PNG_DPI``, at most ``MAX_PNG_PX`` pixels.
- Many models: grouped bars put at most ``MAX_BARS_PER_PANEL`` bars (and ``MAX_GROUPS_PER_PANEL`` models) in a
  panel and ``PANELS_PER_PAGE`` panels on a page, then start another page (another figure); a heatmap pages
  its rows (``HEATMAP_ROWS_PER_PAGE``) or, for a square matrix, labels every k-th row and column; a scatter
  labels its points only up to ``MAX_POINT_LABELS``.
- Legends sit outside the axes (constrained layout makes room for them, so they are never clipped).
- Series are told apart by colour and hatch: ``SERIES_STYLES`` holds 40 distinct pairs.
- A zero bar is drawn as a thick line at 0 and a missing value as a grey ×, so 0 is not read as "not run";
  a heatmap draws a missing cell grey, apart from the white of 0.
"""

from __future__ import annotations

import io
import math
from collections.abc import Collection, Iterator, Mapping, Sequence

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_hex
from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from lmms_eval_unify.reports.boards import Board, Figure
from lmms_eval_unify.reports.figure import FORMATS, Rendered

PNG_DPI = 150
MAX_FIGURE_INCHES = (10.0, 11.5)
"""Width, height: no figure is larger, whatever it shows."""
MAX_PNG_PX = (round(MAX_FIGURE_INCHES[0] * PNG_DPI), round(MAX_FIGURE_INCHES[1] * PNG_DPI))
MAX_BARS_PER_PANEL = 120
MAX_GROUPS_PER_PANEL = 30
PANELS_PER_PAGE = 4
PANEL_INCHES = 2.6
HEATMAP_ROWS_PER_PAGE = 80
MAX_TICK_LABELS = 80
"""Beyond this many rows of a heatmap that is not paged, every k-th is labelled."""
MAX_COLUMN_LABELS = 40
"""Beyond this many columns of a heatmap, every k-th is labelled (their labels are slanted)."""
MAX_POINT_LABELS = 30
MAX_LABEL_CHARS = 28
COLOURS = tuple(to_hex(matplotlib.colormaps["tab10"](i)) for i in range(10))
HATCHES = ("", "////", "....", "xxxx")
SERIES_STYLES = tuple((colour, hatch) for hatch in HATCHES for colour in COLOURS)
"""(face colour, hatch) of the i-th series: every colour plain, then every colour with each hatch."""
EDGE = "0.2"
MISSING_COLOUR = "0.55"
"""The × of a missing bar and the cell of a missing heatmap value."""
ZERO_LINE_WIDTH = 3.0
"""Points: the line a zero bar is drawn as."""
# Text stays text in PDFs (TrueType, editable and searchable in papers); SVG text is drawn as paths.
RC = {"pdf.fonttype": 42, "svg.fonttype": "path"}


def render(fig: MplFigure) -> Rendered:
    """A figure as PNG (at PNG_DPI) and the two vector formats, at its own (bounded) size; the figure is
    cleared afterwards, so its artists are freed at once rather than when the garbage collector finds their
    reference cycles (pages of figures otherwise pile up)."""
    out = {}
    with matplotlib.rc_context(RC):
        for fmt in FORMATS:
            buffer = io.BytesIO()
            fig.savefig(buffer, format=fmt, dpi=PNG_DPI)
            out[fmt] = buffer.getvalue()
    fig.clear()
    return Rendered(**out)


def _figure(width: float, height: float) -> MplFigure:
    """A constrained-layout figure no larger than MAX_FIGURE_INCHES."""
    size = (min(width, MAX_FIGURE_INCHES[0]), min(height, MAX_FIGURE_INCHES[1]))
    return MplFigure(figsize=size, layout="constrained")


def tick_label(label: str) -> str:
    """A label of at most MAX_LABEL_CHARS: a longer one keeps its start and its end (where the configuration,
    the protocol or the seed that tell rows apart are), an ellipsis between."""
    if len(label) <= MAX_LABEL_CHARS:
        return label
    head = (MAX_LABEL_CHARS - 1) // 3
    return label[:head] + "…" + label[len(label) - (MAX_LABEL_CHARS - 1 - head) :]


def _pages(n: int, per_page: int) -> list[range]:
    return [range(start, min(start + per_page, n)) for start in range(0, n, per_page)]


def _page_caption(caption: str, page: range, n: int, pages: int) -> str:
    return caption if pages == 1 else f"{caption} (rows {page.start + 1}–{page.stop} of {n})"


def series_style(i: int) -> tuple[str, str]:
    """The (face colour, hatch) of the i-th series (the cycle repeats after len(SERIES_STYLES))."""
    return SERIES_STYLES[i % len(SERIES_STYLES)]


def _values(board: Board, keys: Sequence[str]) -> np.ndarray:
    """rows x keys, NaN where missing."""
    return np.array(
        [[np.nan if r.values.get(k) is None else r.values[k] for k in keys] for r in board.rows], dtype=float
    ).reshape(len(board.rows), len(keys))


def groups_per_panel(n_series: int) -> int:
    """How many models (groups of `n_series` bars) one panel shows."""
    return max(1, min(MAX_GROUPS_PER_PANEL, MAX_BARS_PER_PANEL // max(n_series, 1)))


def draw_bars(ax: Axes, data: np.ndarray, labels: Sequence[str], keys: Sequence[str], slots: int) -> None:
    """One group of bars per row of `data` (rows x keys) in `slots` group positions (so every panel of a figure
    has the same bar width); a zero is a thick line at 0 in the series' colour, a missing value a grey ×."""
    width = 0.8 / len(keys)
    x = np.arange(len(labels))
    for i, key in enumerate(keys):
        colour, hatch = series_style(i)
        left = x - 0.4 + i * width
        values = data[:, i]
        right, top, base = left + width, np.nan_to_num(values), np.zeros(len(values))
        xs, ys = np.column_stack([left, left, right, right]), np.column_stack([base, top, top, base])
        corners = np.stack([xs, ys], axis=-1)  # bars x 4 corners x (x, y)
        # One collection per series, not one patch per bar: drawn in one call by every backend.
        bars = PolyCollection(corners, facecolors=colour, edgecolors=EDGE, linewidths=0.4, hatch=hatch or None)
        bars.set_label(key)
        ax.add_collection(bars, autolim=False)
        zero = values == 0
        if zero.any():
            ax.hlines(np.zeros(zero.sum()), left[zero], left[zero] + width, colors=[colour], linewidth=ZERO_LINE_WIDTH,
                      zorder=3)  # fmt: skip
        missing = np.isnan(values)
        if missing.any():
            ax.plot(left[missing] + width / 2, np.zeros(missing.sum()), linestyle="none", marker="x",
                    markersize=4, color=MISSING_COLOUR, clip_on=False)  # fmt: skip
    ax.set_xlim(-0.5, slots - 0.5)
    ax.set_xticks(x, [tick_label(label) for label in labels], rotation=40, ha="right", fontsize=6)
    ax.tick_params(axis="y", labelsize=7)
    ax.axhline(0, color=EDGE, linewidth=0.6)


def _legend_handles(keys: Sequence[str], data: np.ndarray) -> tuple[list, list[str]]:
    handles: list = [
        Patch(facecolor=series_style(i)[0], hatch=series_style(i)[1], edgecolor=EDGE, linewidth=0.4)
        for i in range(len(keys))
    ]
    labels = list(keys)
    if (data == 0).any():
        handles.append(Line2D([], [], color=EDGE, linewidth=ZERO_LINE_WIDTH))
        labels.append("0 (a line at zero)")
    if np.isnan(data).any():
        handles.append(Line2D([], [], linestyle="none", marker="x", color=MISSING_COLOUR))
        labels.append("no value (not run / not scored)")
    return handles, labels


def _outside_legend(fig: MplFigure, handles: list, labels: list[str]) -> None:
    """One legend for the figure, right of every axes, in as many columns as its height needs."""
    per_column = max(4, int(fig.get_figheight() * 72 / 11))
    fig.legend(handles, labels, loc="outside right upper", fontsize=7, ncols=math.ceil(len(labels) / per_column))


def bar_figures(board: Board, keys: Sequence[str], caption: str) -> Iterator[tuple[str, MplFigure]]:
    """(caption, figure) of each page of grouped bars of `keys` per board row, unrendered."""
    data = _values(board, keys)
    labels = [r.label for r in board.rows]
    finite = data[np.isfinite(data)]
    bottom = min(0.0, float(finite.min()) if finite.size else 0.0)
    top = float(finite.max()) if finite.size else 0.0
    if all(k in board.ranges for k in keys):  # the whole scale, so its top tick (100) shows
        top = max(top, *(board.ranges[k][1] for k in keys))
    top = top if top > bottom else bottom + 1.0
    slots = groups_per_panel(len(keys))
    pages = _pages(len(labels), slots * PANELS_PER_PAGE)
    for page in pages:
        panels = _pages(len(page), slots)
        fig = _figure(MAX_FIGURE_INCHES[0], PANEL_INCHES * len(panels) + 1.0)
        for ax, panel in zip(fig.subplots(len(panels), 1, squeeze=False)[:, 0], panels, strict=True):
            rows = [page[i] for i in panel]
            draw_bars(ax, data[rows], [labels[r] for r in rows], keys, slots)
            ax.set_ylim(bottom - 0.02 * (top - bottom), top)  # room below 0: a zero line shows above the axis
        _outside_legend(fig, *_legend_handles(keys, data[list(page)]))
        title = _page_caption(caption, page, len(labels), len(pages))
        fig.suptitle(title, fontsize=10)
        yield title, fig


def grouped_bars(board: Board, keys: Sequence[str], caption: str) -> list[Figure]:
    """One group of bars per board row, one bar per key: as many pages (figures) as the rows need."""
    return [(title, render(fig)) for title, fig in bar_figures(board, keys, caption)]


def _thinned_ticks(n: int, most: int) -> range:
    return range(0, n, math.ceil(n / most))


def heatmap_figures(
    matrix: np.ndarray,
    rows: Sequence[str],
    cols: Sequence[str],
    caption: str,
    symmetric: bool = True,
    paged: bool = True,
) -> Iterator[tuple[str, MplFigure]]:
    """(caption, figure) of each page of an annotated heatmap (diverging colours centred on 0, one scale for
    every page, a missing value grey), unrendered. `paged`: at most HEATMAP_ROWS_PER_PAGE rows a page; else
    (a square matrix) one figure labelling every k-th row. Columns beyond MAX_COLUMN_LABELS: every k-th labelled."""
    finite = np.isfinite(matrix)
    bound = float(np.nanmax(np.abs(matrix))) if finite.any() else 1.0
    bound = 1.0 if symmetric and bound <= 1.0 else bound
    cmap = matplotlib.colormaps["RdBu_r"].with_extremes(bad=MISSING_COLOUR)
    pages = _pages(len(rows), HEATMAP_ROWS_PER_PAGE if paged else max(len(rows), 1))
    for page in pages:
        block = matrix[page.start : page.stop]
        fig = _figure(max(5.0, 0.32 * len(cols) + 3.0), max(3.0, 0.16 * len(page) + 1.8))
        ax = fig.subplots()
        image = ax.imshow(block, cmap=cmap, vmin=-bound, vmax=bound, aspect="auto", interpolation="nearest")
        col_ticks, row_ticks = _thinned_ticks(len(cols), MAX_COLUMN_LABELS), _thinned_ticks(len(page), MAX_TICK_LABELS)
        ax.set_xticks(col_ticks, [tick_label(cols[j]) for j in col_ticks], rotation=60, ha="right", fontsize=6)
        ax.set_yticks(row_ticks, [tick_label(rows[page[i]]) for i in row_ticks], fontsize=6)
        if block.size <= 150:
            for (i, j), v in np.ndenumerate(block):
                if np.isfinite(v):
                    text = f"{v:.1f}" if abs(v) >= 1 or bound > 1 else f"{v:.2f}"
                    ax.text(j, i, text, ha="center", va="center", fontsize=6)
        fig.colorbar(image, ax=ax)
        title = _page_caption(caption, page, len(rows), len(pages))
        if len(row_ticks) < len(page) or len(col_ticks) < len(cols):
            title += f" (one label in {row_ticks.step} rows, in {col_ticks.step} columns)"
        ax.set_title(title + ("; grey = no value" if not finite[page.start : page.stop].all() else ""), fontsize=9)
        yield title, fig


def heatmap(
    matrix: np.ndarray,
    rows: Sequence[str],
    cols: Sequence[str],
    caption: str,
    symmetric: bool = True,
    paged: bool = True,
) -> list[Figure]:
    """The pages of :func:`heatmap_figures`, rendered."""
    return [(title, render(fig)) for title, fig in heatmap_figures(matrix, rows, cols, caption, symmetric, paged)]


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


FLAG_COLOUR = COLOURS[3]
"""The ring around a flagged scatter point (a value with a caveat, e.g. an unconverged fit)."""
FLAG_MARK = "‡"
"""Added to a flagged point's label, as tables mark a value with a caveat."""


def scatter_figure(
    points: Mapping[str, tuple[float | None, float | None]],
    xlabel: str,
    ylabel: str,
    title: str,
    flagged: Collection[str] = (),
    flag_label: str = "flagged",
) -> MplFigure | None:
    """One point per model, labelled while there are at most MAX_POINT_LABELS; models with a missing coordinate
    are left out (None if none is left), unrendered. `flagged` models get a ring (a second collection, over the
    first, which holds every point), '‡' after their label and a legend entry `flag_label`."""
    kept = {m: p for m, p in points.items() if p[0] is not None and p[1] is not None}
    if not kept:
        return None
    fig = _figure(6.5, 4.5)
    ax = fig.subplots()
    xy = np.array(list(kept.values()), dtype=float)
    ax.scatter(xy[:, 0], xy[:, 1], s=14, color=COLOURS[0])
    rings = np.array([p for m, p in kept.items() if m in flagged], dtype=float).reshape(-1, 2)
    if len(rings):
        ax.scatter(rings[:, 0], rings[:, 1], s=70, facecolors="none", edgecolors=FLAG_COLOUR, linewidths=1.2)
        ring = Line2D([], [], ls="", marker="o", markersize=8, markerfacecolor="none", color=FLAG_COLOUR)
        fig.legend([ring], [f"{flag_label}: {len(rings)} of {len(kept)}"], loc="outside lower center", fontsize=7)
    if len(kept) <= MAX_POINT_LABELS:
        for label, (x, y) in kept.items():
            text = tick_label(label) + (FLAG_MARK if label in flagged else "")
            ax.annotate(text, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    else:
        title += f" ({len(kept)} models, unlabelled: see the table)"
    if len(kept) < len(points):
        title += f"; {len(points) - len(kept)} without a value left out"
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    return fig


def scatter(
    points: Mapping[str, tuple[float | None, float | None]],
    xlabel: str,
    ylabel: str,
    title: str,
    flagged: Collection[str] = (),
    flag_label: str = "flagged",
) -> Rendered | None:
    """:func:`scatter_figure`, rendered."""
    fig = scatter_figure(points, xlabel, ylabel, title, flagged, flag_label)
    return None if fig is None else render(fig)
