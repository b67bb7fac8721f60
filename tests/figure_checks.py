"""What every leaderboard figure must satisfy, for the plot tests and the benchmarks' figure tests: a bounded
size in every format, and legends inside the figure and off every axes' data area; and the figures the
leaderboard builds over many models."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from pathlib import Path

import pytest
import yaml
from leaderboard_runs import base_vlm_tasks, read_csv, run, unified_model_tasks
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure as MplFigure
from PIL import Image

from lmms_eval_unify.reports import plots
from lmms_eval_unify.reports.figure import Rendered
from lmms_eval_unify.testing.synthetic import write_run

MAX_POINTS = tuple(72 * inches for inches in plots.MAX_FIGURE_INCHES)


def assert_bounded(rendered: Rendered) -> None:
    """PNG at most MAX_PNG_PX pixels (at PNG_DPI), SVG and PDF at most MAX_FIGURE_INCHES."""
    with Image.open(io.BytesIO(rendered.png)) as png:
        assert png.format == "PNG" and png.info["dpi"] == pytest.approx((plots.PNG_DPI,) * 2, abs=0.1)
        assert png.width <= plots.MAX_PNG_PX[0] and png.height <= plots.MAX_PNG_PX[1], png.size
    svg = re.search(rb'<svg[^>]*width="([\d.]+)pt" height="([\d.]+)pt"', rendered.svg)
    assert svg and float(svg[1]) <= MAX_POINTS[0] + 0.01 and float(svg[2]) <= MAX_POINTS[1] + 0.01
    pdf = re.search(rb"/MediaBox \[ *0 0 ([\d.]+) ([\d.]+) *\]", rendered.pdf)
    assert pdf and float(pdf[1]) <= MAX_POINTS[0] + 0.01 and float(pdf[2]) <= MAX_POINTS[1] + 0.01


def assert_legends_outside_data(fig: MplFigure) -> None:
    """Every legend (the figure's and the axes') lies inside the figure and overlaps no axes' data area."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    for legend in every_legend(fig):
        box = legend.get_window_extent(renderer)
        assert box.x0 >= -0.5 and box.y0 >= -0.5 and box.x1 <= width + 0.5 and box.y1 <= height + 0.5, box
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent(renderer)), (box, ax.get_window_extent(renderer))


def empty_width_fraction(ax: Axes) -> float:
    """The share of a panel's width its bars leave empty, beyond the first and the last bar (a bar of 0 or of no
    value keeps its place), read from the drawn bar artists; lay the figure out first."""
    frame = ax.get_window_extent()
    xs = [c.get_transform().transform(path.vertices)[:, 0] for c in bar_series(ax) for path in c.get_paths()]
    if not xs:
        return 1.0
    left, right = max(frame.x0, min(x.min() for x in xs)), min(frame.x1, max(x.max() for x in xs))
    return 1.0 - max(0.0, right - left) / frame.width


def bar_series(ax: Axes) -> list[PolyCollection]:
    """The bar collections of a panel, one per series (the bars of one series are one collection)."""
    return [c for c in ax.collections if isinstance(c, PolyCollection)]


def every_legend(fig: MplFigure) -> list:
    """The figure's legends and its axes'."""
    return [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]


def many_runs(root: Path, n_models: int, benchmarks: Iterable[str]) -> tuple[Path, Path]:
    """`root/runs` with `n_models` models (half base VLMs, half unified models paired with them) on the tiny
    samples of ``leaderboard_runs``, and the pairs file."""
    pairs = {}
    for i in range(n_models // 2):
        for model, tasks in ((f"base-{i}", base_vlm_tasks()), (f"uni-{i}", unified_model_tasks())):
            write_run(root / "runs", model, {t: rows for b in benchmarks for t, rows in tasks[b].items()})
        pairs[f"uni-{i}"] = f"base-{i}"
    pairs_file = root / "pairs.yaml"
    pairs_file.write_text(yaml.safe_dump({"pairs": pairs}))
    return root / "runs", pairs_file


def leaderboard_figures(monkeypatch: pytest.MonkeyPatch, args: list) -> list[MplFigure]:
    """Every figure ``lmms-eval-unify leaderboard `args``` builds, in order, unrendered: rendering (checked by
    tests/reports/test_plots.py) is skipped, each figure kept instead."""
    figures: list[MplFigure] = []

    def keep(fig: MplFigure) -> Rendered:
        figures.append(fig)
        return Rendered(b"", b"", b"")

    monkeypatch.setattr(plots, "render", keep)
    assert run(args) == 0
    return figures


def caption(fig: MplFigure) -> str:
    """A figure's title: its suptitle (bar pages), else its first axes' title."""
    return fig.get_suptitle() or fig.axes[0].get_title()


def bar_labels(figures: Iterable[MplFigure], prefix: str) -> list[str]:
    """The x tick labels, in order, of every page whose caption starts with `prefix`."""
    pages = [fig for fig in figures if caption(fig).startswith(prefix)]
    return [t.get_text() for fig in pages for ax in fig.axes for t in ax.get_xticklabels()]


def assert_every_figure_bounded(figures: Iterable[MplFigure]) -> None:
    """Every figure at most MAX_FIGURE_INCHES, its legends inside it and off the axes' data area."""
    for fig in figures:
        assert fig.get_figwidth() <= plots.MAX_FIGURE_INCHES[0] and fig.get_figheight() <= plots.MAX_FIGURE_INCHES[1]
        assert_legends_outside_data(fig)


def shown_labels(csv_path: Path) -> list[str]:
    """A board's row labels (its CSV's ``model`` column) as a figure's ticks show them."""
    return [plots.tick_label(label) for label in read_csv(csv_path)]
