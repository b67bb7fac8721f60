"""Qwen-Image-Edit through diffusers' ``QwenImageEditPipeline`` (image editing; the generator of ``composed``).

Defaults are the model card's: ``true_cfg_scale=4.0`` with ``negative_prompt=" "`` and 50 steps.
``guidance_scale`` is not used: this transformer has no guidance embedding, so diffusers ignores it and
classifier-free guidance runs only through ``true_cfg_scale`` with a negative prompt (upstream lmms-eval's
wrapper passes only ``guidance_scale`` and therefore runs without CFG). The pipeline edits one image: the
last input image of a request (the current state in a step loop; the only original image in
generate-then-answer). A request without an input image is an error: this checkpoint does not do
text-to-image.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from PIL import Image

from lmms_eval_unify.adapter import (
    GENERATE_IMAGE,
    Missing,
    ModelSettings,
    UnifiedModel,
    missing_code,
    missing_device,
    missing_weights,
)


@dataclass(frozen=True, kw_only=True)
class QwenImageEditSettings(ModelSettings):
    pretrained: str = "Qwen/Qwen-Image-Edit"
    num_inference_steps: int = 50
    true_cfg_scale: float = 4.0
    negative_prompt: str = " "
    height: int | None = None
    """Output height (``None``: the pipeline's choice from the input image)."""
    width: int | None = None


class QwenImageEdit(UnifiedModel):
    """Qwen-Image-Edit (editing only; pair it with an understanding model through ``composed``)."""

    model_id = "qwen_image_edit"
    capabilities = frozenset({GENERATE_IMAGE})
    max_input_images = None
    settings_class = QwenImageEditSettings
    settings: QwenImageEditSettings

    @classmethod
    def missing(cls, settings: QwenImageEditSettings) -> list[Missing]:
        return [
            *missing_code(cls.model_id, "diffusers", ("QwenImageEditPipeline",), "pip install -U diffusers"),
            *missing_weights(cls.model_id, settings.pretrained, files=("model_index.json",)),
            *missing_device(cls.model_id, settings.device),
        ]

    def __init__(self, **model_args: Any) -> None:
        super().__init__(**model_args)
        from diffusers import QwenImageEditPipeline

        self.pipeline = QwenImageEditPipeline.from_pretrained(self.settings.pretrained, dtype=self.dtype)
        self.pipeline.to(self.device)
        self.pipeline.set_progress_bar_config(disable=True)

    @torch.inference_mode()
    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        """The model card's call: one input image (the last), one prompt, one generator seeded per sample.

        Requests are not batched into one pipeline call: given lists, diffusers' ``QwenImageEditPipeline`` does not
        resize the images its Qwen2.5-VL text encoder reads (``VaeImageProcessor.resize`` returns a list
        unchanged), so a batched edit would condition on the image at its original size, unlike the model card's
        call (measured: bench/parity/qwen_image_edit.py); pre-sizing cannot fix it, because the pipeline derives its
        working size again from the resized image and that size differs for about a quarter of aspect ratios."""
        if not images:
            raise ValueError(f"{self.model_id} edits an input image; this request has none (no text-to-image)")
        result = self.pipeline(
            image=images[-1].convert("RGB"),
            prompt=prompt,
            negative_prompt=self.settings.negative_prompt,
            true_cfg_scale=self.settings.true_cfg_scale,
            num_inference_steps=self.settings.num_inference_steps,
            height=self.settings.height,
            width=self.settings.width,
            generator=torch.Generator(device="cpu").manual_seed(int(decoding["seed"])),
        )
        return result.images[0]
