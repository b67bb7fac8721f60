"""Fixtures: tiny randomly initialised backbones selected through the normal MetricConfig path; no network."""

from __future__ import annotations

import os
from functools import partial

import pytest
import torch
from dreamsim.feature_extraction.vision_transformer import VisionTransformer
from dreamsim.model import PerceptualModel
from peft import LoraConfig, get_peft_model
from torch import nn

from lmms_eval_unify.metrics import RANDOM_WEIGHTS, resolve_config
from lmms_eval_unify.metrics.config import ENV_PREFIX


@pytest.fixture(autouse=True)
def hermetic_metric_env(monkeypatch):
    """No LMMS_EVAL_UNIFY_* variable from the developer's shell leaks into a test."""
    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)


@pytest.fixture
def make_images():
    """Deterministic random uint8 images [3, H, W]."""

    def make(count: int, height: int = 32, width: int = 32, seed: int = 0) -> list[torch.Tensor]:
        generator = torch.Generator().manual_seed(seed)
        return [
            torch.randint(0, 256, (3, height, width), dtype=torch.uint8, generator=generator)
            for _ in range(count)
        ]

    return make


@pytest.fixture
def tiny_clip_config():
    return resolve_config("clip_choice", backbone="tiny", weights=RANDOM_WEIGHTS, device="cpu")


@pytest.fixture
def random_lpips_config():
    return resolve_config("lpips", weights=RANDOM_WEIGHTS, device="cpu")


@pytest.fixture
def tiny_fid_config():
    return resolve_config("fid", backbone="tiny", weights=RANDOM_WEIGHTS, device="cpu")


@pytest.fixture
def tiny_fvd_config():
    return resolve_config("fvd", backbone="tiny", weights=RANDOM_WEIGHTS, device="cpu")


@pytest.fixture(scope="session")
def tiny_dreamsim_dir(tmp_path_factory):
    """A DreamSim weights folder for type `clip_vitl14`: a tiny ViT checkpoint (architecture in its kwargs)
    and a LoRA adapter with non-zero weights, saved the way the dreamsim release zips are laid out."""
    directory = tmp_path_factory.mktemp("dreamsim")
    kwargs = dict(
        img_size=[224], patch_size=14, embed_dim=64, depth=2, num_heads=2, mlp_ratio=4, qkv_bias=True
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        vit = VisionTransformer(**kwargs, norm_layer=partial(nn.LayerNorm, eps=1e-6))
        vit.pos_drop = nn.LayerNorm(64)
        state = vit.state_dict()
        state["proj"] = torch.randn(64, 32)
        torch.save({"kwargs": kwargs, "state_dict": state}, directory / "clipl14_as_dino_vitl.pth.tar")
        model = PerceptualModel(
            model_type="clip_vitl14", feat_type="embedding", stride="14", lora=True,
            load_dir=str(directory), device="cpu", normalize_embeds=True,
        )  # fmt: skip
        lora = get_peft_model(
            model, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, bias="none", target_modules=["qkv"])
        )
        for name, param in lora.named_parameters():
            if "lora_B" in name:
                param.data.normal_(std=0.5)
        lora.save_pretrained(directory / "clip_vitl14_single_lora")
    return directory


@pytest.fixture
def tiny_dreamsim_config(tiny_dreamsim_dir):
    return resolve_config("dreamsim", backbone="clip_vitl14", weights=str(tiny_dreamsim_dir), device="cpu")
