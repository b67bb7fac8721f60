"""How the baseline instruments (``unify_oracle``, ``unify_random``) answer a task.

A task names its answer space in ``generation_kwargs`` as ``answer_space: "package.module:ATTRIBUTE"``; the
attribute is an :class:`AnswerSpace`. For each request the instrument asks it for a plan (from the document,
the input images, a per-sample random generator and whether to play oracle or random), then serves every
protocol phase from that plan. Real adapters never see any of this.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Protocol

from PIL import Image

from lmms_eval_unify.generation.protocols import Phase


class InstrumentPlan(Protocol):
    """What an instrument says and draws in each protocol phase of one request.

    Plans of video tasks also provide ``video(phase) -> list[PIL.Image]``.
    """

    def text(self, phase: Phase) -> str: ...

    def image(self, phase: Phase) -> Image.Image: ...


class AnswerSpace(Protocol):
    """Builds oracle and random plans for the documents of one kind of task."""

    def plan(self, doc: dict, inputs: list[Image.Image], rng: random.Random, oracle: bool) -> InstrumentPlan: ...


@cache
def load_answer_space(reference: str) -> AnswerSpace:
    """Resolve ``"package.module:ATTRIBUTE"``; a clear error when the task names none or a wrong one."""
    module_name, _, attribute = str(reference).partition(":")
    if not module_name or not attribute:
        raise ValueError(f"answer_space must look like 'package.module:ATTRIBUTE', got {reference!r}")
    return getattr(importlib.import_module(module_name), attribute)


@dataclass(frozen=True)
class FixedPlan:
    """The same text (and image) in every phase: single-shot answers."""

    answer: str = ""
    answer_image: Image.Image | None = None

    def text(self, phase: Phase) -> str:
        return self.answer

    def image(self, phase: Phase) -> Image.Image:
        if self.answer_image is None:
            raise NotImplementedError("this answer space has no image answer")
        return self.answer_image


@dataclass(frozen=True)
class ChoiceSpace:
    """A text answer from a fixed set: the oracle states the true option, random a uniform one.

    ``options(doc)`` lists what may be answered (labels such as "A".."D", or words); ``truth(doc)`` is the
    correct one; ``answer_format`` wraps it the way the task's prompt asks (e.g. ``"Answer: {}"``).
    """

    options: Callable[[dict], Sequence[str]]
    truth: Callable[[dict], str]
    answer_format: str = "{}"

    def choose(self, doc: dict, rng: random.Random, oracle: bool) -> str:
        return str(self.truth(doc)) if oracle else str(rng.choice(list(self.options(doc))))

    def plan(self, doc: dict, inputs: list[Image.Image], rng: random.Random, oracle: bool) -> FixedPlan:
        return FixedPlan(self.answer_format.format(self.choose(doc, rng, oracle)))


@dataclass(frozen=True)
class CandidateImageSpace:
    """An image answer: the oracle draws the reference, random a uniformly chosen candidate image.

    ``text`` (a :class:`ChoiceSpace`) adds the text half of answer+image tasks.
    """

    candidates: Callable[[dict], Sequence[Image.Image]]
    truth_index: Callable[[dict], int]
    text: ChoiceSpace | None = None

    def plan(self, doc: dict, inputs: list[Image.Image], rng: random.Random, oracle: bool) -> FixedPlan:
        candidates = list(self.candidates(doc))
        index = self.truth_index(doc) if oracle else rng.randrange(len(candidates))
        answer = self.text.choose(doc, rng, oracle) if self.text else ""
        return FixedPlan(self.text.answer_format.format(answer) if self.text else "", candidates[index])
