"""A rendered figure: given bytes, or drawn once when first read (``Rendered.later``), and written as files."""

from __future__ import annotations

from lmms_eval_unify.reports.figure import Rendered


def test_a_later_figure_is_drawn_once_when_first_read_and_written_like_a_given_one(tmp_path):
    draws = []

    def draw() -> Rendered:
        draws.append(len(draws))
        return Rendered(b"png", b"svg", b"pdf")

    later = Rendered.later(draw)
    assert draws == []
    assert (later.png, later.svg, later.pdf) == (b"png", b"svg", b"pdf") and draws == [0]
    assert later.write(tmp_path / "figure_00") == []
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {
        "figure_00.png": b"png",
        "figure_00.svg": b"svg",
        "figure_00.pdf": b"pdf",
    }
    assert draws == [0]
