"""Figure helpers: rank correlation matrices, PNG/SVG/PDF output, and figures that stay readable and bounded
whatever the number of models (pages, legends outside the data, distinct series, zero and missing drawn)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from figure_checks import assert_bounded, assert_legends_outside_data
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from PIL import Image
from scipy import stats

from lmms_eval_unify.reports import plots
from lmms_eval_unify.reports.boards import Board, Row, ranges
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


@pytest.mark.parametrize("n_models", [5, 200])
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


@pytest.mark.parametrize(("n_models", "n_keys"), [(5, 40), (5, 8), (200, 4)])
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
            assert not any(box.overlaps(legend.get_window_extent()) for legend in fig.legends)
            assert box.x0 >= 0 and box.y1 <= fig.bbox.height


def test_forty_series_are_told_apart_by_colour_and_hatch():
    keys = [f"s{j}" for j in range(40)]
    [(_, fig)] = bar_figures(board(2, keys), keys, "scores")
    bars = fig.axes[0].collections[: len(keys)]
    styles = [(tuple(np.round(c.get_facecolor()[0], 3)), c.get_hatch() or "") for c in bars]
    assert len(set(styles)) == 40
    legend_styles = [(tuple(np.round(p.get_facecolor(), 3)), p.get_hatch() or "") for p in fig.legends[0].get_patches()]
    assert legend_styles == styles
    assert len(set(plots.SERIES_STYLES)) == len(plots.SERIES_STYLES) >= 20


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
    first_colour = plots.series_style(0)[0]
    centre = -0.4 + 0.2  # the first key's bar of group 0 (width 0.8 / 2 keys)
    zero, missing = pixels_near(canvas, ax, centre, 0.0), pixels_near(canvas, ax, 1 + centre, 0.0)
    assert has_colour(zero, first_colour)  # a zero is seen, in its series' colour
    assert not has_colour(missing, first_colour) and has_colour(missing, plots.MISSING_COLOUR)
    assert not has_colour(zero, plots.MISSING_COLOUR)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "0 (a line at zero)" in labels and "no value (not run / not scored)" in labels


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
