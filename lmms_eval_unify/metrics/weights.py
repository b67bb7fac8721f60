"""Where a metric backbone's weights are, found without loading them (for the run preflight)."""

from __future__ import annotations

from lmms_eval_unify.metrics.config import TINY_BACKBONE, MetricConfig


def locate_weights(config: MetricConfig) -> str:
    """The local file or folder ``config`` loads its weights from; ``"random"`` for random-weight configs.

    Raises ``MissingWeightsError`` (naming the backbone, the paths looked in and the env var to set) exactly
    when building the backbone would, without building it.
    """
    if config.random_weights or config.backbone == TINY_BACKBONE:
        return "random"
    if config.family in ("clip_score", "clip_choice"):
        from lmms_eval_unify.metrics.clip import pretrained_source

        return pretrained_source(config)
    if config.family == "lpips":
        from lmms_eval_unify.metrics.lpips_metric import trunk_checkpoint

        return trunk_checkpoint(config)
    if config.family == "dreamsim":
        from lmms_eval_unify.metrics.dreamsim_metric import weights_dir

        return weights_dir(config)
    from lmms_eval_unify.metrics.fid_fvd import checkpoint_path

    return checkpoint_path(config)
