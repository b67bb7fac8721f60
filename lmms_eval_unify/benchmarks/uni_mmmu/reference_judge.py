"""A stand-in for the Uni-MMMU judges on generated fixture data, as an answer policy of the local test server
(``lmms_eval_unify.testing.openai_server``). It is NO substitute for a real judge: it only understands the
fixtures' exact constructions and answers the way a correct judge would on them.

It recognises which ``uni_mmmu.*`` template a request renders, reads the texts and images it carries and
replies the JSON verdict:

- geometry overlay: the pixels where the ground-truth overlay differs from the base figure (the auxiliary
  lines) must be reproduced in the generated image (>= 90 %), and the generated image must agree with the
  ground-truth overlay elsewhere (>= 99 % of all pixels);
- geometry text: the candidate's ``Final answer:`` (else its last number) equals the ground truth's;
- science text: the candidate contains the ground-truth description (whitespace-normalised) -> both
  ``reasoning_correct`` and ``result_correct``;
- science image: the ground truth's last sentence "Final state: a <colour> <thing> at the <top|middle|bottom>
  of the scene." must be visible: >= 1 % of the pixels near that colour, their centroid in that third;
- code text: the palette colours the summary names (hex codes) are exactly those present in the reference;
- code image: ``shape_color_accuracy`` = round(5 x Jaccard of the palette colours present),
  ``position_accuracy`` = round(5 x IoU of the drawn (non-white) pixels).

An unrecognised request gets a reply without JSON (the task records ``judge_invalid``).
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
from PIL import Image

from lmms_eval_unify.benchmarks.uni_mmmu.offline.science import COLOURS, POSITIONS
from lmms_eval_unify.benchmarks.uni_mmmu.svg import PALETTE
from lmms_eval_unify.testing.openai_server import ChatRequest

LINE_DELTA = 48
"""Per-channel difference that counts as a different pixel (anti-aliasing stays below it)."""
FINAL_STATE = re.compile(r"Final state: an? (?P<colour>\w+) (?P<thing>.+?) at the (?P<position>\w+) of the scene")
FINAL_ANSWER = re.compile(r"Final answer:\s*\**\s*([^*\n]+)", re.IGNORECASE)
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
HEX = re.compile(r"#[0-9A-Fa-f]{6}")
UNREADABLE = "I cannot grade this."


def _array(data: bytes, size: tuple[int, int] | None = None) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        rgb = image.convert("RGB")
        return np.asarray(rgb.resize(size) if size and rgb.size != size else rgb).astype(np.int16)


def _section(text: str, heading: str, end: str | None = None) -> str:
    """The text after ``heading`` up to ``end`` (the end of the text when ``end`` is None)."""
    start = text.index(heading) + len(heading)
    return text[start : text.index(end, start) if end else len(text)].strip()


def overlay_ok(base: bytes, reference: bytes, generated: bytes) -> int:
    a = _array(base)
    b = _array(reference, (a.shape[1], a.shape[0]))
    c = _array(generated, (a.shape[1], a.shape[0]))
    lines = np.abs(b - a).max(axis=-1) > LINE_DELTA
    same = np.abs(c - b).max(axis=-1) <= LINE_DELTA
    return int(lines.any() and same[lines].mean() >= 0.9 and same.mean() >= 0.99)


def final_value(text: str) -> str:
    """The ``Final answer:`` value (else the last number) of a solution, normalised."""
    answers = FINAL_ANSWER.findall(text)
    value = answers[-1] if answers else (NUMBER.findall(text) or [""])[-1]
    numbers = NUMBER.findall(value)
    return numbers[0] if numbers else value.strip().strip(".").lower()


def same_value(truth: str, candidate: str) -> bool:
    try:
        return abs(float(truth) - float(candidate)) < 1e-6
    except ValueError:
        return bool(truth) and truth == candidate


def _normalised(text: str) -> str:
    return " ".join(text.split()).lower()


def shows_final_state(reference: str, generated: bytes) -> int:
    match = FINAL_STATE.search(reference)
    if not match or match["colour"] not in COLOURS or match["position"] not in POSITIONS:
        raise ValueError("no machine-checkable final state")
    pixels = _array(generated)
    near = np.linalg.norm(pixels - np.array(COLOURS[match["colour"]]), axis=-1) < 60
    if near.mean() < 0.01:
        return 0
    third = min(int(3 * np.nonzero(near)[0].mean() / pixels.shape[0]), 2)
    return int(POSITIONS[third] == match["position"])


_CLASSES = np.array([[int(h[i : i + 2], 16) for i in (1, 3, 5)] for h in (*PALETTE, "#FFFFFF")])


def palette_classes(pixels: np.ndarray) -> np.ndarray:
    """Per pixel the index of the nearest palette colour (``len(PALETTE)`` = white)."""
    return np.linalg.norm(pixels[..., None, :] - _CLASSES, axis=-1).argmin(axis=-1)


def colours_present(classes: np.ndarray) -> set[str]:
    return {PALETTE[i] for i in range(len(PALETTE)) if (classes == i).mean() >= 0.005}


def code_image_scores(reference: bytes, generated: bytes) -> tuple[int, int]:
    ref_pixels = _array(reference)
    ref = palette_classes(ref_pixels)
    gen = palette_classes(_array(generated, (ref_pixels.shape[1], ref_pixels.shape[0])))
    want, got = colours_present(ref), colours_present(gen)
    jaccard = len(want & got) / len(want | got) if want | got else 1.0
    drawn_ref, drawn_gen = ref != len(PALETTE), gen != len(PALETTE)
    union = (drawn_ref | drawn_gen).sum()
    iou = (drawn_ref & drawn_gen).sum() / union if union else 1.0
    return round(5 * jaccard), round(5 * iou)


def verdict(request: ChatRequest) -> str:
    """The judge reply for one request (no JSON when the request is not one of the templates above)."""
    text, images = request.text, request.images
    try:
        if "Check if the candidate overlay draws the REQUIRED auxiliary lines" in text:
            ok = overlay_ok(*images[:3])
            return json.dumps({"overlay_ok": ok, "overlay_reason": "fixture overlay check"})
        if "Grade the candidate solution text for rigor and correctness" in text:
            truth = _section(text, "(reference, not necessarily the only path):", "\n\nCandidate solution text")
            candidate = _section(text, "Candidate solution text (to grade):", "\n\nRules:")
            ok = int(same_value(final_value(truth), final_value(candidate)))
            return json.dumps({"reasoning_rigorous": ok, "conclusion_correct": ok, "text_ok": ok})
        if "Decide two binary labels for the candidate explanation" in text:
            reference = _section(text, "Ground truth final state (text, reference):", "\nCandidate explanation")
            candidate = _section(text, "Candidate explanation (text to evaluate):", "\nReturn ONLY JSON.")
            ok = int(_normalised(reference) in _normalised(candidate))
            return json.dumps({"reasoning_correct": ok, "result_correct": ok})
        if "TARGET text (final state to achieve):" in text:
            ok = shows_final_state(_section(text, "TARGET text (final state to achieve):"), images[1])
            return json.dumps({"image_correct": ok})
        if "You are a strict semantic checker." in text:
            named = {h.upper() for h in HEX.findall(_section(text, "Candidate description:"))}
            ok = int(named == colours_present(palette_classes(_array(images[0]))))
            return json.dumps({"text_semantic_match": ok, "explanation": "fixture colour check"})
        if "You are a precise visual evaluator." in text:
            shape_colour, position = code_image_scores(images[0], images[1])
            return json.dumps({"shape_color_accuracy": shape_colour, "position_accuracy": position})
    except (ValueError, IndexError, OSError):
        return UNREADABLE
    return UNREADABLE
