"""Tiny randomly initialised backbones for tests and benchmarks, selected through the normal MetricConfig."""

from __future__ import annotations

import os
import shutil
import tempfile
from functools import partial
from pathlib import Path

import torch
from torch import nn

from lmms_eval_unify.env_vars import read
from lmms_eval_unify.metrics.config import (
    RANDOM_WEIGHTS,
    TINY_BACKBONE,
    TINY_DREAMSIM_TYPE,
    MetricConfig,
    resolve_config,
    seeded_random_init,
)

# (embed_dim, depth, num_heads, projection dim) of the random DreamSim `clip_vitl14` checkpoints
DREAMSIM_SHAPES = {"tiny": (64, 2, 2, 32), "full": (1024, 24, 16, 768)}


def write_tiny_dreamsim_checkpoint(directory: str | os.PathLike, shape: str = "tiny") -> None:
    """Write a DreamSim weights folder for type `clip_vitl14`: a random ViT (its architecture is read from the
    checkpoint's kwargs) and a LoRA adapter with non-zero weights, laid out like the release zips. `shape`
    "tiny" is a 2-layer 64-wide ViT (tests); "full" has the real ViT-L/14 shape (GPU benchmarks)."""
    from dreamsim.feature_extraction.vision_transformer import VisionTransformer
    from dreamsim.model import PerceptualModel
    from peft import LoraConfig, get_peft_model

    directory = str(directory)
    width, depth, heads, projection = DREAMSIM_SHAPES[shape]
    kwargs = dict(
        img_size=[224],
        patch_size=14,
        embed_dim=width,
        depth=depth,
        num_heads=heads,
        mlp_ratio=4,
        qkv_bias=True,
    )
    with seeded_random_init():
        vit = VisionTransformer(**kwargs, norm_layer=partial(nn.LayerNorm, eps=1e-6))
        vit.pos_drop = nn.LayerNorm(width)
        state = vit.state_dict()
        state["proj"] = torch.randn(width, projection)
        torch.save({"kwargs": kwargs, "state_dict": state}, os.path.join(directory, "clipl14_as_dino_vitl.pth.tar"))
        model = PerceptualModel(
            model_type=TINY_DREAMSIM_TYPE, feat_type="embedding", stride="14", lora=True,
            load_dir=directory, device="cpu", normalize_embeds=True,
        )  # fmt: skip
        lora = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, bias="none", target_modules=["qkv"])
        adapted = get_peft_model(model, lora)
        for name, param in adapted.named_parameters():
            if "lora_B" in name:
                param.data.normal_(std=0.5)
        adapted.save_pretrained(os.path.join(directory, f"{TINY_DREAMSIM_TYPE}_single_lora"))


CACHE_ENV = "LMMS_EVAL_UNIFY_CACHE"


def cached_tiny_dreamsim() -> Path:
    """The tiny random DreamSim checkpoint folder of the cache, written on first use (atomically: a folder built
    aside, then renamed, so concurrent processes never read a half-written one)."""
    root = Path(read(CACHE_ENV) or Path.home() / ".cache" / "lmms_eval_unify")
    folder = root / "tiny_dreamsim"
    if not folder.is_dir():
        root.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix="tiny_dreamsim.", dir=root))
        write_tiny_dreamsim_checkpoint(building)
        try:
            building.rename(folder)
        except OSError:  # another process renamed its copy first
            shutil.rmtree(building, ignore_errors=True)
    return folder


def tiny_configs(dreamsim_dir: str | os.PathLike, device: str = "cpu") -> dict[str, MetricConfig]:
    """One tiny config per family (CLIP 3M params at 32 px, random-trunk LPIPS-Alex, tiny DreamSim, tiny conv
    net for FID/FVD). `dreamsim_dir` must hold `write_tiny_dreamsim_checkpoint`'s files."""
    return {
        "clip_score": resolve_config("clip_score", backbone=TINY_BACKBONE, weights=RANDOM_WEIGHTS, device=device),
        "clip_choice": resolve_config("clip_choice", backbone=TINY_BACKBONE, weights=RANDOM_WEIGHTS, device=device),
        "lpips": resolve_config("lpips", weights=RANDOM_WEIGHTS, device=device),
        "dreamsim": resolve_config("dreamsim", backbone=TINY_DREAMSIM_TYPE, weights=str(dreamsim_dir), device=device),
        "fid": resolve_config("fid", backbone=TINY_BACKBONE, weights=RANDOM_WEIGHTS, device=device),
        "fvd": resolve_config("fvd", backbone=TINY_BACKBONE, weights=RANDOM_WEIGHTS, device=device),
    }
