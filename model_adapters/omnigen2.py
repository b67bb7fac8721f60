"""OmniGen2 (VectorSpaceLab) through its official pipelines (no diffusers pipeline exists for it).

Generation and editing use ``OmniGen2Pipeline`` with the defaults of the official ``inference.py``:
1024x1024, 50 steps, text guidance 5.0, image guidance 2.0 (editing; ignored without input images), CFG
over the whole schedule, the official negative prompt; every input image is passed (``input_images``).
Understanding uses ``OmniGen2ChatPipeline`` built from the same components and returns its text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from lmms_eval_unify.model_adapters.official_code import import_official, missing_checkout, official_checkout
from PIL import Image

from lmms_eval_unify.generation.adapter import (
    UNDERSTAND_AND_GENERATE,
    Missing,
    ModelSettings,
    UnifiedModel,
    missing_device,
    missing_weights,
    run_only,
    seeded,
)

REPO_URL = "https://github.com/VectorSpaceLab/OmniGen2"
REPO_ENV, REPO_PROBE = "OMNIGEN2_REPO", "omnigen2/pipelines/omnigen2/pipeline_omnigen2.py"
NEGATIVE_PROMPT = (
    "(((deformed))), blurry, over saturation, bad anatomy, disfigured, poorly drawn face, mutation, mutated, "
    "(extra_limb), (ugly), (poorly drawn hands), fused fingers, messy drawing, broken legs censor, censored, "
    "censor_bar"
)


@dataclass(frozen=True, kw_only=True)
class OmniGen2Settings(ModelSettings):
    pretrained: str = "OmniGen2/OmniGen2"
    repo_path: str | None = run_only()
    """Checkout of the official code (else ``$OMNIGEN2_REPO``)."""
    num_inference_steps: int = 50
    text_guidance_scale: float = 5.0
    image_guidance_scale: float = 2.0
    height: int = 1024
    width: int = 1024
    negative_prompt: str = NEGATIVE_PROMPT


class OmniGen2(UnifiedModel):
    """OmniGen2: text-to-image, multi-image editing and chat understanding."""

    model_id = "omnigen2"
    capabilities = UNDERSTAND_AND_GENERATE
    settings_class = OmniGen2Settings
    settings: OmniGen2Settings

    @classmethod
    def missing(cls, settings: OmniGen2Settings) -> list[Missing]:
        return [
            *missing_checkout(cls.model_id, settings.repo_path, REPO_ENV, REPO_URL, REPO_PROBE),
            *missing_weights(cls.model_id, settings.pretrained, files=("model_index.json",)),
            *missing_device(cls.model_id, settings.device),
        ]

    def __init__(self, **model_args: Any) -> None:
        super().__init__(**model_args)
        self.pipeline, self.chat = self._load_backend()

    def _load_backend(self) -> tuple[Any, Any]:
        repo = official_checkout(self.model_id, self.settings.repo_path, REPO_ENV, REPO_URL, REPO_PROBE)
        generation = import_official(self.model_id, "omnigen2.pipelines.omnigen2.pipeline_omnigen2", repo)
        chat = import_official(self.model_id, "omnigen2.pipelines.omnigen2.pipeline_omnigen2_chat", repo)
        transformer = import_official(self.model_id, "omnigen2.models.transformers.transformer_omnigen2", repo)
        pipeline = generation.OmniGen2Pipeline.from_pretrained(
            self.settings.pretrained, torch_dtype=self.dtype, trust_remote_code=True
        )
        pipeline.transformer = transformer.OmniGen2Transformer2DModel.from_pretrained(
            self.settings.pretrained, subfolder="transformer", torch_dtype=self.dtype
        )
        pipeline = pipeline.to(self.device)
        pipeline.set_progress_bar_config(disable=True)
        return pipeline, chat.OmniGen2ChatPipeline(**pipeline.components)

    def _settings(self, seed: int) -> dict[str, Any]:
        return {
            "num_inference_steps": self.settings.num_inference_steps,
            "max_sequence_length": 1024,
            "text_guidance_scale": self.settings.text_guidance_scale,
            "image_guidance_scale": self.settings.image_guidance_scale,
            "cfg_range": (0.0, 1.0),
            "negative_prompt": self.settings.negative_prompt,
            "num_images_per_prompt": 1,
            "generator": torch.Generator(device=self.device).manual_seed(seed),
            "output_type": "pil",
        }

    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        seed = int(decoding.get("seed", self.seed))
        with seeded(seed, self.device):
            result = self.chat(
                prompt=prompt,
                input_images=[im.convert("RGB") for im in images] or None,
                height=self.settings.height,
                width=self.settings.width,
                **self._settings(seed),
            )
        if not result.text:
            raise ValueError("omnigen2 chat returned no text")
        return str(result.text).strip()

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        seed = int(decoding["seed"])
        with seeded(seed, self.device):  # the pipeline VAE-encodes input images with torch's global generator
            result = self.pipeline(
                prompt=prompt,
                input_images=[im.convert("RGB") for im in images] or None,
                height=self.settings.height,
                width=self.settings.width,
                **self._settings(seed),
            )
        if not result.images:
            raise ValueError("omnigen2 returned no image")
        return result.images[0].convert("RGB")
