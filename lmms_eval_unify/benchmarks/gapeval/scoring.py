"""``process_results`` of the GapEval tasks: one judge verdict per answer, ``correct`` in {0, 1}.

Understanding answers go to ``gapeval.und.<category>`` (question, answer, reference text, the question's
images and the reference image; two-turn "Are you sure? Think carefully." by default, as the official
pipeline). Generated images go to ``gapeval.gen.<category>`` (question, reference text, the generated image,
the reference image and, for editing items, the original image) whose anti-plagiarism rule rejects a copy of
the reference image. Every row also carries ``question_id`` and ``repeat`` so the two directions pair.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval_unify.judges import JudgeResult, judge
from lmms_eval_unify.model import to_pil_images
from lmms_eval_unify.record import ParsedOutput, parse_output

OFFICIAL_JUDGE = "openai/gpt-5-mini"
"""The paper's judge (Sec. 3; the templates' default model)."""


def question_key(doc: Mapping) -> dict[str, Any]:
    """``question_id`` and ``repeat`` (0 unless the task expanded its rows for repeats)."""
    return {"question_id": str(doc["id"]), "repeat": int(doc.get("repeat") or 0)}


def input_images(doc: Mapping) -> list:
    return to_pil_images(list(doc.get("images") or []))


def reference_image(doc: Mapping) -> list:
    return to_pil_images(doc["ref_image"]) if doc.get("ref_image") is not None else []


def _unscorable(parsed: ParsedOutput) -> tuple[float | None, str, dict] | None:
    """(correct, invalid reason, details) of an output that cannot be judged: unsupported -> ``None``,
    a failed request -> 0 with its reason."""
    if parsed.unsupported:
        return None, "", {"unsupported": parsed.record.unsupported}
    if parsed.failure:
        return 0.0, parsed.failure.reason, {"failure": parsed.failure.detail}
    return None


def judged(result: JudgeResult) -> tuple[float, str, dict]:
    """(correct, invalid reason, details): the verdict, or 0 with ``judge_invalid`` / ``judge_failed``."""
    details = {"judge": {"template": result.template_id, "model": result.model, "status": result.status,
                         "fields": result.fields, "reason": result.reason,
                         "raw": None if result.valid else result.raw}}  # fmt: skip
    if result.valid:
        return float(result.fields["score"]), "", details
    return 0.0, result.status, details


def _row(doc: Mapping, correct: float | None, invalid: str, details: dict) -> dict:
    return {"correct": correct, "invalid_outputs": invalid, **question_key(doc), "details": details}


def score_und(doc: Mapping, raw_output: Any, judge_config: Mapping | None = None) -> dict:
    """Judge a text answer; an empty answer is wrong without a judge call."""
    parsed = parse_output(raw_output)
    if (early := _unscorable(parsed)) is not None:
        return _row(doc, *early)
    answer = parsed.text.strip()
    if not answer:
        return _row(doc, 0.0, "", {"empty": True})
    images = {"image": input_images(doc), "reference_image": reference_image(doc)}
    result = judge(
        f"gapeval.und.{doc['category']}",
        variables={"question": doc["und_prompt"], "answer": answer, "reference": doc["reference"]},
        images={slot: value for slot, value in images.items() if value},
        config=judge_config,
        task=f"gapeval_{doc['category']}_und",
    )
    return _row(doc, *judged(result))


def score_gen(doc: Mapping, raw_output: Any, judge_config: Mapping | None = None) -> dict:
    """Judge the one generated image; a missing, corrupt or extra/absent image scores 0 with its reason."""
    parsed = parse_output(raw_output)
    if (early := _unscorable(parsed)) is not None:
        return _row(doc, *early)
    loaded = parsed.load_images(expected=1)
    if not isinstance(loaded, list):
        return _row(doc, 0.0, loaded.reason, {"failure": loaded.detail})
    images = {
        "original_image": input_images(doc) if doc.get("gen_uses_image") else [],
        "image": loaded[0],
        "reference_image": reference_image(doc),
    }
    result = judge(
        f"gapeval.gen.{doc['category']}",
        variables={"question": doc["gen_prompt"], "reference": doc["reference"]},
        images={slot: value for slot, value in images.items() if value},
        config=judge_config,
        task=f"gapeval_{doc['category']}_gen",
    )
    correct, invalid, details = judged(result)
    return _row(doc, correct, invalid, {**details, "generated_images": list(parsed.record.images)})
