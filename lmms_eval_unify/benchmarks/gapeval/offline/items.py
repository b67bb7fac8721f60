"""The GapEval item schema we read, and the offline items of all four categories.

**Schema** (one row per question, one parquet file per category; inferred from the official raw layout
``data_<id>/prompt.json`` + ``image/`` + ``ref/`` because the Hub card ``FrancisChen1/GapEval`` was not
available to us, so the published column names are unverified):

| column | meaning |
|---|---|
| ``id`` | question id (``data_<id>`` in the raw layout); both directions of a question share it |
| ``category`` | paper category (one of ``spec.CATEGORIES``: world knowledge, numerical perception, ...) |
| ``subcategory`` | the official ``subcategory`` (or category) string |
| ``und_prompt`` / ``gen_prompt`` | the understanding (text answer) and generation (image answer) prompts |
| ``reference`` | reference answer text (the official list form joined by newlines) |
| ``images`` | the question's input images (may be empty) |
| ``ref_image`` | reference answer image (may be null) |
| ``gen_uses_image`` | whether the image task edits the input images (official: every category but "Multi Hop") |

Offline items add two columns the published data lacks, read only by the baseline instruments:
``answer_pool`` (candidate answer texts, ``reference`` among them) and ``pool_images`` (one *fresh* rendering
of each candidate, never the ``ref_image`` pixels: GapEval's judge rejects copies of the reference image).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from lmms_eval_unify.benchmarks.gapeval import render
from lmms_eval_unify.benchmarks.gapeval.paper import CATEGORIES

POOL_SIZE = 4
"""Candidate answers per offline item (the truth and three distractors): random's chance level is 1/4."""

# country: (stripe colours, orientation, disc colour, capital) - colour sets pairwise distinct.
FLAGS: dict[str, tuple[tuple[str, ...], str, str | None, str]] = {
    "France": (("blue", "white", "red"), "vertical", None, "Paris"),
    "Italy": (("green", "white", "red"), "vertical", None, "Rome"),
    "Germany": (("black", "red", "yellow"), "horizontal", None, "Berlin"),
    "Ukraine": (("blue", "yellow"), "horizontal", None, "Kyiv"),
    "Japan": (("white",), "horizontal", "red", "Tokyo"),
    "Nigeria": (("green", "white", "green"), "vertical", None, "Abuja"),
    "Austria": (("red", "white", "red"), "horizontal", None, "Vienna"),
    "Colombia": (("yellow", "blue", "red"), "horizontal", None, "Bogota"),
    "Ireland": (("green", "white", "orange"), "vertical", None, "Dublin"),
    "Estonia": (("blue", "black", "white"), "horizontal", None, "Tallinn"),
}
# (colour, shape) object classes with their plural names; colours pairwise distinct.
CLASSES = (
    ("red", "circle"),
    ("blue", "square"),
    ("green", "triangle"),
    ("yellow", "circle"),
    ("purple", "square"),
    ("orange", "triangle"),
)
RECOLOURABLE = ("red", "blue", "green", "yellow", "purple", "orange")


def _plural(cls: tuple[str, str]) -> str:
    return f"{cls[0]} {cls[1]}s"


def _flag(country: str, rng: random.Random):
    stripes, orientation, disc, _ = FLAGS[country]
    return render.draw_flag(stripes, orientation, rng, disc)


def _pool(truth: Any, others: list[Any], rng: random.Random) -> list[Any]:
    pool = [truth, *others[: POOL_SIZE - 1]]
    rng.shuffle(pool)
    return pool


def world_knowledge(rng: random.Random) -> dict:
    """Flag recognition (text) and multi-hop flag drawing from the capital (pure text-to-image)."""
    country = rng.choice(sorted(FLAGS))
    pool = _pool(country, rng.sample([c for c in sorted(FLAGS) if c != country], POOL_SIZE - 1), rng)
    return {
        "subcategory": "flags",
        "und_prompt": "Which country's national flag is shown in the image? Answer with the country name only.",
        "gen_prompt": f"Generate an image of the national flag of the country whose capital is {FLAGS[country][3]}.",
        "reference": country,
        "images": [_flag(country, rng)],
        "ref_image": _flag(country, rng),
        "gen_uses_image": False,
        "answer_pool": pool,
        "pool_images": [_flag(c, rng) for c in pool],
    }


def numerical_perception(rng: random.Random) -> dict:
    """Count two object classes and swap their quantities (official counting items)."""
    first, second = rng.sample(CLASSES, 2)
    a, b = rng.sample(range(1, 6), 2)
    pairs = [(c, d) for c in range(1, 6) for d in range(1, 6) if (c, d) not in ((b, a), (a, b))]
    others = [(a, b), *rng.sample(pairs, POOL_SIZE - 2)]  # the unchanged input is the natural wrong answer
    pool = _pool((b, a), others, rng)

    def text(pair: tuple[int, int]) -> str:
        return f"{pair[0]} {_plural(first)} and {pair[1]} {_plural(second)}"

    def scene(pair: tuple[int, int]):
        return render.draw_counts({first: pair[0], second: pair[1]}, rng)

    return {
        "subcategory": "objects counting",
        "und_prompt": (
            f"The image shows {_plural(first)} and {_plural(second)}. Count them, then swap their quantities. "
            f"Answer in the form '<number> {_plural(first)} and <number> {_plural(second)}'."
        ),
        "gen_prompt": f"Edit the image so that the numbers of {_plural(first)} and {_plural(second)} are swapped.",
        "reference": text((b, a)),
        "images": [scene((a, b))],
        "ref_image": scene((b, a)),
        "gen_uses_image": True,
        "answer_pool": [text(p) for p in pool],
        "pool_images": [scene(p) for p in pool],
    }


def instruction_following(rng: random.Random) -> dict:
    """A recolouring rule applied to a scene (official rule-based editing items)."""
    source, target, other = rng.sample(RECOLOURABLE, 3)
    m, k = rng.randint(1, 5), rng.randint(1, 5)
    pairs = [(c, d) for c in range(1, 6) for d in range(1, 6) if (c, d) != (m, k)]
    pool = _pool((m, k), rng.sample(pairs, POOL_SIZE - 1), rng)
    rule = f"Recolour every {source} shape {target}."

    def objects(colour_counts: dict[str, int]) -> list[tuple[str, str]]:
        return [(colour, rng.choice(render.SHAPES)) for colour, n in colour_counts.items() for _ in range(n)]

    def text(pair: tuple[int, int]) -> str:
        return f"{pair[0]} {target} shapes and {pair[1]} {other} shapes"

    def scene(colour_counts: dict[str, int]):
        return render.draw_objects(objects(colour_counts), rng)

    return {
        "subcategory": "rule_based",
        "und_prompt": (
            f"Apply this rule to the image: {rule} Then describe the edited image, answering in the form "
            f"'<number> {target} shapes and <number> {other} shapes'."
        ),
        "gen_prompt": f"Edit the image by applying this rule: {rule}",
        "reference": text((m, k)),
        "images": [scene({source: m, other: k})],
        "ref_image": scene({target: m, other: k}),
        "gen_uses_image": True,
        "answer_pool": [text(p) for p in pool],
        "pool_images": [scene({target: p[0], other: p[1]}) for p in pool],
    }


def reasoning(rng: random.Random) -> dict:
    """Next state of an arithmetic sequence of panels (image state-transition reasoning)."""
    cls = rng.choice(CLASSES)
    start, step = rng.randint(1, 3), rng.randint(1, 2)
    truth = start + 3 * step
    pool = _pool(truth, rng.sample([n for n in range(1, 13) if n != truth], POOL_SIZE - 1), rng)

    def scene(n: int):
        return render.draw_counts({cls: n}, rng)

    return {
        "subcategory": "state transition",
        "und_prompt": (
            "The three panels (left to right) follow a pattern. How many shapes will the next panel contain? "
            "Answer with a number only."
        ),
        "gen_prompt": "Draw the next panel of the sequence.",
        "reference": str(truth),
        "images": [render.draw_panels([{cls: start + i * step} for i in range(3)], rng)],
        "ref_image": scene(truth),
        "gen_uses_image": True,
        "answer_pool": [str(n) for n in pool],
        "pool_images": [scene(n) for n in pool],
    }


MAKERS: dict[str, Callable[[random.Random], dict]] = {
    "world_knowledge": world_knowledge,
    "numerical_perception": numerical_perception,
    "instruction_following": instruction_following,
    "reasoning": reasoning,
}
assert tuple(MAKERS) == CATEGORIES


def make_items(category: str, n: int, seed: int) -> list[dict]:
    """``n`` offline items of one category in the schema above (ids ``<category>_<index>``)."""
    rng = random.Random(f"gapeval/{category}/{seed}")
    return [{"id": f"{category}_{i:04d}", "category": category, **MAKERS[category](rng)} for i in range(n)]
