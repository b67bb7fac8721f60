"""DreamSim distance (dreamsim 0.2.1 ensemble by default)."""

from __future__ import annotations

import contextlib
import json
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torchvision.transforms import InterpolationMode

from lmms_eval_unify.metrics.config import ENV_PREFIX, MetricConfig, MissingWeightsError, as_config, env_value
from lmms_eval_unify.metrics.encoders import ImageEncoder
from lmms_eval_unify.metrics.images import ImageInput, ImageTransform
from lmms_eval_unify.metrics.registry import get_backbone

ConfigLike = MetricConfig | Mapping[str, Any] | None
DREAMSIM_IMAGE_SIZE = 224
_ENV_NAME = "DREAMSIM_DIR"
# "clip_vitl14" reads its architecture from the checkpoint's kwargs, so tests build it from a tiny file.
_EXTRA_TYPES = {"clip_vitl14": {"feat_type": "embedding", "model_type": "clip_vitl14", "stride": "14", "lora": True}}
_BACKBONE_FILES = {
    "dino_vitb16": [
        "dino_vitb16_pretrain.pth",
        "facebookresearch_dino_main/hubconf.py",
        "checkpoints/dino_vitbase16_pretrain.pth",
    ],
    "dinov2_vitb14": ["dinov2_vitb14_pretrain.pth", "facebookresearch_dinov2_main/hubconf.py"],
    "clip_vitb16": ["clip_vitb16_pretrain.pth.tar"],
    "clip_vitb32": ["clip_vitb32_pretrain.pth.tar"],
    "clip_vitl14": ["clipl14_as_dino_vitl.pth.tar"],
    "open_clip_vitb16": ["open_clip_vitb16_pretrain.pth.tar"],
    "open_clip_vitb32": ["open_clip_vitb32_pretrain.pth.tar"],
    "synclr_vitb16": ["synclr_vit_b_16.pth"],
}


def model_settings(dreamsim_type: str) -> dict[str, Any]:
    """dreamsim's ``PerceptualModel`` arguments of a DreamSim type (ours add `clip_vitl14`, the tiny tests' type)."""
    from dreamsim.config import dreamsim_args

    settings = dreamsim_args["model_config"].get(dreamsim_type) or _EXTRA_TYPES.get(dreamsim_type)
    if settings is None:
        known = sorted([*dreamsim_args["model_config"], *_EXTRA_TYPES])
        raise ValueError(f"unknown DreamSim type {dreamsim_type!r}; expected one of {known}")
    return settings


def _lora_dir_name(dreamsim_type: str, model_types: list[str]) -> str:
    """Adapter folder naming of dreamsim.dreamsim(): ensemble_lora, <model>_patch_lora or <model>_single_lora."""
    if dreamsim_type == "ensemble":
        return "ensemble_lora"
    return f"{model_types[0]}_{'patch' if dreamsim_type.endswith('_patch') else 'single'}_lora"


def _weights_dir(config: MetricConfig, required: list[str]) -> str:
    if config.random_weights:  # the tiny random checkpoint (tiny-metrics switch), built in the cache on first use
        from lmms_eval_unify.metrics.tiny import cached_tiny_dreamsim

        return str(cached_tiny_dreamsim())
    candidates = [config.weights] if config.weights else []
    candidates += [env_value(_ENV_NAME) or f"${ENV_PREFIX}{_ENV_NAME} (unset)"]
    candidates += [os.path.join(os.path.expanduser("~"), ".cache", "dreamsim")]
    for directory in candidates:
        if all(os.path.exists(os.path.join(directory, name)) for name in required):
            return directory
    raise MissingWeightsError(
        f"dreamsim:{config.backbone}",
        [f"{c} (needs {', '.join(required)})" for c in candidates],
        ENV_PREFIX + _ENV_NAME,
        "Unzip the dreamsim release checkpoint (github.com/ssundaram21/dreamsim/releases, "
        f"dreamsim_{config.backbone}_checkpoint.zip) into that directory; DINO types also need torch.hub's "
        "facebookresearch_dino_main repo and checkpoints/dino_vitbase16_pretrain.pth there.",
    )


def weights_dir(config: MetricConfig) -> str:
    """The folder holding every file DreamSim ``config.backbone`` needs (``MissingWeightsError`` if none)."""
    model_types = model_settings(config.backbone)["model_type"].split(",")
    lora_dir = _lora_dir_name(config.backbone, model_types)
    required = [f"{lora_dir}/adapter_config.json"] + [f for m in model_types for f in _BACKBONE_FILES.get(m, [])]
    return _weights_dir(config, required)


@contextlib.contextmanager
def preserved_torch_hub_dir() -> Iterator[None]:
    """DreamSim calls torch.hub.set_dir() globally; restore the previous hub dir for the rest of the process."""
    previous = torch.hub.get_dir()
    try:
        yield
    finally:
        torch.hub.set_dir(previous)


def load_dreamsim(config: MetricConfig) -> ImageEncoder:
    """Build DreamSim exactly as `dreamsim.dreamsim(pretrained=True)` does, from local files only."""
    from dreamsim.model import PerceptualModel  # imported on first use, like every backbone library
    from peft import LoraConfig, PeftModel, get_peft_model

    settings = model_settings(config.backbone)
    lora_dir = _lora_dir_name(config.backbone, settings["model_type"].split(","))
    directory = weights_dir(config)
    device = str(config.torch_device)
    with preserved_torch_hub_dir():
        model = PerceptualModel(**settings, device=device, load_dir=directory, normalize_embeds=True)
    with open(os.path.join(directory, lora_dir, "adapter_config.json"), encoding="utf-8") as f:
        adapter = json.load(f)
    lora = LoraConfig(**{k: adapter[k] for k in ("r", "lora_alpha", "lora_dropout", "bias", "target_modules")})
    # dreamsim's own double wrapping (reproduced here) triggers peft's "multiple adapters" warning
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Already found a `peft_config`", category=UserWarning)
        model = get_peft_model(model, lora)
        model = PeftModel.from_pretrained(model.get_base_model(), os.path.join(directory, lora_dir)).to(device)
    model.eval().requires_grad_(False)
    official = config.variant == "official"
    # 224 x 224 squash, bicubic, [0, 1]: official on the PIL image, bit for bit dreamsim's own `preprocess`
    # (Resize((224, 224), BICUBIC) + ToTensor); standard batched on tensors on the device (docs/metrics.md).
    transform = ImageTransform(DREAMSIM_IMAGE_SIZE, "squash", InterpolationMode.BICUBIC, pil=official)

    def embed(batch: torch.Tensor) -> torch.Tensor:
        if official:  # one image per forward, as dreamsim's model(a, b): a batched forward rounds differently
            return torch.cat([model.embed(image[None]) for image in batch])
        return model.embed(batch.clamp(0.0, 1.0))

    return ImageEncoder(config, transform, embed)


def require_dreamsim(config: ConfigLike = None) -> None:
    """Load the DreamSim backbone of `config` now, unless loaded: a missing checkpoint raises here
    (``MissingWeightsError``), before a caller that isolates failing images could mistake it for one."""
    get_backbone(as_config("dreamsim", config), load_dreamsim)


def dreamsim_distance(
    images_a: Sequence[ImageInput], images_b: Sequence[ImageInput], config: ConfigLike = None
) -> torch.Tensor:
    """DreamSim distance 1 - cos(embeddings) per pair, float64 [N]; embeddings are cached by content hash.

    ``official`` (the default variant) computes what ``dreamsim.dreamsim()``'s ``model(preprocess(a),
    preprocess(b))`` returns, bit for bit: PIL decoding and preprocessing, one image per forward, the float32
    cosine on the metric device (so identical images may be +-1.2e-7 apart). ``standard`` preprocesses and
    embeds in batches on the device and takes the cosine in float64 (identical images at exactly 0).
    """
    if len(images_a) != len(images_b):
        raise ValueError("dreamsim_distance needs the same number of images on both sides")
    config = as_config("dreamsim", config)
    embeddings = get_backbone(config, load_dreamsim).embed([*images_a, *images_b])
    first, second = embeddings[: len(images_a)], embeddings[len(images_a) :]
    if config.variant == "official":
        device = config.torch_device
        pairs = zip(first.to(device), second.to(device), strict=True)
        distances = [1 - F.cosine_similarity(a[None], b[None], dim=-1) for a, b in pairs]  # one pair per call
        return torch.cat(distances).double().cpu()
    first, second = F.normalize(first.double(), dim=-1), F.normalize(second.double(), dim=-1)
    return 1.0 - (first * second).sum(dim=-1)
