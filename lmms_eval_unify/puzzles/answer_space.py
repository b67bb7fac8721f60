"""Answer spaces of the move puzzles for the baseline instruments."""

from __future__ import annotations

import json
import random
from collections.abc import Hashable
from dataclasses import dataclass

from PIL import Image

from lmms_eval_unify.generation.protocols import Phase
from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.domain import PuzzleDomain, moves_from_field, random_walk, read_state, simulate


@dataclass(frozen=True)
class MovePlan:
    """Moves to state one per step, the states to render after them, and the final answer."""

    domain: PuzzleDomain
    moves: tuple[str, ...]
    states: tuple[Hashable, ...]

    def text(self, phase: Phase) -> str:
        if phase.name == "plan":
            return f"Next, move one step {self.moves[phase.step - 1]}." if phase.step <= len(self.moves) else "Done."
        return f"<ANSWER_JSON>{json.dumps(list(self.moves))}</ANSWER_JSON>"

    def image(self, phase: Phase) -> Image.Image:
        return self.domain.render(self.states[phase.step - 1])


@dataclass(frozen=True)
class MovePuzzleSpace:
    """Oracle: the ground-truth moves. Random: a length uniform over the domain's range, legal moves uniform."""

    domain: PuzzleDomain

    def plan(self, doc: dict, inputs: list[Image.Image], rng: random.Random, oracle: bool) -> MovePlan:
        start = read_state(self.domain, inputs[0])
        if start is None:
            raise ValueError(f"the {self.domain.name} board of the input image could not be read")
        moves = moves_from_field(doc[self.domain.answer_field]) if oracle else random_walk(self.domain, start, rng)
        return MovePlan(self.domain, tuple(moves), tuple(simulate(self.domain, start, moves)))


MAZE = MovePuzzleSpace(DOMAINS["maze"])
SLIDING = MovePuzzleSpace(DOMAINS["sliding"])
