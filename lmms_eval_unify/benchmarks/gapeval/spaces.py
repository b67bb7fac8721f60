"""Answer spaces of the GapEval tasks for ``unify_oracle`` / ``unify_random``.

Offline items list candidate answers (``answer_pool``, the reference among them) with one fresh rendering
each (``pool_images``). The oracle answers the reference text, or draws the reference's fresh rendering (not
``ref_image`` itself, which GapEval's judge must reject as a copy); random picks a uniform candidate, so its
chance level is ``1 / len(answer_pool)`` per direction. The published data has no candidates: there the
oracle draws the reference image (a copy, which a faithful judge rejects) and random abstains (empty text,
blank canvas).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from PIL import Image

from lmms_eval_unify.benchmarks.gapeval import render
from lmms_eval_unify.generation.answer_spaces import FixedPlan
from lmms_eval_unify.generation.visuals import to_pil_images


def _blank() -> Image.Image:
    return Image.new("RGB", (render.SIZE, render.SIZE), render.BACKGROUND)


@dataclass(frozen=True)
class GapEvalSpace:
    """Text answers (``image_answer=False``, the ``_und`` tasks) or one image answer (the ``_gen`` tasks)."""

    image_answer: bool

    def plan(self, doc: dict, inputs: list[Image.Image], rng: random.Random, oracle: bool) -> FixedPlan:
        pool = list(doc.get("answer_pool") or [])
        if not self.image_answer:
            text = doc["reference"] if oracle else rng.choice(pool) if pool else ""
            return FixedPlan(text)
        drawings = to_pil_images(list(doc.get("pool_images") or []))
        if drawings:
            index = pool.index(doc["reference"]) if oracle else rng.randrange(len(drawings))
            return FixedPlan("", drawings[index])
        reference = to_pil_images(doc["ref_image"]) if oracle and doc.get("ref_image") is not None else []
        return FixedPlan("", reference[0] if reference else _blank())


UND = GapEvalSpace(image_answer=False)
GEN = GapEvalSpace(image_answer=True)
