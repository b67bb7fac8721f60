"""Uni-MMMU jigsaw scorer (the items, choice parser and answer space are ``lmms_eval_unify.puzzles.jigsaw``).

Official scoring (``eval_ummmu.py``): text = first ``<FINAL_ANSWER_JSON>{...}</FINAL_ANSWER_JSON>`` whose
``choice`` is 0 or 1 (the string "0" fails) and equals ``label``; image = exactly two generated images,
DreamSim distance of image k to the ground-truth completion with candidate k, item distance (d0 + d1)/2,
penalty distance 1.0 for a wrong count or an unreadable image; score 1 - mean distance. The per-sample
``img_score`` = 1 - item distance, so its mean is the official dataset score. The DreamSim metric's default
``official`` variant computes each distance bit for bit as the released script does (dreamsim's own PIL
preprocessing, one image per forward, float32 cosine), so a perfect panel scores within 1.2e-7 of 1.
"""

from __future__ import annotations

from typing import Any

from lmms_eval_unify import metrics
from lmms_eval_unify.benchmarks.uni_mmmu.spec import METRICS
from lmms_eval_unify.env_vars import read
from lmms_eval_unify.output.record import OutputFailure, ParsedOutput
from lmms_eval_unify.puzzles.jigsaw import jigsaw_completions, parse_jigsaw_choice
from lmms_eval_unify.scoring.scorer import Score, scorer

METRICS_ENV = "LMMS_EVAL_UNIFY_UNI_MMMU_METRICS"
"""JSON mapping family -> MetricConfig fields for the Uni-MMMU scorers, e.g.
``{"dreamsim": {"backbone": "clip_vitl14", "weights": "/tmp/tiny", "device": "cpu"}}`` (tests);
unset = the paper's DreamSim ensemble."""

JIGSAW_METRICS = METRICS["jigsaw"]


def metric_config(family: str) -> dict | None:
    """The configured metric fields of ``family`` from ``LMMS_EVAL_UNIFY_UNI_MMMU_METRICS`` (None = defaults)."""
    return (read(METRICS_ENV) or {}).get(family)


@scorer(*JIGSAW_METRICS)
def score_jigsaw(doc: dict, parsed: ParsedOutput) -> Score:
    """Per-sample ``img_score`` and ``text_acc`` of one usable jigsaw output (a missing DreamSim checkpoint
    raises); a wrong image count or an unreadable image is penalised with distance 1 and named."""
    choice = parse_jigsaw_choice(parsed.text)
    details: dict[str, Any] = {"choice": choice}
    text_acc = float(choice is not None and choice == int(doc["label"]))
    loaded = parsed.load_images(expected=2)
    images = None if isinstance(loaded, OutputFailure) else loaded
    if isinstance(loaded, OutputFailure):
        details["image_failure"] = loaded.detail
    scored = metrics.jigsaw_dreamsim_score([images], [jigsaw_completions(doc)], config=metric_config("dreamsim"))
    details["distance"] = scored.distances[0]
    invalid = loaded.reason if isinstance(loaded, OutputFailure) else ""
    return Score({"img_score": 1.0 - scored.distances[0], "text_acc": text_acc}, invalid, details)
