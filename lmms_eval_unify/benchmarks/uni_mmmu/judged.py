"""What the three judged Uni-MMMU tasks (geometry, science, code) share: reading an output, asking a judge
template, and turning its verdict into per-sample metrics.

Rules (official ``eval_ummmu.py`` where it has one): unsupported and unusable records (malformed, model
error) are the core scorer wrapper's (``None`` / 0 everywhere with the reason); a
missing/corrupt image or no image scores 0 on the image metrics with that reason; a judge reply that cannot
be parsed (``judge_invalid``) or a judge that cannot be reached (``judge_failed``) scores 0 on the metrics
of that judgement with that reason. When several reasons apply, ``invalid_outputs`` names the first one
(image before judge) and ``details`` keeps them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image

from lmms_eval_unify.benchmarks.uni_mmmu.spec import JUDGES_ENV
from lmms_eval_unify.env_vars import read
from lmms_eval_unify.judges import judge
from lmms_eval_unify.output.media_reader import load_media
from lmms_eval_unify.output.record import OutputFailure, ParsedOutput
from lmms_eval_unify.scoring.scorer import Score, judge_log


def template_configs() -> dict[str, dict]:
    """Every per-template judge override of ``$LMMS_EVAL_UNIFY_UNI_MMMU_JUDGES`` (``spec.JUDGES_ENV``; empty when
    unset); a malformed value raises ``env_vars.MalformedVariable``."""
    return read(JUDGES_ENV) or {}


def template_config(template: str) -> dict | None:
    """The per-template judge overrides of ``LMMS_EVAL_UNIFY_UNI_MMMU_JUDGES`` (None = global settings)."""
    return template_configs().get(template)


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
    parsed: ParsedOutput,
    image_metrics: Sequence[str],
    text_metrics: Sequence[str],
    judge_images: Callable[[list[Image.Image]], Judged],
    judge_text: Callable[[str], Judged],
    first_image_only: bool = True,
) -> Score:
    """The score of a judged task's usable output: the image judgement (``judge_images`` of the loaded
    output images) and the text judgement (``judge_text`` of the output text)."""
    images = output_images(parsed, first_image_only)
    if isinstance(images, OutputFailure):
        image = Judged(dict.fromkeys(image_metrics, 0.0), images.reason, {"failure": images.detail})
    else:
        image = judge_images(images)
    text = judge_text(parsed.text)
    return Score(
        {**image.metrics, **text.metrics},
        image.invalid or text.invalid,
        {"image": image.log, "text": text.log},
    )


def not_judged(metrics: Sequence[str], why: str) -> Judged:
    """Zero without a judge call (e.g. an empty answer, as the official evaluators do)."""
    return Judged(dict.fromkeys(metrics, 0.0), "", {"skipped": why})
