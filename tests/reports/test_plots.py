"""Figure helpers: rank correlation matrices, PNG/SVG/PDF output, and figures that stay readable and bounded
whatever the number of models (pages, legends outside the data, distinct series, zero and missing drawn)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from figure_checks import (
    assert_bounded,
    assert_legends_outside_data,
    bar_series,
    empty_width_fraction,
    every_legend,
)
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.colors import to_rgb
from PIL import Image
from scipy import stats

from lmms_eval_unify.reports import plots
from lmms_eval_unify.reports.boards import Board, CellSamples, Row, ranges
from lmms_eval_unify.reports.figure import Rendered
from lmms_eval_unify.reports.plots import (
    average_ranks,
    bar_figures,
    heatmap,
    heatmap_figures,
    render,
    scatter,
    scatter_figure,
    spearman_matrix,
)
from lmms_eval_unify.reports.render import value_text


def test_average_ranks_share_ties():
    np.testing.assert_array_equal(average_ranks(np.array([3.0, 1.0, 3.0, 2.0])), stats.rankdata([3, 1, 3, 2]))


def test_spearman_matrix_matches_scipy_with_ties_and_missing_values():
    rng = np.random.default_rng(0)
    vectors = rng.integers(0, 5, size=(20, 4)).astype(float)
    full = spearman_matrix(vectors)
    assert full[0, 3] == pytest.approx(stats.spearmanr(vectors[:, 0], vectors[:, 3]).statistic)
    vectors[4, 1] = np.nan
    ok = np.isfinite(vectors[:, 1])
    partial = spearman_matrix(vectors)
    assert partial[1, 2] == pytest.approx(stats.spearmanr(vectors[ok, 1], vectors[ok, 2]).statistic)
    assert partial[0, 3] == pytest.approx(full[0, 3])


def board(n_models: int, keys: list[str], value=None, seed: int = 0) -> Board:
    """A board of `n_models` rows with long labels, scores 0-100 (or `value(row, key index)`)."""
    rng = np.random.default_rng(seed)
    rows = [
        Row(
            f"organisation/unified-model-{i} (configuration seed={i})",
            {k: float(rng.uniform(0, 100)) if value is None else value(i, j) for j, k in enumerate(keys)},
        )
        for i in range(n_models)
    ]
    return Board("b", "t", [(k, (k,)) for k in keys], rows, ranges=ranges(keys))


def tick_texts(labels) -> list[str]:
    return [t.get_text() for t in labels]


def test_figures_are_png_svg_and_pdf(tmp_path):
    [(title, figure)] = heatmap(np.array([[0.5, -1.0], [np.nan, 0.2]]), ["a", "b"], ["x", "y"], "t")
    assert title == "t"
    assert_bounded(figure)
    with Image.open(io.BytesIO(figure.png)) as png:
        assert png.width == 5 * plots.PNG_DPI  # figsize (5.0, 3.0) for two columns, in pixels
    assert figure.svg.lstrip().startswith(b"<?xml") and b"<svg" in figure.svg
    assert figure.pdf.startswith(b"%PDF")
    points = scatter({"m": (40.0, 60.0), "no-y": (30.0, None)}, "x", "y", "t")
    points.write(tmp_path / "scatter")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scatter.pdf", "scatter.png", "scatter.svg"]
    assert (tmp_path / "scatter.png").read_bytes() == points.png
    assert scatter({"no-y": (30.0, None)}, "x", "y", "t") is None


def assert_within_max_inches(fig) -> None:
    assert fig.get_figwidth() <= plots.MAX_FIGURE_INCHES[0] and fig.get_figheight() <= plots.MAX_FIGURE_INCHES[1]


def figure_kinds(n_models: int) -> dict[str, list]:
    """Every kind of figure over `n_models` models, each kind's pages unrendered."""
    keys = [f"score {j}" for j in range(4)]
    labels = [r.label for r in board(n_models, keys).rows]
    correlations = spearman_matrix(np.random.default_rng(2).normal(size=(9, n_models)))
    points = {label: (float(i), float(i % 7)) for i, label in enumerate(labels)}
    return {
        "bars": [fig for _, fig in bar_figures(board(n_models, keys), keys, "scores")],
        "heatmap": [
            fig
            for _, fig in heatmap_figures(
                np.random.default_rng(1).normal(size=(n_models, 7)),
                labels,
                [f"c{j}" for j in range(7)],
                "Δ",
                symmetric=False,
            )  # fmt: skip
        ],
        "square heatmap": [fig for _, fig in heatmap_figures(correlations, labels, labels, "ρ", paged=False)],
        "scatter": [scatter_figure(points, "x", "y", "gap")],
    }


@pytest.mark.parametrize("n_models", [5, 130])
def test_pages_show_every_model_within_the_maximum_size(n_models):
    """Every page of every kind of figure is at most MAX_FIGURE_INCHES, and the pages together show every
    model once, in order (a square matrix: one page, every k-th model labelled)."""
    keys = [f"score {j}" for j in range(4)]
    shown = board(n_models, keys)
    short = [plots.tick_label(r.label) for r in shown.rows]
    kinds = figure_kinds(n_models)
    for fig in (f for pages in kinds.values() for f in pages):
        assert fig.get_figwidth() <= plots.MAX_FIGURE_INCHES[0] and fig.get_figheight() <= plots.MAX_FIGURE_INCHES[1]

    pages = list(bar_figures(shown, keys, "scores"))
    assert [t for _, fig in pages for ax in fig.axes for t in tick_texts(ax.get_xticklabels())] == short
    per_page = plots.groups_per_panel(len(keys)) * plots.PANELS_PER_PAGE
    assert len(pages) == -(-n_models // per_page)
    assert all(len(ax.get_xticklabels()) <= plots.groups_per_panel(len(keys)) for _, f in pages for ax in f.axes)
    if len(pages) > 1:
        assert pages[1][0] == f"scores (rows {per_page + 1}–{min(2 * per_page, n_models)} of {n_models})"

    heat_pages = kinds["heatmap"]
    assert len(heat_pages) == -(-n_models // plots.HEATMAP_ROWS_PER_PAGE)
    assert [t for fig in heat_pages for t in tick_texts(fig.axes[0].get_yticklabels())] == short
    assert len({fig.axes[0].images[0].get_clim() for fig in heat_pages}) == 1  # one colour scale

    [square] = kinds["square heatmap"]
    rows_labelled = len(square.axes[0].get_yticklabels())
    assert rows_labelled == n_models if n_models <= plots.MAX_TICK_LABELS else rows_labelled <= plots.MAX_TICK_LABELS
    assert len(square.axes[0].get_xticklabels()) <= plots.MAX_COLUMN_LABELS

    [labelled] = kinds["scatter"]
    annotated = [t for t in labelled.axes[0].texts if t.get_text()]
    assert len(annotated) == (n_models if n_models <= plots.MAX_POINT_LABELS else 0)


@pytest.mark.parametrize("n_models", [5, pytest.param(200, marks=pytest.mark.heavy)])
def test_rendered_figures_stay_within_the_maximum_pixels_and_points(n_models):
    """The largest page of every kind, rendered: PNG pixels, SVG and PDF sizes (300-dpi PNGs grew to
    23,810 px wide with 30 models)."""
    for pages in figure_kinds(n_models).values():
        assert_bounded(render(pages[0]))


@pytest.mark.parametrize(("n_models", "n_keys"), [(5, 40), (5, 8), pytest.param(200, 4, marks=pytest.mark.heavy)])
def test_legends_lie_outside_the_data_and_inside_the_figure(n_models, n_keys):
    """The legend of many series (the GapEval legend was cut at the PNG edge) and of a percent scale (the
    UniG2U legend covered bars and the 100 tick) sits right of the axes, inside the figure."""
    keys = [f"a long series name {j}" for j in range(n_keys)]
    pages = [fig for _, fig in bar_figures(board(n_models, keys), keys, "scores")]
    for fig in {id(f): f for f in (pages[0], pages[-1])}.values():  # the tallest and the shortest page
        assert_legends_outside_data(fig)
        for ax in fig.axes:
            assert ax.get_ylim()[1] >= 100 and 100 in ax.get_yticks()
            hundred = next(t for t in ax.get_yticklabels() if t.get_text() == "100")
            box = hundred.get_window_extent()
            assert not any(box.overlaps(legend.get_window_extent()) for legend in every_legend(fig))
            assert box.x0 >= 0 and box.y1 <= fig.bbox.height


def colour(rgba) -> tuple:
    return tuple(np.round(rgba, 3))


@pytest.mark.parametrize("n_keys", [15, 40])
def test_many_series_go_to_panels_of_at_most_eight_each_in_its_own_colour(n_keys):
    """Uni-MMMU's 15 series shared 10 colours in one panel: beyond 8, every group of models gets a panel per
    share of the series (small multiples), each series of a panel in its own colour, named in the panel's
    legend; the last panel labels the models."""
    keys = [f"s{j}" for j in range(n_keys)]
    [(_, fig)] = bar_figures(board(2, keys), keys, "scores")
    named = []
    for ax in fig.axes:
        colours = [colour(c.get_facecolor()[0]) for c in bar_series(ax)]
        assert len(colours) <= 8 and len(set(colours)) == len(colours)  # the bound
        assert [colour(p.get_facecolor()) for p in ax.get_legend().get_patches()] == colours
        named += [t.get_text() for t in ax.get_legend().get_texts()][: len(colours)]
    assert named == keys
    assert [len(ax.get_xticklabels()) for ax in fig.axes] == [0] * (len(fig.axes) - 1) + [2]


def pixels_near(canvas: FigureCanvasAgg, ax, x: float, y: float, radius: int = 4) -> np.ndarray:
    """RGB pixels (n x 3, 0-255) of the rendered figure within `radius` pixels of data point (x, y)."""
    image = np.asarray(canvas.buffer_rgba())[..., :3].astype(int)
    px, py = ax.transData.transform((x, y))
    row = image.shape[0] - int(round(py))
    col = int(round(px))
    return image[row - radius : row + radius + 1, col - radius : col + radius + 1].reshape(-1, 3)


def has_colour(pixels: np.ndarray, colour, tolerance: int = 40) -> bool:
    target = np.array(to_rgb(colour)) * 255
    return bool((np.abs(pixels - target).max(axis=1) < tolerance).any())


def test_a_zero_bar_is_drawn_and_a_missing_value_is_marked_apart_from_it():
    keys = ["first", "second"]
    values = {(0, 0): 0.0, (1, 0): None}  # row 0 scored 0 on the first key, row 1 has no value there
    shown = board(3, keys, value=lambda i, j: values.get((i, j), 50.0))
    [(_, fig)] = bar_figures(shown, keys, "scores")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    ax = fig.axes[0]
    first_colour = plots.series_colour(0)
    centre = -plots.GROUP_WIDTH / 4  # the first key's bar of group 0 (2 keys share the group's width)
    zero, missing = pixels_near(canvas, ax, centre, 0.0), pixels_near(canvas, ax, 1 + centre, 0.0)
    assert has_colour(zero, first_colour)  # a zero is seen, in its series' colour
    assert not has_colour(missing, first_colour) and has_colour(missing, plots.MISSING_COLOUR)
    assert not has_colour(zero, plots.MISSING_COLOUR)
    assert ax.get_ylim()[0] == 0  # the axis is the zero line: nothing hangs below it
    under_the_axis = pixels_near(canvas, ax, centre, 0.0, radius=6).reshape(13, 13, 3)[9:]  # 3-6 px below
    assert not has_colour(under_the_axis.reshape(-1, 3), first_colour)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert plots.ZERO_LABEL in labels and plots.MISSING_LABEL in labels


def test_a_missing_heatmap_cell_is_grey_and_a_zero_white():
    [(_, fig)] = heatmap_figures(np.array([[0.0, np.nan], [1.0, -1.0]]), ["a", "b"], ["x", "y"], "Δ")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    ax = fig.axes[0]
    zero, missing = pixels_near(canvas, ax, -0.3, -0.3, 2), pixels_near(canvas, ax, 0.7, -0.3, 2)  # off the text
    assert has_colour(missing, plots.MISSING_COLOUR, 10) and not has_colour(zero, plots.MISSING_COLOUR, 10)
    assert (zero > 230).all()  # the centre of the diverging scale
    assert "grey = no value" in ax.get_title()


def test_a_scatter_rings_and_marks_its_flagged_points_with_a_legend_inside_the_figure():
    points = {"a": (10.0, 20.0), "b": (30.0, 40.0), "c": (50.0, None)}
    fig = plots.scatter_figure(points, "x", "y", "t", flagged=["b", "c"], flag_label="fit not converged")
    every, rings = fig.axes[0].collections
    assert len(every.get_offsets()) == 2 and rings.get_offsets().tolist() == [[30.0, 40.0]]
    assert [t.get_text() for t in fig.axes[0].texts] == ["a", "b‡"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["fit not converged: 1 of 2"]
    assert_legends_outside_data(fig)
    plain = plots.scatter_figure(points, "x", "y", "t")
    assert len(plain.axes[0].collections) == 1 and not plain.legends


# --- figures a reviewer accepts (issue 33, item 4) -----------------------------------------------------------------


def table_board(n_models: int, value=None, interval=None, marked=(), invalid=()) -> Board:
    """A board like a benchmark's: snake-case keys under display headers, 0-100, `value(row, key index)` with
    `interval(value)` (default ±5, clipped), not comparable at `marked` and partly invalid at `invalid`
    (row, key index) cells."""
    keys = ["world_knowledge Und.", "world_knowledge Gen.", "reasoning Und.", "reasoning Gen."]
    headers = ["World Knowledge Und.", "World Knowledge Gen.", "Reasoning Und.", "Reasoning Gen."]
    rows = []
    for i in range(n_models):
        values = {k: (20.0 + 15 * i + 5 * j) if value is None else value(i, j) for j, k in enumerate(keys)}
        intervals = {k: (v - 5, v + 5) if interval is None else interval(v) for k, v in values.items() if v is not None}
        cells = {k: CellSamples(40, {"judge_failed": 2} if (i, j) in invalid else {}) for j, k in enumerate(keys)}
        caveats = {k: ("t: 20 of 500 items (--limit 20)",) for j, k in enumerate(keys) if (i, j) in marked}
        rows.append(Row(f"model-{i}", values, intervals, cells, caveats))
    return Board("b", "t", list(zip(headers, [(k,) for k in keys], strict=True)), rows, ranges=ranges(keys))


def bar_boxes(ax) -> dict[tuple[int, int], tuple[float, float, float]]:
    """(row, series) -> (left, right, top) of every bar of a panel, in data coordinates, read from its artists."""
    boxes = {}
    for series, bars in enumerate(bar_series(ax)):
        for row, path in enumerate(bars.get_paths()):
            xs, ys = path.vertices[:, 0], path.vertices[:, 1]
            boxes[row, series] = (float(xs.min()), float(xs.max()), float(ys.max()))
    return boxes


@pytest.mark.parametrize(("n_models", "n_keys"), [(1, 4), (2, 4), (9, 8), (31, 4), (5, 15)])
def test_bars_fill_their_panels_whatever_the_model_count(n_models, n_keys):
    """Bars filled about 30% of a fixed-width axis (9 models in 30 slots): the axes now grow with the bars and
    the bars span them, so at most 15% of a panel's width is left empty."""
    keys = [f"s{j}" for j in range(n_keys)]
    for _, fig in bar_figures(board(n_models, keys), keys, "scores"):
        fig.draw_without_rendering()
        for ax in fig.axes:
            assert empty_width_fraction(ax) <= 0.15


def test_figure_width_follows_the_model_count():
    keys = [f"s{j}" for j in range(4)]
    widths = [next(bar_figures(board(n, keys), keys, "scores"))[1].get_figwidth() for n in (2, 9, 30)]
    assert widths[0] < widths[1] < widths[2] == plots.MAX_FIGURE_INCHES[0]


def test_bars_carry_their_bootstrap_intervals_as_whiskers():
    """Every value's 95% interval (as the CSV has it, clipped to the scale) is a whisker at its bar's centre;
    a value without one has none, and the legend says so."""
    shown = table_board(3, value=lambda i, j: None if (i, j) == (2, 3) else 30.0 + 20 * i + j)
    shown.rows[1].intervals["reasoning Und."] = None  # no interval for this one
    shown.rows[2].intervals["world_knowledge Und."] = (60.0, 130.0)  # clipped to 100
    [(_, fig)] = bar_figures(shown, shown.value_keys(), "scores")
    ax = fig.axes[0]
    whiskers = {
        (round((a[0] + b[0]) / 2, 6), round(min(a[1], b[1]), 6), round(max(a[1], b[1]), 6))
        for c in ax.collections
        if isinstance(c, LineCollection)
        for a, b in c.get_segments()
        if a[0] == b[0]
    }
    keys = shown.value_keys()
    expected = {
        (round((left + right) / 2, 6), *(round(v, 6) for v in shown.interval(shown.rows[row], keys[series])))
        for (row, series), (left, right, _) in bar_boxes(ax).items()
        if shown.rows[row].values[keys[series]] is not None and shown.interval(shown.rows[row], keys[series])
    }
    assert whiskers == expected and len(whiskers) == 3 * 4 - 2
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert plots.INTERVAL_LABEL in labels and plots.NO_INTERVAL_LABEL in labels


def test_bars_carry_the_tables_marks_above_them_inside_the_frame():
    """'‡' (not comparable, e.g. a --limit run) and '†' (some samples not scored) stand over the very bars
    whose table cells print them; a value of 100 keeps its whisker and mark off the frame."""
    shown = table_board(3, value=lambda i, j: 100.0 if (i, j) == (2, 1) else 40.0, marked=[(1, 2), (2, 1)],
                        invalid=[(0, 0), (2, 1)])  # fmt: skip
    keys = shown.value_keys()
    [(_, fig)] = bar_figures(shown, keys, "scores")
    ax = fig.axes[0]
    fig.draw_without_rendering()
    frame = ax.get_window_extent()
    boxes = bar_boxes(ax)
    drawn_marks = {}
    for text in (t for t in ax.texts if t.get_text()):
        box = text.get_window_extent()
        x = ax.transData.inverted().transform(((box.x0 + box.x1) / 2, box.y0))[0]
        [(cell, _)] = [(cell, b) for cell, b in boxes.items() if b[0] <= x <= b[1]]
        drawn_marks[cell] = text.get_text()
        assert frame.y0 < box.y0 and box.y1 < frame.y1  # inside the frame, 100 included
    expected = {
        (r, s): value_text(row, k).lstrip("0123456789.") for r, row in enumerate(shown.rows) for s, k in enumerate(keys)
    }
    assert drawn_marks == {cell: marks for cell, marks in expected.items() if marks}
    assert drawn_marks == {(0, 0): "†", (1, 2): "‡", (2, 1): "†‡"}
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert set(plots.MARK_LABELS.values()) <= set(labels)


def test_axes_say_what_they_show_in_the_tables_names():
    """The y axis is labelled with its unit and stops at 0 and just above 100 (ticks up to 100); the models
    axis is labelled; series are named by the table's headers, not its snake-case keys."""
    shown = table_board(2, value=lambda i, j: 100.0 * i)
    [(_, fig)] = bar_figures(shown, shown.value_keys(), "scores")
    ax = fig.axes[0]
    assert ax.get_ylabel() == "score (0–100)" and ax.get_xlabel() == "model"
    low, high = ax.get_ylim()
    assert low == 0 and 100 < high <= 100 * (1 + plots.HEADROOM) and max(ax.get_yticks()) == 100
    names = [t.get_text() for t in ax.get_legend().get_texts()][:4]
    assert names == [header for header, _ in shown.columns]
    accuracy = next(bar_figures(shown, shown.value_keys(), "scores", ylabel="accuracy (%)"))[1]
    assert accuracy.axes[0].get_ylabel() == "accuracy (%)"


def test_leaderboard_figures_are_drawn_after_the_cells_are_marked(monkeypatch):
    """The leaderboard marks cells not comparable after the benchmarks built their figures: bars and Fig. 3
    are drawn when first read, so they carry those marks."""
    kept = []
    monkeypatch.setattr(plots, "render", lambda fig: kept.append(fig) or Rendered(b"", b"", b""))
    shown = table_board(2)
    [(title, bars)] = plots.grouped_bars(shown, shown.value_keys(), "scores")
    points = plots.scatter({"model-0": (40.0, 60.0), "model-1": (90.0, 20.0)}, "ability (%)", "gap", "Fig. 3",
                           board=shown, mark_keys=["reasoning Und."])  # fmt: skip
    assert title == "scores" and not kept
    shown.rows[1].caveats["reasoning Und."] = ("t: 20 of 500 items (--limit 20)",)  # what mark_boards does
    assert bars.png == b"" and points is not None and points.svg == b""
    bar_fig, scatter_fig = kept
    assert [t.get_text() for t in bar_fig.axes[0].texts if t.get_text()] == ["‡"]
    assert [t.get_text() for t in scatter_fig.axes[0].texts] == ["model-0", "model-1‡"]
    assert plots.MARK_LABELS["‡"] in [t.get_text() for t in scatter_fig.legends[0].get_texts()]


def test_scatter_labels_stay_inside_the_axes():
    """Fig. 3's label of the rightmost point ran past the figure's edge."""
    fig = scatter_figure({"base-0": (25.0, 97.8), "unified-model-0 (GtA)": (62.5, 55.5)}, "x", "y", "t")
    fig.draw_without_rendering()
    frame = fig.axes[0].get_window_extent()
    for text in fig.axes[0].texts:
        box = text.get_window_extent()
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1
