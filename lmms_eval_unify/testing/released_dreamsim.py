"""DreamSim's released entry point on a tiny random checkpoint: what the released scripts call, for tests that
check our ``official`` DreamSim path equals it."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable

import torch
from PIL import Image
from torch import nn

from lmms_eval_unify.metrics.config import TINY_DREAMSIM_TYPE


def released_dreamsim(directory: str | os.PathLike) -> tuple[nn.Module, Callable[[Image.Image], torch.Tensor]]:
    """``dreamsim.dreamsim(pretrained=True, device="cpu", cache_dir=directory)`` on a folder written by
    `write_tiny_dreamsim_checkpoint`: the model and dreamsim's own ``preprocess``, from the entry point released
    scripts call. dreamsim knows no `clip_vitl14` type and would download weights; only for this call the type
    is registered and the download check skipped."""
    import dreamsim.model as dreamsim_model
    from dreamsim.config import dreamsim_args

    from lmms_eval_unify.metrics.dreamsim_metric import model_settings, preserved_torch_hub_dir

    types, download = dreamsim_args["model_config"], dreamsim_model.download_weights
    types[TINY_DREAMSIM_TYPE] = model_settings(TINY_DREAMSIM_TYPE)
    dreamsim_model.download_weights = lambda cache_dir, dreamsim_type: None
    try:
        with preserved_torch_hub_dir(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Already found a `peft_config`", category=UserWarning)
            return dreamsim_model.dreamsim(
                pretrained=True, device="cpu", cache_dir=str(directory), dreamsim_type=TINY_DREAMSIM_TYPE
            )
    finally:
        del types[TINY_DREAMSIM_TYPE]
        dreamsim_model.download_weights = download
