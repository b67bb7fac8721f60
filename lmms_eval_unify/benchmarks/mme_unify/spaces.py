"""Answer spaces of the MME-Unify tasks for the baseline instruments (``unify_oracle``, ``unify_random``)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from PIL import Image

from lmms_eval_unify.benchmarks.mme_unify import vcot
from lmms_eval_unify.benchmarks.mme_unify.generation import released_video_frames
from lmms_eval_unify.benchmarks.mme_unify.scoring import board_states, option_labels, prompt_coordinates
from lmms_eval_unify.generation.answer_spaces import CandidateImageSpace, ChoiceSpace
from lmms_eval_unify.generation.protocols import Phase
from lmms_eval_unify.generation.visuals import to_pil_images
from lmms_eval_unify.scoring.answers import split_option


def _labels(doc: dict) -> list[str]:
    return option_labels(list(doc["choice"]))


def _answer(doc: dict) -> str:
    return str(doc["answer"]).strip()


def _candidates(doc: dict) -> list[Image.Image]:
    return to_pil_images(list(doc["candidates"]))


def _option_texts(doc: dict) -> list[str]:
    return [split_option(c)[1] for c in doc["choice"]]


MULTIPLE_CHOICE = ChoiceSpace(_labels, _answer, "Answer: {}")
"""SIPU, MITIU, VPU: the option letter."""

LETTER_AND_IMAGE = CandidateImageSpace(_candidates, lambda doc: 0, ChoiceSpace(_labels, _answer, "Answer: {}"))
"""CSQ, AL, SD: the option letter and an image among the reference and its negatives."""

IEE = CandidateImageSpace(
    _candidates,
    lambda doc: 0,
    ChoiceSpace(_option_texts, lambda doc: _option_texts(doc)[0], "Explanation: {}"),
)
"""IEE: an explanation (an option's text; the correct one is listed first) and an edited image."""


@dataclass(frozen=True)
class LakePlan:
    """One ``Action``/``Location`` text and one state image per step, then "Finish" at the last position."""

    texts: tuple[str, ...]
    images: tuple[Image.Image, ...]
    finish: str

    def text(self, phase: Phase) -> str:
        return self.texts[phase.step - 1] if phase.step <= len(self.texts) else self.finish

    def image(self, phase: Phase) -> Image.Image:
        return self.images[phase.step - 1]


def _positions(doc: dict) -> list[list[int]]:
    """The prompt's 0-indexed [x, y] after each move; an item without a readable start has none to plan on."""
    positions = prompt_coordinates(doc)
    known = [position for position in positions if position is not None]
    if len(known) < len(positions):
        raise ValueError("the item's start position is unreadable")
    return known


def _step_text(move: str, cell: vcot.Cell) -> str:
    return f"Action: {move}\nLocation: [{cell[1]}, {cell[0]}]"


@dataclass(frozen=True)
class LakeSpace:
    """Oracle: the reference moves, positions (0-indexed [x, y] after each move) and the map after each move
    (the last map the data hold when the release lacks the one after the final move).

    Random: 1..8 uniformly random moves that stay on the board (the instrument knows the grid size and the
    start cell, not the holes), each with its position and a uniformly chosen reference state image.
    """

    def plan(self, doc: dict, inputs: list[Image.Image], rng: random.Random, oracle: bool) -> LakePlan:
        references = tuple(to_pil_images(list(doc["step_images"])))
        moves = [a for a in doc["actions"] if a != "Finish"]
        if oracle:
            cells = [(y, x) for x, y in _positions(doc)[: len(moves)]]
            texts = tuple(_step_text(m, c) for m, c in zip(moves, cells, strict=True))
            after = board_states(doc)[1:]
            images = tuple(after[min(i, len(after) - 1)] for i in range(len(moves)))
            return LakePlan(texts, images, _step_text("Finish", cells[-1]))
        x, y = _positions(doc)[0]
        cell = (y - vcot.MOVES[moves[0]][0], x - vcot.MOVES[moves[0]][1])
        board = vcot.Lake(int(doc["grid_size"]), frozenset(), cell, cell)
        steps = []
        for _ in range(rng.randint(1, 8)):
            move = rng.choice([m for m in vcot.MOVES if board.free(vcot.step(cell, m))])
            cell = vcot.step(cell, move)
            steps.append(_step_text(move, cell))
        return LakePlan(tuple(steps), tuple(rng.choice(references) for _ in steps), _step_text("Finish", cell))


VCOT = LakeSpace()


def _noise(rng: random.Random, size: tuple[int, int] = (64, 64)) -> Image.Image:
    return Image.frombytes("RGB", size, rng.randbytes(size[0] * size[1] * 3))


@dataclass(frozen=True)
class ReferencePlan:
    """Draws one image or states one video: the given frames in every phase."""

    frames: tuple[Image.Image, ...]

    def text(self, phase: Phase) -> str:
        return ""

    def image(self, phase: Phase) -> Image.Image:
        return self.frames[0]

    def video(self, phase: Phase) -> list[Image.Image]:
        return list(self.frames)


@dataclass(frozen=True)
class ReferenceSpace:
    """Oracle: the reference image (``field``) or the reference video's 16 frames as the scorer samples them.
    Random: noise."""

    field: str
    is_video: bool = False

    def plan(self, doc: dict, inputs: list[Image.Image], rng: random.Random, oracle: bool) -> ReferencePlan:
        count = 16 if self.is_video else 1
        if not oracle:
            return ReferencePlan(tuple(_noise(rng) for _ in range(count)))
        if self.is_video:
            return ReferencePlan(tuple(released_video_frames(doc[self.field], count)) if doc[self.field] else ())
        return ReferencePlan(tuple(to_pil_images(doc[self.field])))


FIR = ReferenceSpace("image")
TIE = ReferenceSpace("edited_image")
TIG = ReferenceSpace("image")
VIDEO = ReferenceSpace("video", is_video=True)
