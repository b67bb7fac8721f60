"""Instruments that bound every score: a seeded random player and a ground-truth oracle.

They run through the same protocols as real models. What they say and draw comes from the task's answer
space (see ``lmms_eval_unify.generation.answer_spaces``), which reads the request's document — something real adapters
never do.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

from PIL import Image

from lmms_eval_unify.adapter import (
    ALL_PRIMITIVES,
    InstrumentPlan,
    RequestInfo,
    UnifiedModel,
    load_answer_space,
)


class Instrument(UnifiedModel):
    """Serves every protocol phase from a per-request plan of the task's answer space."""

    capabilities = ALL_PRIMITIVES
    oracle: ClassVar[bool]

    def __init__(self, **model_args: Any) -> None:
        super().__init__(**model_args)
        self._plan_key: tuple | None = None
        self._current_plan: InstrumentPlan | None = None

    def _request(self) -> RequestInfo:
        """The request being answered: the instruments answer a task's item, never a bare call."""
        if self.request is None:
            raise NotImplementedError(f"{self.model_id} answers only a task's requests (none is being answered)")
        return self.request

    def _plan(self, images: list[Image.Image]) -> InstrumentPlan:
        request = self._request()
        key = (request.task, request.split, request.doc_id)
        if key == self._plan_key and self._current_plan is not None:
            return self._current_plan
        reference = request.options.get("answer_space")
        if not reference:
            raise NotImplementedError(f"task {request.task!r} declares no answer_space for {self.model_id}")
        doc = self.task_dict[request.task][request.split][request.doc_id]
        rng = random.Random(self.sample_seed(request.task, request.doc_id))
        self._current_plan = load_answer_space(reference).plan(doc, images, rng, self.oracle)
        self._plan_key = key
        return self._current_plan

    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        return self._plan(images).text(decoding["phase"])

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        return self._plan(images).image(decoding["phase"])

    def generate_video(self, prompt: str, images: list[Image.Image], **decoding: Any) -> list[Image.Image]:
        plan = self._plan(images)
        if not hasattr(plan, "video"):
            raise NotImplementedError(f"the answer space of {self._request().task!r} has no video answers")
        return plan.video(decoding["phase"])


class UnifyOracle(Instrument):
    """Upper bound: answers from the document's ground truth; must score 100 on programmatic tasks."""

    model_id = "unify_oracle"
    oracle = True


class UnifyRandom(Instrument):
    """Random-Select baseline: uniform over the task's options or legal moves, seeded per sample."""

    model_id = "unify_random"
    oracle = False
