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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lmms_eval_unify import metrics
from lmms_eval_unify.benchmarks.uni_mmmu.spec import METRICS
from lmms_eval_unify.env_vars import read
from lmms_eval_unify.output.record import OutputFailure, ParsedOutput
from lmms_eval_unify.puzzles.jigsaw import jigsaw_completions, parse_jigsaw_choice
from lmms_eval_unify.scoring.scorer import Score, scorer

if TYPE_CHECKING:
    from lmms_eval_unify.metrics.dreamsim_metric import ConfigLike
    from lmms_eval_unify.metrics.images import ImageInput

METRICS_ENV = "LMMS_EVAL_UNIFY_UNI_MMMU_METRICS"
"""JSON mapping family -> MetricConfig fields for the Uni-MMMU scorers, e.g.
``{"dreamsim": {"backbone": "clip_vitl14", "weights": "/tmp/tiny", "device": "cpu"}}`` (tests);
unset = the paper's DreamSim ensemble."""

JIGSAW_METRICS = METRICS["jigsaw"]
PENALTY_DISTANCE = 1.0
"""The item distance of a wrong image count or an unreadable image (the released script's)."""


@dataclass(frozen=True)
class JigsawImageScore:
    """The jigsaw image metric: `score` = 1 - mean(per-item distance); penalised items count 1.0."""

    score: float
    distances: tuple[float, ...]
    penalised: tuple[bool, ...]


def jigsaw_dreamsim_score(
    generated: Sequence[Sequence[ImageInput] | None],
    references: Sequence[tuple[ImageInput, ImageInput]],
    config: ConfigLike = None,
) -> JigsawImageScore:
    """Per item: exactly two generated images, compared with the two reference completions by the shared
    DreamSim distance; item distance (d0 + d1) / 2. A wrong image count or an unreadable image gives
    :data:`PENALTY_DISTANCE`; a missing DreamSim checkpoint raises."""
    if len(generated) != len(references):
        raise ValueError("jigsaw_dreamsim_score needs one reference pair per item")
    metrics.require_dreamsim(config)  # a missing checkpoint must raise, not penalise
    valid = {i: images for i, images in enumerate(generated) if images is not None and len(images) == 2}
    distances: list[float | None] = [None] * len(generated)
    batch: Sequence[float | None]
    try:
        batch = _item_distances(list(valid.values()), [references[i] for i in valid], config)
    except (OSError, RuntimeError, ValueError):  # an unreadable image: isolate it item by item
        batch = [_item_distance(images, references[i], config) for i, images in valid.items()]
    for i, distance in zip(valid, batch, strict=True):
        distances[i] = distance
    final = [PENALTY_DISTANCE if d is None else d for d in distances]
    score = 1.0 - sum(final) / len(final) if final else float("nan")
    return JigsawImageScore(score, tuple(final), tuple(d is None for d in distances))


def _item_distances(
    generated: Sequence[Sequence[ImageInput]], references: Sequence[tuple[ImageInput, ImageInput]], config: ConfigLike
) -> list[float]:
    """(d0 + d1) / 2 per item, all pairs in one batched DreamSim call."""
    if not generated:
        return []
    flat_generated = [image for images in generated for image in images]
    flat_references = [image for pair in references for image in pair]
    pairs = metrics.dreamsim_distance(flat_generated, flat_references, config).view(-1, 2)
    return ((pairs[:, 0] + pairs[:, 1]) / 2.0).tolist()


def _item_distance(
    generated: Sequence[ImageInput], reference: tuple[ImageInput, ImageInput], config: ConfigLike
) -> float | None:
    """One item's distance, or None when one of its images cannot be read."""
    try:
        return _item_distances([generated], [reference], config)[0]
    except (OSError, RuntimeError, ValueError):
        return None


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
    scored = jigsaw_dreamsim_score([images], [jigsaw_completions(doc)], config=metric_config("dreamsim"))
    details["distance"] = scored.distances[0]
    invalid = loaded.reason if isinstance(loaded, OutputFailure) else ""
    return Score({"img_score": 1.0 - scored.distances[0], "text_acc": text_acc}, invalid, details)
