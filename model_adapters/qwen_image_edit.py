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

from lmms_eval_unify.generation.adapter import (
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

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        return self.generate_image_batch([(prompt, images, decoding)])[0]

    @torch.inference_mode()
    def generate_image_batch(self, batch: list[tuple[str, list[Image.Image], dict[str, Any]]]) -> list[Image.Image]:
        """One pipeline call per input-image size (the pipeline sizes the whole batch from its first image),
        with one seeded generator per item, so each item starts from the noise it gets alone."""
        for _, images, _ in batch:
            if not images:
                raise ValueError(f"{self.model_id} edits an input image; this request has none (no text-to-image)")
        by_size: dict[tuple[int, int], list[int]] = {}
        for index, (_, images, _) in enumerate(batch):
            by_size.setdefault(images[-1].size, []).append(index)
        out: dict[int, Image.Image] = {}
        for indices in by_size.values():
            result = self.pipeline(
                image=[batch[i][1][-1].convert("RGB") for i in indices],
                prompt=[batch[i][0] for i in indices],
                negative_prompt=[self.settings.negative_prompt] * len(indices),
                true_cfg_scale=self.settings.true_cfg_scale,
                num_inference_steps=self.settings.num_inference_steps,
                height=self.settings.height,
                width=self.settings.width,
                generator=[torch.Generator(device="cpu").manual_seed(int(batch[i][2]["seed"])) for i in indices],
            )
            out.update(zip(indices, result.images, strict=True))
        return [out[i] for i in range(len(batch))]
