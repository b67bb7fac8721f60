"""Leaderboard figures (matplotlib, no pyplot state), each rendered as SVG and PDF (vector, for papers) and a
PNG for the HTML page, every one of a bounded size whatever the number of models.

- Size: a figure is at most ``MAX_FIGURE_INCHES``; the PNG, at ``PNG_DPI``, at most ``MAX_PNG_PX`` pixels.
- Many models: grouped bars put at most ``MAX_BARS_PER_PANEL`` bars (and ``MAX_GROUPS_PER_PANEL`` models) in a
  panel and ``PANELS_PER_PAGE`` panels on a page, then start another page (another figure); a heatmap pages
  its rows (``HEATMAP_ROWS_PER_PAGE``) or, for a square matrix, labels every k-th row and column; a scatter
  labels its points only up to ``MAX_POINT_LABELS``.
- Many series: a bar panel shows at most ``MAX_SERIES_PER_PANEL``, each in its own colour; more go to further
  panels over the same models (small multiples), each panel with its own legend.
- Bar widths follow the model count: the axes are as wide as their bars need (``BAR_INCHES`` a bar, within
  the maximum size) and the bars span the x axis, so a panel is never mostly empty.
- Bars carry what the table's cells carry: the value's 95% bootstrap interval as a whisker, the table's marks
  above it (``†`` some samples not scored, ``‡`` not comparable: ``reports.comparability``), and the table's
  column headers as series names; the y axis is labelled with its unit and leaves ``HEADROOM`` above the top
  of the scale (a value of 100 and its mark stay off the frame).
- Legends sit outside the axes (constrained layout makes room for them, so they are never clipped).
- The y axis starts at 0 (lower only for a negative value); a zero bar is drawn as a line in its colour on
  the axis and a missing value as a grey × on it, so 0 is not read as "not run"; a heatmap draws a missing
  cell grey, apart from the white of 0.
"""

from __future__ import annotations

import io
import math
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.colors import to_hex
from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import Transform, offset_copy

from lmms_eval_unify.reports.boards import PERCENT, Board, Figure, Row
from lmms_eval_unify.reports.figure import FORMATS, Rendered
from lmms_eval_unify.reports.render import NOT_COMPARABLE, PARTLY_INVALID

PNG_DPI = 150
MAX_FIGURE_INCHES = (10.0, 11.5)
"""Width, height: no figure is larger, whatever it shows."""
MAX_PNG_PX = (round(MAX_FIGURE_INCHES[0] * PNG_DPI), round(MAX_FIGURE_INCHES[1] * PNG_DPI))
MAX_BARS_PER_PANEL = 120
MAX_GROUPS_PER_PANEL = 30
MAX_SERIES_PER_PANEL = 8
"""More series than this are split, as evenly as can be, over panels showing the same models."""
PANELS_PER_PAGE = 4
PANEL_INCHES = 2.6
BAR_INCHES = 0.12
"""A bar's width while the figure has room: the axes are as wide as their bars need."""
MIN_AXES_INCHES = 1.2
GROUP_WIDTH = 0.85
"""The share of a model's slot on the x axis its bars fill; the rest is the gap to the next model."""
MAX_CAP = 0.06
"""Half the width of a whisker's cap, in slots, at most (a quarter of its bar's width while narrower)."""
END_GAP = 0.05
"""The x axis's room (in slots) before the first model's bars and after the last one's."""
HEADROOM = 0.1
"""Room above the top of the scale, as a share of the scale: the whisker and mark of a value at the top fit."""
MARK_OFFSET = 4.5
"""Points between the top of a bar (or of its whisker) and its marks: above a zero line and a missing ×."""
HEATMAP_ROWS_PER_PAGE = 80
MAX_TICK_LABELS = 80
"""Beyond this many rows of a heatmap that is not paged, every k-th is labelled."""
MAX_COLUMN_LABELS = 40
"""Beyond this many columns of a heatmap, every k-th is labelled (their labels are slanted)."""
MAX_POINT_LABELS = 30
MAX_LABEL_CHARS = 28
COLOURS = tuple(to_hex(matplotlib.colormaps["tab10"](i)) for i in range(10) if i != 7)
"""tab10 without its grey, which a missing value's × uses."""
SERIES_COLOURS = COLOURS[:MAX_SERIES_PER_PANEL]
EDGE = "0.2"
INTERVAL_COLOUR = "0.1"
MISSING_COLOUR = "0.55"
"""The × of a missing bar and the cell of a missing heatmap value."""
MISSING_MARKER_SIZE = 4.0
ZERO_LINE_WIDTH = 2.0
"""Points: the line a zero bar is drawn as."""
INTERVAL_LABEL = "95% bootstrap interval"
NO_INTERVAL_LABEL = "no whisker: no interval"
ZERO_LABEL = "0 (a line on the axis)"
MISSING_LABEL = "no value (not run / not scored)"
MARK_LABELS = {
    PARTLY_INVALID: f"{PARTLY_INVALID} some samples not scored",
    NOT_COMPARABLE: f"{NOT_COMPARABLE} not comparable (e.g. a --limit run): see the table's notes",
}
"""Legend entries of the marks a table puts after a value (``reports.render``)."""


def render(fig: MplFigure) -> Rendered:
    """A figure as PNG (at PNG_DPI) and the two vector formats, at its own (bounded) size; the figure is
    cleared afterwards, so its artists are freed at once rather than when the garbage collector finds their
    reference cycles (pages of figures otherwise pile up)."""
    out = {}
    # Text stays text in PDFs (TrueType, editable and searchable in papers); SVG text is drawn as paths.
    with matplotlib.rc_context({"pdf.fonttype": 42, "svg.fonttype": "path"}):
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


def series_colour(i: int) -> str:
    """The colour of a panel's i-th series (a panel has at most MAX_SERIES_PER_PANEL, one colour each)."""
    return SERIES_COLOURS[i]


def _values(board: Board, keys: Sequence[str]) -> np.ndarray:
    """rows x keys, NaN where missing."""
    return np.array(
        [[np.nan if r.values.get(k) is None else r.values[k] for k in keys] for r in board.rows], dtype=float
    ).reshape(len(board.rows), len(keys))


def value_marks(row: Row, key: str) -> str:
    """The marks a table prints after the value (``render.value_text``): '†' when some of its samples were
    not scored, '‡' when they are not comparable (``Row.caveats``)."""
    cell = row.cells.get(key)
    partly_invalid = row.values.get(key) is not None and cell is not None and cell.n_invalid > 0
    return (PARTLY_INVALID if partly_invalid else "") + (NOT_COMPARABLE if row.caveats.get(key) else "")


@dataclass(frozen=True)
class Bars:
    """What the bars of rows x series show: values, their 95% intervals (NaN where none) and marks."""

    values: np.ndarray
    low: np.ndarray
    high: np.ndarray
    marks: np.ndarray

    def take(self, rows: Sequence[int], series: Sequence[int]) -> Bars:
        """The bars of some rows and series."""
        at = np.ix_(list(rows), list(series))
        return Bars(self.values[at], self.low[at], self.high[at], self.marks[at])


def board_bars(board: Board, keys: Sequence[str]) -> Bars:
    """The board's bars of `keys`: values, intervals clipped to the keys' ranges (none for a missing value),
    and the table's marks."""
    values = _values(board, keys)
    shape = values.shape
    bounds = np.array(
        [[board.interval(r, k) or (np.nan, np.nan) for k in keys] for r in board.rows], dtype=float
    ).reshape(*shape, 2)
    bounds[np.isnan(values)] = np.nan
    marks = np.array([[value_marks(r, k) for k in keys] for r in board.rows], dtype=object).reshape(shape)
    return Bars(values, bounds[..., 0], bounds[..., 1], marks)


def display_names(board: Board, keys: Sequence[str]) -> list[str]:
    """Each key as the table heads it: its column's header, or the key itself where several keys shown share
    a column (a 'step/sample' column)."""
    names = []
    for key in keys:
        header, column = next(((h, ks) for h, ks in board.columns if key in ks), (key, (key,)))
        names.append(header if len(set(column) & set(keys)) == 1 else key)
    return names


def axis_label(board: Board, keys: Sequence[str]) -> str:
    """The y-axis label of bars of `keys`, with the unit their ranges give: the papers' 0-100 scale (MME-Unify's
    reaches 100.1 where an unclipped FVD/FID normalisation enters), else none known."""
    percent = [k in board.ranges and tuple(map(round, board.ranges[k])) == PERCENT for k in keys]
    return "score (0–100)" if all(percent) else "value"


def balanced(n: int, most: int) -> list[range]:
    """0..n-1 in as few consecutive runs of at most `most` as there can be, their lengths differing by at most
    one (longer first)."""
    parts = math.ceil(n / most)
    bounds = [-(-n * i // parts) for i in range(parts + 1)]
    return [range(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]


def groups_per_panel(n_series: int) -> int:
    """How many models (groups of `n_series` bars) one panel shows."""
    return max(1, min(MAX_GROUPS_PER_PANEL, MAX_BARS_PER_PANEL // max(n_series, 1)))


def _root(ax: Axes) -> MplFigure:
    """The figure the axes are drawn on."""
    fig = ax.get_figure(root=True)
    if fig is None:
        raise ValueError("the axes belong to no figure")
    return fig


def _above(ax: Axes, points: float) -> Transform:
    """Data coordinates shifted `points` up: what is drawn at y=0 sits on the axis, not across it."""
    return offset_copy(ax.transData, fig=_root(ax), y=points, units="points")


def draw_bars(ax: Axes, bars: Bars, labels: Sequence[str], names: Sequence[str], tick_labels: bool = True) -> None:
    """One group of bars per row of `bars` (one bar per series, named `names`), spanning the x axis: each bar
    with its interval's whisker and its marks above; a zero is a line in the series' colour on the axis, a
    missing value a grey × on it. `tick_labels`: label the groups with `labels` (else the panel below does)."""
    n_rows, n_series = bars.values.shape
    width = GROUP_WIDTH / n_series
    lefts = np.arange(n_rows)[:, None] - GROUP_WIDTH / 2 + width * np.arange(n_series)
    centres = lefts + width / 2
    for i, name in enumerate(names):
        left, top = lefts[:, i], np.nan_to_num(bars.values[:, i])
        xs, ys = (
            np.column_stack([left, left, left + width, left + width]),
            np.column_stack([0 * top, top, top, 0 * top]),
        )
        # One collection per series, not one patch per bar: drawn in one call by every backend.
        series = PolyCollection(
            list(np.stack([xs, ys], axis=-1)), facecolors=series_colour(i), edgecolors=EDGE, linewidths=0.4, label=name
        )
        ax.add_collection(series, autolim=False)
    zero, missing = bars.values == 0, np.isnan(bars.values)
    if zero.any():
        colours = [series_colour(int(i)) for i in np.nonzero(zero)[1]]
        ax.hlines(
            np.zeros(zero.sum()),
            lefts[zero],
            lefts[zero] + width,
            colors=colours,
            linewidth=ZERO_LINE_WIDTH,
            transform=_above(ax, ZERO_LINE_WIDTH / 2),
            zorder=3,
            clip_on=False,
        )
    if missing.any():
        ax.plot(
            centres[missing],
            np.zeros(missing.sum()),
            linestyle="none",
            marker="x",
            color=MISSING_COLOUR,
            markersize=MISSING_MARKER_SIZE,
            transform=_above(ax, MISSING_MARKER_SIZE / 2),
            clip_on=False,
        )
    _draw_intervals(ax, centres, bars, min(width / 4, MAX_CAP))
    _draw_marks(ax, centres, bars)
    ax.set_xlim(-GROUP_WIDTH / 2 - END_GAP, n_rows - 1 + GROUP_WIDTH / 2 + END_GAP)
    ax.set_xticks(np.arange(n_rows), [tick_label(label) for label in labels], rotation=40, ha="right", fontsize=6)
    ax.tick_params(axis="x", labelbottom=tick_labels)
    ax.set_xlabel("model" if tick_labels else "", fontsize=8)
    ax.tick_params(axis="y", labelsize=7)


def _draw_intervals(ax: Axes, centres: np.ndarray, bars: Bars, cap: float) -> None:
    """Every interval as one whisker with a cap at each end, all in one collection (gid 'intervals')."""
    has = np.isfinite(bars.low)
    x, low, high = centres[has], bars.low[has], bars.high[has]
    if not x.size:
        return
    segments = np.stack(
        [
            np.stack([np.column_stack([x, low]), np.column_stack([x, high])], axis=1),
            np.stack([np.column_stack([x - cap, low]), np.column_stack([x + cap, low])], axis=1),
            np.stack([np.column_stack([x - cap, high]), np.column_stack([x + cap, high])], axis=1),
        ],
        axis=1,
    ).reshape(-1, 2, 2)
    ax.add_collection(LineCollection(list(segments), colors=INTERVAL_COLOUR, linewidths=0.7, zorder=4, gid="intervals"))


def _draw_marks(ax: Axes, centres: np.ndarray, bars: Bars) -> None:
    """Each bar's marks, centred MARK_OFFSET points above its top, its whisker's or the axis's."""
    tops = np.fmax(np.nan_to_num(bars.values), np.nan_to_num(bars.high))
    transform = _above(ax, MARK_OFFSET)
    for (row, series), marks in np.ndenumerate(bars.marks):
        if marks:
            ax.text(
                float(centres[row, series]),
                float(tops[row, series]),
                marks,
                transform=transform,
                ha="center",
                va="bottom",
                fontsize=6,
                gid="marks",
            )


def _scale(ax: Axes, bottom: float, top: float, label: str) -> None:
    """The y axis from `bottom` (0 unless a value is below it) to HEADROOM above `top`, ticked up to `top`."""
    ax.set_ylim(bottom, top + HEADROOM * (top - bottom))
    ticks = np.asarray(MaxNLocator(nbins=5).tick_values(bottom, float(f"{top:.2g}")))  # 100 for 100.1
    ax.set_yticks(ticks[(ticks >= bottom) & (ticks <= top)])
    ax.set_ylabel(label, fontsize=8)
    if bottom < 0:
        ax.axhline(0, color=EDGE, linewidth=0.6)


def value_span(board: Board, keys: Sequence[str], bars: Bars) -> tuple[float, float]:
    """The bottom (0, or the lowest value or interval end below it) and top of the bars' y axis: the top of
    the keys' ranges when every key has one (so 100 shows), else the highest value or interval end."""
    ends = np.concatenate([bars.values.ravel(), bars.low.ravel(), bars.high.ravel()])
    finite = ends[np.isfinite(ends)]
    bottom = min(0.0, float(finite.min())) if finite.size else 0.0
    top = float(finite.max()) if finite.size else 0.0
    if all(k in board.ranges for k in keys):
        top = max(top, *(board.ranges[k][1] for k in keys))
    return bottom, top if top > bottom else bottom + 1.0


def legend_entries(names: Sequence[str], bars: Bars) -> tuple[list, list[str]]:
    """(handles, labels): one per series, then one for each kind of drawing the bars use (whiskers, zero
    lines, missing ×, marks)."""
    handles: list = [Patch(facecolor=series_colour(i), edgecolor=EDGE, linewidth=0.4) for i in range(len(names))]
    blank = Line2D([], [], linestyle="none")
    shown = np.isfinite(bars.values)
    marks = "".join(bars.marks.ravel())
    extras = [
        (
            np.isfinite(bars.low).any(),
            Line2D([], [], color=INTERVAL_COLOUR, marker="_", markersize=5, linewidth=0.7),
            INTERVAL_LABEL,
        ),
        ((shown & np.isnan(bars.low)).any(), blank, NO_INTERVAL_LABEL),
        ((bars.values == 0).any(), Line2D([], [], color=EDGE, linewidth=ZERO_LINE_WIDTH), ZERO_LABEL),
        ((~shown).any(), Line2D([], [], linestyle="none", marker="x", color=MISSING_COLOUR), MISSING_LABEL),
        *((mark in marks, blank, label) for mark, label in MARK_LABELS.items()),
    ]
    return handles + [h for used, h, _ in extras if used], list(names) + [label for used, _, label in extras if used]


def _side_legend(ax: Axes, handles: list, labels: list[str]) -> None:
    """A legend right of the axes, its top at theirs (below the figure's title), in as many columns as the
    figure's height needs; constrained layout makes room for it."""
    per_column = max(4, int(_root(ax).get_figheight() * 72 / 11))
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, borderaxespad=0.0,
              ncols=math.ceil(len(labels) / per_column))  # fmt: skip


def _fit_width(fig: MplFigure, axes_inches: float, title: Text) -> None:
    """Make the figure as wide as its axes need to be `axes_inches` wide next to their labels and legends (and
    no narrower than its title), within MAX_FIGURE_INCHES: the layout is done once to measure what is not axes."""
    fig.draw_without_rendering()
    besides = fig.get_figwidth() * (1 - max(ax.get_position().width for ax in fig.axes))
    title_inches = title.get_window_extent().width / fig.dpi + 0.3
    fig.set_figwidth(min(MAX_FIGURE_INCHES[0], max(besides + axes_inches, title_inches)))


def bar_layout(n_rows: int, n_keys: int) -> tuple[list[range], int, list[range]]:
    """(the series of each panel, models per panel, the rows of each page) of grouped bars: beyond
    MAX_SERIES_PER_PANEL series, every group of models gets a panel per share of the series."""
    if not n_keys:
        return [], 0, []
    chunks = balanced(n_keys, MAX_SERIES_PER_PANEL)
    slots = groups_per_panel(len(chunks[0]))
    return chunks, slots, _pages(n_rows, slots * max(1, PANELS_PER_PAGE // len(chunks)))


def bar_page(
    board: Board, keys: Sequence[str], caption: str, index: int, ylabel: str | None = None
) -> tuple[str, MplFigure]:
    """(caption, figure) of page `index` of grouped bars of `keys` per board row, unrendered; `ylabel` (default
    :func:`axis_label`) names the y axis and its unit. A page's groups of models are stacked, each with a panel
    per share of the series (:func:`bar_layout`), its last one labelling the models; with several shares every
    panel has its own legend, else the top panel's serves the page."""
    bars, names = board_bars(board, keys), display_names(board, keys)
    labels = [r.label for r in board.rows]
    bottom, top = value_span(board, keys, bars)
    chunks, slots, pages = bar_layout(len(labels), len(keys))
    page = pages[index]
    groups = [range(page.start + g.start, page.start + g.stop) for g in balanced(len(page), slots)]
    panels = [(rows, chunk) for rows in groups for chunk in chunks]
    fig = _figure(MAX_FIGURE_INCHES[0], PANEL_INCHES * len(panels) + 1.0)
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, (rows, chunk) in zip(axes, panels, strict=True):
        series = names[chunk.start : chunk.stop]
        draw_bars(ax, bars.take(rows, chunk), [labels[r] for r in rows], series, chunk == chunks[-1])
        _scale(ax, bottom, top, ylabel or axis_label(board, keys))
        if len(chunks) > 1 or ax is axes[0]:
            _side_legend(ax, *legend_entries(series, bars.take(rows if len(chunks) > 1 else page, chunk)))
    title = _page_caption(caption, page, len(labels), len(pages))
    axes_inches = max(MIN_AXES_INCHES, len(groups[0]) * len(chunks[0]) * BAR_INCHES / GROUP_WIDTH)
    _fit_width(fig, axes_inches, fig.suptitle(title, fontsize=10))
    return title, fig


def bar_figures(
    board: Board, keys: Sequence[str], caption: str, ylabel: str | None = None
) -> Iterator[tuple[str, MplFigure]]:
    """(caption, figure) of every page of :func:`bar_page`, unrendered."""
    for index in range(len(bar_layout(len(board.rows), len(keys))[2])):
        yield bar_page(board, keys, caption, index, ylabel)


def grouped_bars(board: Board, keys: Sequence[str], caption: str, ylabel: str | None = None) -> list[Figure]:
    """One group of bars per board row, one bar per key: as many pages (figures) as the rows need, each drawn
    when first read (``Rendered.later``), so its bars carry the marks the leaderboard gives the board's cells
    once every benchmark has built its boards."""
    pages = bar_layout(len(board.rows), len(keys))[2]
    return [
        (
            _page_caption(caption, page, len(board.rows), len(pages)),
            Rendered.later(partial(_rendered_bar_page, board, list(keys), caption, index, ylabel)),
        )
        for index, page in enumerate(pages)
    ]


def _rendered_bar_page(board: Board, keys: list[str], caption: str, index: int, ylabel: str | None) -> Rendered:
    return render(bar_page(board, keys, caption, index, ylabel)[1])


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


def row_marks(board: Board, keys: Sequence[str]) -> dict[str, str]:
    """Each row's table marks (:func:`value_marks`) over `keys`, each mark once, by row label."""
    marks = {row.label: "".join(value_marks(row, key) for key in keys) for row in board.rows}
    return {label: "".join(m for m in (PARTLY_INVALID, NOT_COMPARABLE) if m in found) for label, found in marks.items()}


def _with_both(points: Mapping[str, tuple[float | None, float | None]]) -> dict[str, tuple[float, float]]:
    """The points that have both coordinates."""
    return {m: (x, y) for m, (x, y) in points.items() if x is not None and y is not None}


def scatter_figure(
    points: Mapping[str, tuple[float | None, float | None]],
    xlabel: str,
    ylabel: str,
    title: str,
    flagged: Collection[str] = (),
    flag_label: str = "flagged",
    marks: Mapping[str, str] | None = None,
) -> MplFigure | None:
    """One point per model, labelled while there are at most MAX_POINT_LABELS; models with a missing coordinate
    are left out (None if none is left), unrendered. `flagged` models get a ring (a second collection, over the
    first, which holds every point), '‡' after their label and a legend entry `flag_label`; `marks` (label ->
    a table's marks, :func:`row_marks`) go after the labels too, each with its legend entry. A label on the
    right half of the axes is written left of its point, so it stays inside them."""
    kept = _with_both(points)
    if not kept:
        return None
    fig = _figure(6.5, 4.5)
    ax = fig.subplots()
    xy = np.array(list(kept.values()), dtype=float)
    ax.scatter(xy[:, 0], xy[:, 1], s=14, color=COLOURS[0])
    ax.margins(0.08)
    handles: list = []
    labels: list[str] = []
    rings = np.array([p for m, p in kept.items() if m in flagged], dtype=float).reshape(-1, 2)
    if len(rings):
        ax.scatter(rings[:, 0], rings[:, 1], s=70, facecolors="none", edgecolors=FLAG_COLOUR, linewidths=1.2)
        handles.append(Line2D([], [], ls="", marker="o", markersize=8, markerfacecolor="none", color=FLAG_COLOUR))
        labels.append(f"{flag_label}: {len(rings)} of {len(kept)}")
    if len(kept) <= MAX_POINT_LABELS:
        suffixes = {m: _point_marks(m in flagged, (marks or {}).get(m, "")) for m in kept}
        middle = float(np.mean(ax.get_xlim()))
        for label, (x, y) in kept.items():
            side = -1 if x > middle else 1
            ax.annotate(tick_label(label) + suffixes[label], (x, y), fontsize=7, xytext=(3 * side, 3),
                        textcoords="offset points", ha="left" if side > 0 else "right")  # fmt: skip
        unflagged = "".join(suffixes[m] for m in kept if m not in flagged)
        for mark, text in MARK_LABELS.items():
            if mark in unflagged:
                handles.append(Line2D([], [], linestyle="none"))
                labels.append(text)
    else:
        title += f" ({len(kept)} models, unlabelled: see the table)"
    if handles:
        fig.legend(handles, labels, loc="outside lower center", fontsize=7, ncols=len(handles))
    if len(kept) < len(points):
        title += f"; {len(points) - len(kept)} without a value left out"
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    return fig


def _point_marks(flagged: bool, marks: str) -> str:
    """What follows a point's label: its table marks, with FLAG_MARK when flagged (once)."""
    return marks + (FLAG_MARK if flagged and FLAG_MARK not in marks else "")


def scatter(
    points: Mapping[str, tuple[float | None, float | None]],
    xlabel: str,
    ylabel: str,
    title: str,
    flagged: Collection[str] = (),
    flag_label: str = "flagged",
    board: Board | None = None,
    mark_keys: Sequence[str] = (),
) -> Rendered | None:
    """:func:`scatter_figure`, drawn when first read (``Rendered.later``), its labels marked as `board`'s rows
    are over `mark_keys` by then (:func:`row_marks`); None when no point has both coordinates."""
    if not _with_both(points):
        return None

    def draw() -> Rendered:
        marks = row_marks(board, mark_keys) if board is not None else None
        fig = scatter_figure(points, xlabel, ylabel, title, flagged, flag_label, marks)
        if fig is None:
            raise ValueError("no point has both coordinates")
        return render(fig)

    return Rendered.later(draw)
