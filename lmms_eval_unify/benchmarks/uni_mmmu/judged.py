"""What the three judged Uni-MMMU tasks (geometry, science, code) share: reading an output, asking a judge
template, and turning its verdict into per-sample metrics.

Rules (official ``eval_ummmu.py`` where it has one): an unsupported output gives ``None`` for every metric;
an unusable record (malformed, model error) scores 0 everywhere with its reason in ``invalid_outputs``; a
missing/corrupt image or no image scores 0 on the image metrics with that reason; a judge reply that cannot
be parsed (``judge_invalid``) or a judge that cannot be reached (``judge_failed``) scores 0 on the metrics
of that judgement with that reason. When several reasons apply, ``invalid_outputs`` names the first one
(image before judge) and ``details`` keeps them all.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image

from lmms_eval_unify.judges import JudgeResult, judge
from lmms_eval_unify.judges.config import JudgeConfig, resolve_endpoint
from lmms_eval_unify.record import OutputFailure, ParsedOutput, load_media, parse_output

VL_JUDGE = "Qwen/Qwen2.5-VL-72B-Instruct"
"""The official judge of every Uni-MMMU judgement but the geometry text (Qwen3-32B)."""
JUDGES_ENV = "LMMS_EVAL_UNIFY_UNI_MMMU_JUDGES"
"""JSON mapping template id -> judge config fields for that template only, e.g. to send the geometry text
to a second endpoint serving Qwen3-32B: ``{"uni_mmmu.geometry.text": {"base_url": "http://host:8001/v1",
"extra_body": {"chat_template_kwargs": {"enable_thinking": true}}}}``. Unset = the global judge settings."""


def template_configs() -> dict[str, dict]:
    """Every per-template judge override of ``LMMS_EVAL_UNIFY_UNI_MMMU_JUDGES`` (empty when unset)."""
    raw = os.environ.get(JUDGES_ENV)
    if not raw:
        return {}
    try:
        overrides = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{JUDGES_ENV} is not valid JSON: {exc}") from exc
    if not isinstance(overrides, dict):
        raise ValueError(f"{JUDGES_ENV} must be a JSON object of template id -> judge config fields")
    return overrides


def template_config(template: str) -> dict | None:
    """The per-template judge overrides of ``LMMS_EVAL_UNIFY_UNI_MMMU_JUDGES`` (None = global settings)."""
    return template_configs().get(template)


def check_judges() -> None:
    """Raise before any generation when no judge endpoint is configured (``JudgeNotConfiguredError``) or
    the per-template overrides are malformed."""
    resolve_endpoint(JudgeConfig(), VL_JUDGE)
    template_config("")


@dataclass(frozen=True)
class Judged:
    """Per-sample metric values of one judgement, the invalid reason ("" if none) and its log entry."""

    metrics: dict[str, float]
    invalid: str
    log: dict[str, Any]


def output_images(parsed: ParsedOutput, first_only: bool) -> list[Image.Image] | OutputFailure:
    """The generated images (only the first when ``first_only``, as the official geometry and science
    evaluators judge ``model_image_*`` [0]); no image at all is a ``wrong_image_count`` failure."""
    paths = parsed.record.images[:1] if first_only else parsed.record.images
    if not paths:
        return OutputFailure("wrong_image_count", "expected at least 1 image, got 0")
    return load_media(parsed.record.root, paths)


def judge_log(result: JudgeResult) -> dict[str, Any]:
    """What the sample log keeps of one judgement (the raw reply only when it could not be parsed)."""
    return {
        "template": result.template_id,
        "model": result.model,
        "status": result.status,
        "fields": result.fields,
        "reason": result.reason,
        "raw": None if result.valid else result.raw,
    }


def ask(
    template: str,
    fields: dict[str, str],
    task: str,
    variables: dict[str, str] | None = None,
    images: dict[str, Any] | None = None,
) -> Judged:
    """One judgement; ``fields`` maps our metric names to the template's verdict fields. Metrics are 0 when
    the judge reply is invalid or the judge failed (reason ``judge_invalid`` / ``judge_failed``)."""
    result = judge(
        template, variables=variables or {}, images=images or {}, config=template_config(template), task=task
    )
    if result.valid:
        return Judged({m: float(result.fields[f]) for m, f in fields.items()}, "", judge_log(result))
    return Judged(dict.fromkeys(fields, 0.0), result.status, judge_log(result))


def score_judged(
    raw_output: Any,
    image_metrics: Sequence[str],
    text_metrics: Sequence[str],
    judge_images: Callable[[list[Image.Image]], Judged],
    judge_text: Callable[[str], Judged],
    first_image_only: bool = True,
) -> dict[str, Any]:
    """``process_results`` of a judged task: the image judgement (``judge_images`` of the loaded output
    images) and the text judgement (``judge_text`` of the output text), never raising on model output."""
    parsed = parse_output(raw_output)
    metrics = (*image_metrics, *text_metrics)
    if parsed.unsupported:
        return {m: None for m in metrics} | {
            "invalid_outputs": "",
            "details": {"unsupported": parsed.record.unsupported},
        }
    if parsed.failure:
        return dict.fromkeys(metrics, 0.0) | {
            "invalid_outputs": parsed.failure.reason,
            "details": {"failure": parsed.failure.detail},
        }
    images = output_images(parsed, first_image_only)
    if isinstance(images, OutputFailure):
        image = Judged(dict.fromkeys(image_metrics, 0.0), images.reason, {"failure": images.detail})
    else:
        image = judge_images(images)
    text = judge_text(parsed.text)
    return {
        **image.metrics,
        **text.metrics,
        "invalid_outputs": image.invalid or text.invalid,
        "details": {"image": image.log, "text": text.log, "generated_images": list(parsed.record.images)},
    }


def not_judged(metrics: Sequence[str], why: str) -> Judged:
    """Zero without a judge call (e.g. an empty answer, as the official evaluators do)."""
    return Judged(dict.fromkeys(metrics, 0.0), "", {"skipped": why})
