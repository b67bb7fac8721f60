"""A stand-in for the GPT-4o judges of UniG2U on fixture data, as an answer policy of the local test server
(``lmms_eval_unify.testing.openai_server``).

Answer judges: it reads the ground truth and the candidate from the rendered ``unig2u.geometry3k`` /
``unig2u.auxsolidmath`` / ``unig2u.answer_match`` prompt and replies the JSON verdict a correct judge
gives when answers are exact: the candidate's final answer (the last number of a solution; the whole
extracted answer for PhyX/BabyVision) equals the ground truth. Fixture answers are integers or option
letters, so this agrees with the ground truth there.

RA / AL diagnostics (``unig2u.ra``, ``unig2u.al``, Appendix I.7-I.8): it recognises the prompt by the
template's own text (read from ``judge_prompts.yaml``, its variables as the fields it reads back) and scores
1-5 what it can check on generated items, whose auxiliary image is drawn over the question's image:

- RA: how much of the question's scene the generated visualisation keeps, ``1 + round(4 x share of the first
  (original) image's pixels the last (generated) image reproduces)``; 3 when no original image was sent;
- AL: 5 when the final answer is an answer to the question (one of the option letters the question lists, or
  any answer to an open question), else 1.

It is no substitute for a real judge on real data.
"""

from __future__ import annotations

import io
import json
import re
from functools import cache

import numpy as np
from PIL import Image

from lmms_eval_unify.judges.templates import get_template
from lmms_eval_unify.scoring.answers import extract_choice, split_option
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


PIXEL_DELTA = 48
"""Per-channel difference under which a generated pixel reproduces the original's (resampling stays below it)."""
NO_ORIGINAL_SCORE = 3
"""RA when the request carries no original image: the scene cannot be checked, the scale's middle."""


@cache
def rendered_text(template_id: str) -> re.Pattern[str]:
    """The first text segment of a judge template as it renders, its variables as named groups."""
    template = get_template(template_id)
    text = next(segment.text for segment in template.segments if segment.text is not None)
    names = (*template.variables, *template.optional_variables)
    parts, end, seen = [], 0, set()
    for match in re.finditer(r"\{(" + "|".join(map(re.escape, names)) + r")\}", text):
        name = match[1]
        parts += [re.escape(text[end : match.start()]), f"(?P={name})" if name in seen else f"(?P<{name}>.*?)"]
        seen.add(name)
        end = match.end()
    return re.compile("".join([*parts, re.escape(text[end:])]), re.DOTALL)


def kept_share(original: bytes, generated: bytes) -> float:
    """The share of the original image's pixels that the generated image (resized to it) reproduces."""
    with Image.open(io.BytesIO(original)) as first, Image.open(io.BytesIO(generated)) as last:
        a = np.asarray(first.convert("RGB"), dtype=np.int16)
        b = np.asarray(last.convert("RGB").resize(first.size), dtype=np.int16)
    return float((np.abs(a - b).max(axis=-1) <= PIXEL_DELTA).mean())


def ra_score(images: list[bytes]) -> int:
    """RA on a generated item: the scene kept (:func:`kept_share` of the first and last image, 1-5)."""
    return 1 + round(4 * kept_share(images[0], images[-1])) if len(images) > 1 else NO_ORIGINAL_SCORE


def al_score(question: str, answer: str) -> int:
    """AL on a generated item: 5 when ``answer`` answers ``question`` (commits to one of the option letters it
    lists; any non-empty answer when it lists none), else 1."""
    labels = [label for line in question.splitlines() if (label := split_option(line.strip())[0])]
    valid = extract_choice(answer, labels) is not None if labels else bool(answer.strip())
    return 5 if valid else 1


def diagnostic_verdict(request: ChatRequest) -> str | None:
    """The RA or AL reply to a rendered ``unig2u.ra`` / ``unig2u.al`` prompt; None for any other prompt."""
    text = request.text
    if rendered_text("unig2u.ra").search(text):
        return json.dumps({"reasoning_visual_score": ra_score(request.images), "reasoning": "scene kept"})
    if al := rendered_text("unig2u.al").search(text):
        score = al_score(al["question"], al["answer"])
        return json.dumps({"answer_visual_score": score, "reasoning": "answered" if score > 1 else "no answer"})
    return None


def verdict(request: ChatRequest) -> str:
    """The judge reply for one request (``judge_invalid`` material when the prompt is not one of ours)."""
    if (diagnostic := diagnostic_verdict(request)) is not None:
        return diagnostic
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
