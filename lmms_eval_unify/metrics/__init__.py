"""Shared perceptual metrics: the only place CLIP, LPIPS, DreamSim and FID/FVD backbones are loaded and run.

Task hooks call the plain functions below; backbones load lazily, once per `MetricConfig`, under a lock.
The names are imported on first use (PEP 562), so importing this package (and every scorer module that
does) imports no torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_SOURCES = {
    "Choice": "lmms_eval_unify.metrics.clip",
    "DistanceResult": "lmms_eval_unify.metrics.fid_fvd",
    "FeatureStatistics": "lmms_eval_unify.metrics.frechet",
    "MetricConfig": "lmms_eval_unify.metrics.config",
    "MissingWeightsError": "lmms_eval_unify.metrics.config",
    "RANDOM_WEIGHTS": "lmms_eval_unify.metrics.config",
    "clear_backbones": "lmms_eval_unify.metrics.registry",
    "clip_choice": "lmms_eval_unify.metrics.clip",
    "clip_choices": "lmms_eval_unify.metrics.clip",
    "clip_image_similarity": "lmms_eval_unify.metrics.clip",
    "clip_t": "lmms_eval_unify.metrics.clip",
    "clip_text_choice": "lmms_eval_unify.metrics.clip",
    "clipsim": "lmms_eval_unify.metrics.clip",
    "dreamsim_distance": "lmms_eval_unify.metrics.dreamsim_metric",
    "fid": "lmms_eval_unify.metrics.fid_fvd",
    "frechet_distance": "lmms_eval_unify.metrics.frechet",
    "fvd": "lmms_eval_unify.metrics.fid_fvd",
    "get_clip": "lmms_eval_unify.metrics.clip",
    "lpips_distance": "lmms_eval_unify.metrics.lpips_metric",
    "require_dreamsim": "lmms_eval_unify.metrics.dreamsim_metric",
    "resolve_config": "lmms_eval_unify.metrics.config",
}

__all__ = sorted(_SOURCES)


def __getattr__(name: str) -> Any:
    """Import ``name`` from its module on first use."""
    if name not in _SOURCES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_SOURCES[name]), name)
    globals()[name] = value
    return value
