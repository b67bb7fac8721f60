"""Per-sample GapEval scores (the tasks' ``process_results``): one judge verdict per answer, ``correct`` in
{0, 1}.

Understanding answers go to ``gapeval.und.<category>`` (question, answer, reference text, the question's
images and the reference image; two-turn "Are you sure? Think carefully." by default, as the official
pipeline). Generated images go to ``gapeval.gen.<category>`` (question, reference text, the generated image,
the reference image and, for editing items, the original image) whose anti-plagiarism rule rejects a copy of
the reference image. Every row also carries ``question_id`` and ``repeat`` so the two directions pair.
``judge`` (``metadata.judge`` of the task) overrides judge settings, e.g. ``{two_turn: false}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval_unify.benchmarks.gapeval.inputs import input_images
from lmms_eval_unify.benchmarks.gapeval.spec import METRICS, judge_template, task_name
from lmms_eval_unify.generation.visuals import to_pil_images
from lmms_eval_unify.judges import judge as ask_judge
from lmms_eval_unify.output.record import OutputFailure, ParsedOutput
from lmms_eval_unify.scoring.scorer import Score, scorer


def question_key(doc: Mapping) -> dict[str, Any]:
    """``question_id`` and ``repeat`` (0 unless the task expanded its rows for repeats)."""
    return {"question_id": str(doc["id"]), "repeat": int(doc.get("repeat") or 0)}


def reference_image(doc: Mapping) -> list:
    return to_pil_images(doc["ref_image"]) if doc.get("ref_image") is not None else []


def _judged(doc: Mapping, direction: str, variables: dict, images: dict, judge: Mapping | None) -> Score:
    result = ask_judge(
        judge_template(doc["category"], direction),
        variables=variables,
        images={slot: value for slot, value in images.items() if value},
        config=judge,
        task=task_name(doc["category"], direction),
    )
    return Score.judged(result, "score", "correct")


@scorer(*METRICS, doc_fields=question_key)
def score_und(doc: Mapping, parsed: ParsedOutput, *, judge: Mapping | None = None) -> Score:
    """Judge a text answer; an empty answer is wrong without a judge call."""
    answer = parsed.text.strip()
    if not answer:
        return Score({"correct": 0.0}, details={"empty": True})
    variables = {"question": doc["und_prompt"], "answer": answer, "reference": doc["reference"]}
    images = {"image": input_images(doc), "reference_image": reference_image(doc)}
    return _judged(doc, "und", variables, images, judge)


@scorer(*METRICS, doc_fields=question_key)
def score_gen(doc: Mapping, parsed: ParsedOutput, *, judge: Mapping | None = None) -> Score | OutputFailure:
    """Judge the one generated image; a missing, corrupt or extra/absent image scores 0 with its reason."""
    loaded = parsed.load_images(expected=1)
    if isinstance(loaded, OutputFailure):
        return loaded
    images = {
        "original_image": input_images(doc) if doc.get("gen_uses_image") else [],
        "image": loaded[0],
        "reference_image": reference_image(doc),
    }
    variables = {"question": doc["gen_prompt"], "reference": doc["reference"]}
    return _judged(doc, "gen", variables, images, judge)
