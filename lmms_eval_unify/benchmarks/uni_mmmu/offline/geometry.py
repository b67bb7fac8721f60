"""Offline generator of Uni-MMMU geometry items in the official data's fields (images as PIL): the data that
``lmms-eval-unify data generate uni_mmmu`` writes; the scorer and answer space stay in ``uni_mmmu.geometry``."""

from __future__ import annotations

import math
import random
from typing import Any

from PIL import Image, ImageDraw, ImageFont

SIZE = 320
LINE, AUX_LINE = (0, 0, 0), (0, 90, 200)
RIGHT_SIDES = ((3, 4), (6, 8), (5, 12), (8, 15), (9, 12))
ISOSCELES = ((5, 3), (13, 5), (10, 6), (17, 8))  # (leg, half base) with an integer altitude


def number(value: float) -> str:
    """``2.4``, ``12`` (no trailing ``.0``)."""
    return f"{value:.4g}" if value != int(value) else str(int(value))


def _layout(points: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
    """Math coordinates scaled into the canvas (y up -> y down) with a margin for the labels."""
    xs, ys = [p[0] for p in points.values()], [p[1] for p in points.values()]
    scale = (SIZE - 100) / max(max(xs) - min(xs), max(ys) - min(ys))
    return {k: (50 + (x - min(xs)) * scale, SIZE - 50 - (y - min(ys)) * scale) for k, (x, y) in points.items()}


def _draw(points: dict[str, tuple[float, float]], triangle: str, aux: tuple[str, str] | None) -> Image.Image:
    image = Image.new("RGB", (SIZE, SIZE), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=18)
    corners = [points[name] for name in triangle]
    draw.polygon(corners, outline=LINE, width=3)
    shown = list(triangle) + ([aux[1]] if aux else [])
    cx, cy = sum(p[0] for p in corners) / 3, sum(p[1] for p in corners) / 3
    if aux:
        draw.line([points[aux[0]], points[aux[1]]], fill=AUX_LINE, width=3)
    for name in shown:
        x, y = points[name]
        dx, dy = x - cx, y - cy
        norm = math.hypot(dx, dy) or 1.0
        draw.text((x + 18 * dx / norm - 5, y + 18 * dy / norm - 9), name, fill=LINE, font=font)
    return image


def _problem(kind: str, rng: random.Random) -> dict[str, Any]:
    """Problem text, auxiliary instructions, solution, answer and the figure points of one ``kind``."""
    if kind == "isosceles_altitude":
        leg, half = rng.choice(ISOSCELES)
        height = math.sqrt(leg**2 - half**2)
        points = {"A": (0.0, height), "B": (-half, 0.0), "C": (half, 0.0), "D": (0.0, 0.0)}
        return {
            "problem": f"In triangle ABC, AB = AC = {leg} and BC = {2 * half}. Find the distance from A to BC.",
            "aux": "Draw the altitude AD from A to BC, with D on BC.",
            "solution": f"Since AB = AC, the altitude AD bisects BC, so BD = {half}. In right triangle ABD, "
            f"AD = √(AB² − BD²) = √({leg}² − {half}²) = {number(height)}.",
            "answer": height,
            "wrong": (leg, 2 * half, half, (leg + half) / 2),
            "points": points,
            "aux_line": ("A", "D"),
        }
    a, b = rng.choice(RIGHT_SIDES)
    c = math.hypot(a, b)
    points = {"C": (0.0, 0.0), "A": (0.0, float(a)), "B": (float(b), 0.0)}
    if kind == "right_median":
        points["M"] = (b / 2, a / 2)
        return {
            "problem": f"In triangle ABC, ∠C = 90°, AC = {a} and BC = {b}. Find the length of the median from C to AB.",
            "aux": "Draw segment CM, where M is the midpoint of AB.",
            "solution": f"AB = √({a}² + {b}²) = {number(c)}. The median to the hypotenuse of a right triangle is "
            f"half the hypotenuse, so CM = AB/2 = {number(c / 2)}.",
            "answer": c / 2,
            "wrong": (a * b / c, c, (a + b) / 2, a),
            "points": points,
            "aux_line": ("C", "M"),
        }
    t = a**2 / c**2  # foot of the altitude from C: D = A + t (B - A)
    points["D"] = (t * b, a * (1 - t))
    return {
        "problem": f"In triangle ABC, ∠C = 90°, AC = {a} and BC = {b}. Find the length of the altitude from C to AB.",
        "aux": "Draw the altitude CD from C to AB, with D on AB.",
        "solution": f"AB = √({a}² + {b}²) = {number(c)}. Twice the area of ABC is AC·BC = AB·CD, so "
        f"CD = {a}·{b}/{number(c)} = {number(a * b / c)}.",
        "answer": a * b / c,
        "wrong": (c / 2, c, (a + b) / 2, a),
        "points": points,
        "aux_line": ("C", "D"),
    }


KINDS = ("right_altitude", "right_median", "isosceles_altitude")


def make_geometry_item(kind: str, rng: random.Random) -> dict[str, Any]:
    """One calculation item in the official ``filtered.json`` fields, images as PIL."""
    spec = _problem(kind, rng)
    values = [spec["answer"]]
    for wrong in spec["wrong"]:
        if all(abs(wrong - v) > 1e-9 for v in values):
            values.append(wrong)
    values = values[:4]
    rng.shuffle(values)
    points = _layout(spec["points"])
    triangle = "ABC"
    return {
        "type": "calculation",
        "problem_text_en": spec["problem"],
        "choices_en": [f"{'ABCD'[i]}. {number(v)}" for i, v in enumerate(values)],
        "auxiliary_text_en": spec["aux"],
        "solution_en": f"{spec['solution']} **Final answer: {number(spec['answer'])}**",
        "original_image": _draw(points, triangle, None),
        "auxiliary_image": _draw(points, triangle, spec["aux_line"]),
    }


def generate_geometry_items(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` items (deterministic in ``seed``), the three kinds in turn."""
    rng = random.Random(f"geometry/{seed}")
    return [{"id": f"geometry_{seed}_{i:05d}", **make_geometry_item(KINDS[i % len(KINDS)], rng)} for i in range(n)]
