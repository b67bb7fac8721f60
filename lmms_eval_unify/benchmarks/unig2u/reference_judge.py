"""A stand-in for the GPT-4o answer judge on fixture data, as an answer policy of the local test server
(``lmms_eval_unify.testing.openai_server``).

It reads the ground truth and the candidate from the rendered ``unig2u.geometry3k`` /
``unig2u.auxsolidmath`` / ``unig2u.answer_match`` prompt and replies the JSON verdict a correct judge
gives when answers are exact: the candidate's final answer (the last number of a solution; the whole
extracted answer for PhyX/BabyVision) equals the ground truth. Fixture answers are integers or option
letters, so this agrees with the ground truth there; it is no substitute for a real judge on real data.
"""

from __future__ import annotations

import json
import re

from lmms_eval_unify.testing.openai_server import ChatRequest

_SECTIONS = re.compile(
    r"Ground-truth answer:\n(?P<truth>.*?)\n\n(?P<kind>Candidate solution|Model answer):\n(?P<candidate>.*?)"
    r"\n\n(?:Is the candidate|Grade the candidate|Reply with)",
    re.DOTALL,
)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _final(text: str, solution: bool) -> str:
    """The last number of a solution text; otherwise the text itself, normalised."""
    numbers = _NUMBER.findall(text) if solution else []
    return numbers[-1] if numbers else text.strip().strip("().").lower()


def same_answer(truth: str, candidate: str) -> bool:
    try:
        return abs(float(truth) - float(candidate)) < 1e-9
    except ValueError:
        return truth.strip().lower() == candidate.strip().lower()


def verdict(request: ChatRequest) -> str:
    """The judge reply for one request (``judge_invalid`` material when the prompt is not one of ours)."""
    text = request.text
    match = _SECTIONS.search(text)
    if not match:
        return "I cannot grade this."
    solution = match["kind"] == "Candidate solution"
    ok = int(same_answer(_final(match["truth"], solution), _final(match["candidate"], solution)))
    if "text_ok" in text:
        return json.dumps({"reasoning_rigorous": ok, "conclusion_correct": ok, "text_ok": ok, "reason": "fixture"})
    if "answer_correct" in text:
        return json.dumps({"answer_correct": ok, "reason": "fixture"})
    return json.dumps({"correct": bool(ok)})
