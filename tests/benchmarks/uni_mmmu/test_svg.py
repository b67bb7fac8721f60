import http.server
import random
import threading

import numpy as np
import pytest

from lmms_eval_unify.benchmarks.uni_mmmu import svg
from lmms_eval_unify.benchmarks.uni_mmmu.svg import UnsafeSVGError, check_structure, generate_svg, render_svg

ENTITY_BOMB = """<?xml version="1.0"?>
<!DOCTYPE svg [
  <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
  <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
  <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
  <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
]>
<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text>&d;&d;&d;&d;</text></svg>"""


@pytest.mark.parametrize("tier", svg.TIERS)
def test_generated_tiers_render_with_palette_colours(tier):
    rng = random.Random(7)
    for _ in range(5):
        image = np.asarray(svg.render_svg(svg.generate_svg(tier, rng)))
        assert image.shape == (svg.CANVAS, svg.CANVAS, 3)
        assert (image != 255).any(), "nothing was drawn"


def test_tier_c_uses_defs_and_use_and_the_use_is_drawn():
    program = svg.generate_svg("C", random.Random(1))
    assert "<defs>" in program and "<use " in program
    without_use = svg.render_svg(program.split("<use ")[0] + "</svg>")
    assert (np.asarray(svg.render_svg(program)) != np.asarray(without_use)).any()


def test_external_url_is_never_fetched():
    hits = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/x.png"
    program = (
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="10" '
        f'height="10"><image xlink:href="{url}" width="10" height="10"/></svg>'
    )
    try:
        with pytest.raises(svg.UnsafeSVGError):
            svg.render_svg(program)
    finally:
        server.shutdown()
    assert hits == []


def test_entity_bomb_is_refused():
    with pytest.raises(svg.UnsafeSVGError):
        svg.render_svg(ENTITY_BOMB)


def test_unknown_tier_is_an_error():
    with pytest.raises(ValueError):
        svg.generate_svg("D", random.Random(0))


def _svg(body: str) -> str:
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        f'width="8" height="8">{body}</svg>'
    )


def _use_cycle(length: int, attribute: str) -> str:
    """``length`` groups, each using the next, the last using the first (length 1: a self-reference)."""
    groups = "".join(f'<g id="g{i}"><use {attribute}="#g{(i + 1) % length}"/></g>' for i in range(length))
    return _svg(f"<defs>{groups}</defs><use {attribute}='#g0'/>")


@pytest.mark.parametrize("attribute", ["xlink:href", "href"])
@pytest.mark.parametrize("length", [1, 2, 3, 10, 500])
def test_use_cycles_are_refused_not_a_recursion_error(length, attribute):
    with pytest.raises(UnsafeSVGError, match="cycle|chain"):
        render_svg(_use_cycle(length, attribute))
    self_use = _svg(f'<use id="u" {attribute}="#u"/>')
    with pytest.raises(UnsafeSVGError, match="cycle"):
        render_svg(self_use)


@pytest.mark.parametrize(
    "document",
    [
        _svg("<g>" * 5000 + "</g>" * 5000),  # depth
        _svg("<rect/>" * 20_000),  # element count
        _svg(" " * 1_000_001),  # size
        # billion laughs with <use>: each level draws the previous one ten times
        _svg(
            '<defs><rect id="l0" width="1" height="1"/>'
            + "".join(f'<g id="l{i}">' + f'<use href="#l{i - 1}"/>' * 10 + "</g>" for i in range(1, 7))
            + '</defs><use href="#l6"/>'
        ),  # fmt: skip
        "<svg><unclosed></svg>",
    ],
    ids=["deep", "many", "huge", "use_bomb", "malformed"],
)
def test_documents_that_could_exhaust_the_renderer_are_refused_fast(document, monkeypatch):
    """Refused by the structure check before cairosvg sees them, and the check's ``<use>`` expansion visits each
    element and reference at most once (memoised, not the 10**6 draws of the use bomb): work counted, not timed."""
    from cairosvg.surface import PNGSurface

    rendered, expanded = [], []
    expanded_size = svg._expanded_size
    monkeypatch.setattr(PNGSurface, "convert", classmethod(lambda cls, **kwargs: rendered.append(kwargs)))

    def counted(element, *args):
        expanded.append(element)
        return expanded_size(element, *args)

    monkeypatch.setattr(svg, "_expanded_size", counted)
    with pytest.raises(UnsafeSVGError):
        render_svg(document)
    assert rendered == []
    tags = document.count("<")  # an upper bound on elements and on <use> references alike
    assert len(expanded) <= 2 * tags, f"{len(expanded)} expansion steps for {tags} tags"


@pytest.mark.parametrize("tier", ["A", "B", "C"])
def test_generated_programs_pass_the_structure_check(tier):
    check_structure(generate_svg(tier, random.Random(0)))
