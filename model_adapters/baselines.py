"""Instruments that bound every score: a seeded random player and a ground-truth oracle.

Both run through the same protocols as real models. They look up the task's answer space (the
``domain`` option of the task's ``generation_kwargs``) and the request's document, which real adapters
never do. Per step they state a move and render the resulting state with the data generator's renderer.
"""

from __future__ import annotations

import json
import random
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from PIL import Image

from lmms_eval_unify.model import UNDERSTAND_AND_GENERATE, UnifiedModel
from lmms_eval_unify.puzzles import DOMAINS, PuzzleDomain
from lmms_eval_unify.puzzles.domain import moves_from_field, read_state, simulate


@dataclass(frozen=True)
class MovePlan:
    """The moves a baseline will state and the states it will render, for one request."""

    domain: PuzzleDomain
    moves: tuple[str, ...]
    states: tuple[Hashable, ...]


class PuzzleInstrument(UnifiedModel):
    """Shared behaviour of the baselines: follow a move plan through the step protocol."""

    capabilities = UNDERSTAND_AND_GENERATE

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._plans: dict[Any, MovePlan] = {}

    def choose_moves(self, domain: PuzzleDomain, start: Hashable, doc: dict) -> list[str]:
        raise NotImplementedError

    def _plan(self, images: list[Image.Image]) -> MovePlan:
        request = self.request
        key = (request.task, request.split, request.doc_id)
        if key not in self._plans:
            domain_name = request.options.get("domain")
            if domain_name not in DOMAINS:
                raise NotImplementedError(f"{self.model_id} has no answer space for task {request.task!r}")
            domain = DOMAINS[domain_name]
            start = read_state(domain, images[0])
            if start is None:
                raise ValueError(f"{self.model_id} could not read the {domain.name} board of the input image")
            doc = self.task_dict[request.task][request.split][request.doc_id]
            moves = tuple(self.choose_moves(domain, start, doc))
            self._plans = {key: MovePlan(domain, moves, tuple(simulate(domain, start, moves)))}
        return self._plans[key]

    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        plan = self._plan(images)
        if self.phase.name == "plan":
            step = self.phase.step
            return f"Next, move one step {plan.moves[step - 1]}." if step <= len(plan.moves) else "Done."
        return f"<ANSWER_JSON>{json.dumps(list(plan.moves))}</ANSWER_JSON>"

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        plan = self._plan(images)
        return plan.domain.render(plan.states[self.phase.step - 1])


class UnifyOracle(PuzzleInstrument):
    """Upper bound: states the ground-truth moves and renders the true states. Must score 100."""

    model_id = "unify_oracle"

    def choose_moves(self, domain: PuzzleDomain, start: Hashable, doc: dict) -> list[str]:
        return moves_from_field(doc[domain.answer_field])


class UnifyRandom(PuzzleInstrument):
    """Random-Select baseline: a length uniform over the domain's range, each move uniform over legal ones."""

    model_id = "unify_random"

    def choose_moves(self, domain: PuzzleDomain, start: Hashable, doc: dict) -> list[str]:
        rng = random.Random(self.sample_seed(self.request.task, self.request.doc_id))
        moves, state = [], start
        for _ in range(rng.randint(*domain.length_range)):
            move = rng.choice(domain.legal_moves(state))
            moves.append(move)
            state = domain.apply(state, move)
        return moves
