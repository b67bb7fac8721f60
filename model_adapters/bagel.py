"""BAGEL (ByteDance-Seed) through the official ``InterleaveInferencer`` (GPU only: flash-attn, CUDA autocast).

Understanding, text-to-image and editing go through ``interleave_inference`` with the official demo's
settings (``app.py``): understanding greedy with ``max_think_token_n`` tokens; text-to-image
``cfg_text_scale=4``, ``cfg_interval=[0.4, 1]``, ``cfg_renorm_type="global"``, 1024 px; editing
additionally ``cfg_img_scale=2``, ``cfg_interval=[0, 1]``, ``cfg_renorm_type="text_channel"``, output shape
from the (last) input image; 50 timesteps with shift 3 in both. Every input image is given, in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from lmms_eval_unify.model_adapters.official_code import (
    import_official,
    local_weights,
    missing_checkout,
    official_checkout,
)
from PIL import Image

from lmms_eval_unify.generation.adapter import (
    UNDERSTAND_AND_GENERATE,
    Missing,
    ModelSettings,
    UnifiedModel,
    missing_code,
    missing_device,
    missing_weights,
    run_only,
    seeded,
)

REPO_URL = "https://github.com/ByteDance-Seed/Bagel"
REPO_ENV, REPO_PROBE = "BAGEL_REPO", "inferencer.py"
WEIGHT_FILES = ("llm_config.json", "vit_config.json", "ae.safetensors", "ema.safetensors")
THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
SAME_DEVICE_MODULES = (
    "language_model.model.embed_tokens",
    "time_embedder",
    "latent_pos_embed",
    "vae2llm",
    "llm2vae",
    "connector",
    "vit_pos_embed",
)


def load_inferencer(repo: Path, weights: Path, max_memory_gib: int = 80) -> Any:
    """The official model (bf16, dispatched over the visible GPUs) wrapped in ``InterleaveInferencer``."""
    from accelerate import infer_auto_device_map, init_empty_weights, load_checkpoint_and_dispatch

    bagel = import_official("bagel", "modeling.bagel", repo)
    data_utils = import_official("bagel", "data.data_utils", repo)
    transforms = import_official("bagel", "data.transforms", repo)
    autoencoder = import_official("bagel", "modeling.autoencoder", repo)
    qwen2 = import_official("bagel", "modeling.qwen2", repo)
    inferencer = import_official("bagel", "inferencer", repo)

    llm_config = bagel.Qwen2Config.from_json_file(str(weights / "llm_config.json"))
    llm_config.qk_norm, llm_config.tie_word_embeddings = True, False
    llm_config.layer_module = "Qwen2MoTDecoderLayer"
    vit_config = bagel.SiglipVisionConfig.from_json_file(str(weights / "vit_config.json"))
    vit_config.rope = False
    vit_config.num_hidden_layers -= 1
    vae_model, vae_config = autoencoder.load_ae(local_path=str(weights / "ae.safetensors"))
    config = bagel.BagelConfig(
        visual_gen=True,
        visual_und=True,
        llm_config=llm_config,
        vit_config=vit_config,
        vae_config=vae_config,
        vit_max_num_patch_per_side=70,
        connector_act="gelu_pytorch_tanh",
        latent_patch_size=2,
        max_latent_size=64,
    )
    with init_empty_weights():
        model = bagel.Bagel(bagel.Qwen2ForCausalLM(llm_config), bagel.SiglipVisionModel(vit_config), config)
        model.vit_model.vision_model.embeddings.convert_conv2d_to_linear(vit_config, meta=True)
    tokenizer = qwen2.Qwen2Tokenizer.from_pretrained(str(weights))
    tokenizer, new_token_ids, _ = data_utils.add_special_tokens(tokenizer)
    device_map = infer_auto_device_map(
        model,
        max_memory={i: f"{max_memory_gib}GiB" for i in range(torch.cuda.device_count())},
        no_split_module_classes=["Bagel", "Qwen2MoTDecoderLayer"],
    )
    first = device_map.get(SAME_DEVICE_MODULES[0], "cuda:0")
    device_map.update({name: first for name in SAME_DEVICE_MODULES})
    model = load_checkpoint_and_dispatch(
        model,
        checkpoint=str(weights / "ema.safetensors"),
        device_map=device_map,
        offload_buffers=True,
        dtype=torch.bfloat16,
        force_hooks=True,
    ).eval()
    return inferencer.InterleaveInferencer(
        model=model,
        vae_model=vae_model.to(first, dtype=torch.bfloat16),
        tokenizer=tokenizer,
        vae_transform=transforms.ImageTransform(1024, 512, 16),
        vit_transform=transforms.ImageTransform(980, 224, 14),
        new_token_ids=new_token_ids,
    )


@dataclass(frozen=True, kw_only=True)
class BagelSettings(ModelSettings):
    pretrained: str = "ByteDance-Seed/BAGEL-7B-MoT"
    """Local folder of the weights (or a Hub id already in the cache)."""
    repo_path: str | None = run_only()
    """Checkout of the official code (else ``$BAGEL_REPO``)."""
    cfg_text_scale: float = 4.0
    cfg_img_scale: float = 2.0
    num_timesteps: int = 50
    timestep_shift: float = 3.0
    image_size: int = 1024
    think: bool = False
    """The official "thinking" mode (a reasoning block before the answer or the image)."""
    max_new_tokens: int | None = None
    """Caps every task's ``max_new_tokens`` (``None``: the task's value)."""


class Bagel(UnifiedModel):
    """BAGEL-7B-MoT: understanding, text-to-image and editing, natively interleaved."""

    model_id = "bagel"
    capabilities = UNDERSTAND_AND_GENERATE
    settings_class = BagelSettings
    settings: BagelSettings

    @classmethod
    def missing(cls, settings: BagelSettings) -> list[Missing]:
        return [
            *missing_checkout(cls.model_id, settings.repo_path, REPO_ENV, REPO_URL, REPO_PROBE),
            *missing_code(cls.model_id, "flash_attn", install="pip install flash_attn==2.5.8 (docs/models/bagel.md)"),
            *missing_weights(cls.model_id, settings.pretrained, files=WEIGHT_FILES),
            *missing_device(cls.model_id, settings.device, needs_cuda=True),
        ]

    def __init__(self, **model_args: Any) -> None:
        super().__init__(**model_args)
        self.inferencer = self._load_backend()

    def _load_backend(self) -> Any:
        repo = official_checkout(self.model_id, self.settings.repo_path, REPO_ENV, REPO_URL, REPO_PROBE)
        weights = local_weights(self.model_id, self.settings.pretrained, WEIGHT_FILES)
        if not torch.cuda.is_available():
            raise RuntimeError("bagel needs a CUDA GPU (the official code imports flash-attn and autocasts to CUDA)")
        return load_inferencer(repo, weights)

    def generation_settings(self, editing: bool) -> dict[str, Any]:
        """The official demo's diffusion settings for text-to-image or editing."""
        settings = {
            "cfg_text_scale": self.settings.cfg_text_scale,
            "num_timesteps": self.settings.num_timesteps,
            "timestep_shift": self.settings.timestep_shift,
            "cfg_renorm_min": 0.0,
        }
        if editing:
            return {
                **settings,
                "cfg_img_scale": self.settings.cfg_img_scale,
                "cfg_interval": [0.0, 1.0],
                "cfg_renorm_type": "text_channel",
            }
        return {
            **settings,
            "cfg_interval": [0.4, 1.0],
            "cfg_renorm_type": "global",
            "image_shapes": (self.settings.image_size, self.settings.image_size),
        }

    def text_settings(self, decoding: dict[str, Any]) -> dict[str, Any]:
        temperature = float(decoding.get("temperature", 0) or 0)
        max_new = int(decoding.get("max_new_tokens", 512))
        return {
            "do_sample": temperature > 0,
            "text_temperature": temperature or 0.3,
            "max_think_token_n": min(max_new, self.settings.max_new_tokens)
            if self.settings.max_new_tokens
            else max_new,
        }

    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        with seeded(int(decoding.get("seed", self.seed)), self.device):
            outputs = self.inferencer.interleave_inference(
                [*(im.convert("RGB") for im in images), prompt],
                think=self.settings.think,
                understanding_output=True,
                **self.text_settings(decoding),
            )
        texts = [item for item in outputs if isinstance(item, str)]
        if not texts:
            raise ValueError("bagel returned no text")
        return THINK_BLOCK.sub("", texts[-1]).strip()

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        with seeded(int(decoding["seed"]), self.device):
            outputs = self.inferencer.interleave_inference(
                [*(im.convert("RGB") for im in images), prompt],
                think=self.settings.think,
                understanding_output=False,
                **self.generation_settings(editing=bool(images)),
            )
        drawn = [item for item in outputs if isinstance(item, Image.Image)]
        if not drawn:
            raise ValueError("bagel returned no image")
        return drawn[-1].convert("RGB")
