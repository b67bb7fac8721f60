"""Shared perceptual metrics: the only place CLIP, LPIPS, DreamSim and FID/FVD backbones are loaded and run.

Task hooks call the plain functions below; backbones load lazily, once per `MetricConfig`, under a lock.
"""

from lmms_eval_unify.metrics.clip import (
    Choice,
    clip_choice,
    clip_choices,
    clip_image_similarity,
    clip_t,
    clip_text_choice,
    clipsim,
    get_clip,
)
from lmms_eval_unify.metrics.config import (
    RANDOM_WEIGHTS,
    MetricConfig,
    MissingWeightsError,
    resolve_config,
)
from lmms_eval_unify.metrics.dreamsim_metric import JigsawImageScore, dreamsim_distance, jigsaw_dreamsim_score
from lmms_eval_unify.metrics.fid_fvd import DistanceResult, fid, fvd, resample_frames
from lmms_eval_unify.metrics.frechet import (
    FeatureStatistics,
    frechet_distance,
    normalise_distance_score,
)
from lmms_eval_unify.metrics.lpips_metric import lpips_distance
from lmms_eval_unify.metrics.registry import clear_backbones

__all__ = [
    "RANDOM_WEIGHTS",
    "Choice",
    "DistanceResult",
    "FeatureStatistics",
    "JigsawImageScore",
    "MetricConfig",
    "MissingWeightsError",
    "clear_backbones",
    "clip_choice",
    "clip_choices",
    "clip_image_similarity",
    "clip_t",
    "clip_text_choice",
    "clipsim",
    "dreamsim_distance",
    "fid",
    "frechet_distance",
    "fvd",
    "get_clip",
    "jigsaw_dreamsim_score",
    "lpips_distance",
    "normalise_distance_score",
    "resample_frames",
    "resolve_config",
]
