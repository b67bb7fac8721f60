"""Uni-MMMU code rendering: offline SVG programs in the three difficulty tiers and a safe rasteriser.

Tiers (paper Appendix A): A = a single primitive; B = several non-overlapping or repeated primitives;
C = overlapping shapes built with ``<defs>``/``<use>``. Colours come from the official judge palette.
Rendering uses cairosvg with ``unsafe=False`` (no XML entity expansion, size limits) and a URL fetcher that
refuses every external resource; documents declaring a DOCTYPE or entity are rejected before parsing, and
so are documents whose structure could exhaust the renderer (:func:`check_structure`): a ``<use>`` that
references itself directly or through a cycle, more than ``MAX_SVG_CHARS`` characters, ``MAX_ELEMENTS``
elements, ``MAX_DEPTH`` levels of nesting, or ``MAX_EXPANDED`` elements once every ``<use>`` is expanded.
These limits bound render time and memory (the benchmark's programs have a few dozen elements).
"""

from __future__ import annotations

import io
import random
import re
import xml.etree.ElementTree as ET

from PIL import Image

PALETTE = ("#E74C3C", "#3498DB", "#2ECC71", "#F1C40F", "#9B59B6", "#34495E", "#1ABC9C", "#E67E22")
COLOUR_NAMES = dict(
    zip(PALETTE, ("red", "blue", "green", "yellow", "purple", "dark slate", "teal", "orange"), strict=True)
)
SHAPE_NAMES = {"circle": "circle", "rect": "square", "polygon": "triangle"}
SVG_NS = "{http://www.w3.org/2000/svg}"
XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
TIERS = ("A", "B", "C")
CANVAS = 256
DECLARATION = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)
HREF = "href"
MAX_SVG_CHARS = 1_000_000
MAX_ELEMENTS = 10_000
MAX_DEPTH = 64
MAX_EXPANDED = 100_000


class UnsafeSVGError(ValueError):
    """An SVG that declares entities/DOCTYPE or references an external resource."""


def _refuse_fetch(url: str, resource_type: str | None = None, **_: object) -> dict:
    raise UnsafeSVGError(f"external resource refused: {url}")


def render_svg(svg: str, size: int = CANVAS) -> Image.Image:
    """Rasterise ``svg`` to an RGB image on white; never fetches resources nor expands entities."""
    from cairosvg.surface import PNGSurface

    check_structure(svg)
    try:
        png = PNGSurface.convert(
            bytestring=svg.encode("utf-8", errors="replace"),
            unsafe=False,
            url_fetcher=_refuse_fetch,
            output_width=size,
            output_height=size,
            background_color="white",
        )
    except RecursionError:
        raise UnsafeSVGError("SVG too deeply nested to render") from None
    return Image.open(io.BytesIO(png)).convert("RGB")


def check_structure(svg: str) -> None:
    """Raise ``UnsafeSVGError`` for an SVG that is not well-formed, declares a DOCTYPE/entity, or exceeds
    the structural limits (size, elements, depth, ``<use>`` cycles and expansion) of the module docstring."""
    if len(svg) > MAX_SVG_CHARS:
        raise UnsafeSVGError(f"SVG of {len(svg)} characters > {MAX_SVG_CHARS}")
    if DECLARATION.search(svg):
        raise UnsafeSVGError("SVG with a DOCTYPE/ENTITY declaration refused")
    try:
        root = ET.fromstring(svg)
    except (ET.ParseError, RecursionError) as exc:
        raise UnsafeSVGError(f"SVG is not well-formed XML: {type(exc).__name__}") from None
    elements, depth, stack = 0, 0, [(root, 1)]
    while stack:
        element, level = stack.pop()
        elements, depth = elements + 1, max(depth, level)
        stack.extend((child, level + 1) for child in element)
    if elements > MAX_ELEMENTS or depth > MAX_DEPTH:
        raise UnsafeSVGError(f"SVG of {elements} elements, {depth} deep > {MAX_ELEMENTS} or {MAX_DEPTH}")
    by_id = {name: element for element in root.iter() if (name := element.get("id"))}
    try:
        expanded = _expanded_size(root, by_id, {}, set())
    except RecursionError:
        raise UnsafeSVGError("SVG <use> chain too long") from None
    if expanded > MAX_EXPANDED:
        raise UnsafeSVGError(f"SVG expands to {expanded} elements > {MAX_EXPANDED}")


def _use_target(element: ET.Element, by_id: dict[str, ET.Element]) -> ET.Element | None:
    href = element.get(XLINK_HREF) or element.get(HREF) or ""
    return by_id.get(href.removeprefix("#")) if href.startswith("#") else None


def _expanded_size(element: ET.Element, by_id: dict[str, ET.Element], sizes: dict[int, int], visiting: set[int]) -> int:
    """Elements drawn for ``element`` once every ``<use>`` is replaced by its target; ``UnsafeSVGError``
    on a reference cycle. ``sizes`` memoises finished elements, ``visiting`` holds the current path."""
    key = id(element)
    if key in sizes:
        return sizes[key]
    if key in visiting:
        raise UnsafeSVGError(f"SVG <use> reference cycle through {element.get('id') or element.tag!r}")
    visiting.add(key)
    total = 1 + sum(_expanded_size(child, by_id, sizes, visiting) for child in element)
    target = _use_target(element, by_id) if element.tag.removeprefix(SVG_NS) == "use" else None
    if target is not None:
        total += _expanded_size(target, by_id, sizes, visiting)
    visiting.discard(key)
    sizes[key] = min(total, MAX_EXPANDED + 1)
    return sizes[key]


def _shape(rng: random.Random, x: int, y: int, r: int, colour: str) -> str:
    kind = rng.choice(("circle", "rect", "triangle"))
    if kind == "circle":
        return f'<circle cx="{x}" cy="{y}" r="{r}" fill="{colour}"/>'
    if kind == "rect":
        return f'<rect x="{x - r}" y="{y - r}" width="{2 * r}" height="{2 * r}" fill="{colour}"/>'
    return f'<polygon points="{x},{y - r} {x - r},{y + r} {x + r},{y + r}" fill="{colour}"/>'


def _document(body: str) -> str:
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        f'width="{CANVAS}" height="{CANVAS}" viewBox="0 0 {CANVAS} {CANVAS}">{body}</svg>'
    )


def generate_svg(tier: str, rng: random.Random) -> str:
    """One SVG program of ``tier`` A, B or C."""
    if tier == "A":
        return _document(
            _shape(rng, rng.randint(80, 176), rng.randint(80, 176), rng.randint(30, 70), rng.choice(PALETTE))
        )
    if tier == "B":
        cells = rng.sample([(x, y) for x in (48, 128, 208) for y in (48, 128, 208)], rng.randint(2, 4))
        return _document("".join(_shape(rng, x, y, 32, rng.choice(PALETTE)) for x, y in cells))
    if tier == "C":
        colours = rng.sample(PALETTE, 3)
        defs = f'<defs><g id="motif">{_shape(rng, 0, 0, 40, colours[0])}</g></defs>'
        uses = "".join(
            f'<use xlink:href="#motif" x="{x}" y="{y}"/>' for x, y in [(96, 96), (140, 120)][: rng.randint(1, 2)]
        )
        # Opaque: the motif instances cover part of the shape below them (layering matters).
        overlap = _shape(rng, 128, 140, 50, colours[1])
        return _document(defs + overlap + uses)
    raise ValueError(f"tier must be one of {TIERS}, got {tier!r}")


def drawn_shapes(svg: str) -> list[tuple[str, str]]:
    """(shape name, palette colour) of every shape a program of :func:`generate_svg` draws, in paint order
    (a ``<use>`` draws its motif). Only for our own generated programs (trusted input)."""
    root = ET.fromstring(svg)
    motifs = {group.get("id"): group[0] for group in root.iter(f"{SVG_NS}g")}
    shapes = []
    for element in root:
        tag = element.tag.removeprefix(SVG_NS)
        if tag == "use":
            element = motifs[element.get(XLINK_HREF, "").lstrip("#")]
            tag = element.tag.removeprefix(SVG_NS)
        if tag in SHAPE_NAMES:
            shapes.append((SHAPE_NAMES[tag], element.get("fill", "")))
    return shapes


def describe_svg(svg: str) -> str:
    """A ``<RENDER_SUMMARY>``-style description of a generated program: how many shapes, and each one's
    type and palette colour in paint order."""
    shapes = drawn_shapes(svg)
    listed = ", ".join(f"a {COLOUR_NAMES[colour]} ({colour}) {name}" for name, colour in shapes)
    return f"{len(shapes)} filled shape{'s' if len(shapes) != 1 else ''} on a white canvas, in paint order: {listed}."
