"""How the baseline instruments (``unify_oracle``, ``unify_random``) answer a task.

A task names its answer space in ``generation_kwargs`` as ``answer_space: "package.module:ATTRIBUTE"``; the
attribute is an :class:`AnswerSpace`. For each request the instrument asks it for a plan (from the document,
the input images, a per-sample random generator and whether to play oracle or random), then serves every
protocol phase from that plan. Real adapters never see any of this.
"""

from __future__ import annotations

import importlib
import random
from functools import cache
from typing import Protocol

from PIL import Image

from lmms_eval_unify.protocols import Phase


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
