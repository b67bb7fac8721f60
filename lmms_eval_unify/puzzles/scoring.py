"""Scoring of move-sequence puzzles (maze, sliding): text and image, step and sample accuracy."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from PIL import Image

from lmms_eval_unify.generation.visuals import to_pil_images
from lmms_eval_unify.output.record import OutputFailure, parse_output
from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.domain import Grid, PuzzleDomain, moves_from_field, read_state, simulate

ANSWER_JSON = re.compile(r"<ANSWER_JSON>\s*(\[.*?\])\s*</ANSWER_JSON>", re.IGNORECASE | re.DOTALL)
METRICS = ("text_sample_acc", "text_step_acc", "img_sample_acc", "img_step_acc")


def moves_from_answer(text: str) -> list[str] | None:
    """The moves in the last ``<ANSWER_JSON>[...]</ANSWER_JSON>`` block, lower-cased; ``None`` if absent."""
    matches = ANSWER_JSON.findall(text or "")
    if not matches:
        return None
    try:
        moves = json.loads(matches[-1])
    except json.JSONDecodeError:
        return None
    if not isinstance(moves, list):
        return None
    return [str(move).strip().lower() for move in moves]


def sequence_accuracy(predicted: Sequence[Any], truth: Sequence[Any]) -> tuple[float, float]:
    """(sample accuracy, step accuracy): exact match, and position-wise matches over the truth's length."""
    if not truth:
        exact = float(len(predicted) == 0)
        return exact, exact
    hits = sum(p == t for p, t in zip(predicted, truth, strict=False))
    return float(len(predicted) == len(truth) and hits == len(truth)), hits / len(truth)


def truth_grids(domain: PuzzleDomain, initial_image: Image.Image, truth: Sequence[str]) -> list[Grid] | None:
    """Reference boards: the parsed initial board replayed with the true moves (the official procedure)."""
    state = read_state(domain, initial_image)
    if state is None:
        return None
    return [domain.grid_of(s) for s in simulate(domain, state, truth)]


def score_move_sequence(domain: PuzzleDomain, doc: dict, raw_output: str, initial_image: Image.Image) -> dict:
    """Per-sample metrics of one maze/sliding output; never raises. Unsupported outputs give ``None``s."""
    truth = moves_from_field(doc[domain.answer_field])
    parsed = parse_output(raw_output)
    result: dict[str, Any] = {m: 0.0 for m in METRICS} | {"invalid_outputs": "", "details": {}}
    if parsed.unsupported:
        return {m: None for m in METRICS} | {
            "invalid_outputs": "",
            "details": {"unsupported": parsed.record.unsupported},
        }
    if parsed.failure:
        result["invalid_outputs"] = parsed.failure.reason
        result["details"] = {"failure": parsed.failure.detail}
        return result
    predicted = moves_from_answer(parsed.text)
    details: dict[str, Any] = {"predicted_moves": predicted, "truth_moves": truth}
    if predicted is not None:
        result["text_sample_acc"], result["text_step_acc"] = sequence_accuracy(predicted, truth)
    else:
        details["text_failure"] = "no <ANSWER_JSON> list in the final text"
    images = parsed.load_images()
    references = truth_grids(domain, initial_image, truth)
    if isinstance(images, OutputFailure):
        result["invalid_outputs"] = images.reason
        details["image_failure"] = images.detail
    elif references is None:
        details["image_failure"] = "the task's initial image could not be parsed"
    else:
        grids = [domain.parse_grid(image) for image in images]
        result["img_sample_acc"], result["img_step_acc"] = sequence_accuracy(grids, references)
        details["unparseable_images"] = sum(grid is None for grid in grids)
        details["n_images"] = len(grids)
    result["details"] = details
    return result


def score_puzzle_sample(domain: str, doc: dict, raw_output: Any) -> dict:
    """:func:`score_move_sequence` of the ``maze`` or ``sliding`` puzzle on a document with the released data's
    fields (``initial_image`` and the domain's answer field); never raises on model output."""
    return score_move_sequence(DOMAINS[domain], doc, raw_output, to_pil_images(doc["initial_image"])[0])
