"""Janus-Pro (DeepSeek) through transformers' native ``JanusForConditionalGeneration``.

Understanding: the processor's chat template with one ``<image_placeholder>`` per input image, then
``generate(generation_mode="text")``. Generation: the same chat template, ``generation_mode="image"``
(the processor appends the begin-of-image token), classifier-free guidance and sampling as in the official
``generation_inference.py`` (cfg 5, temperature 1), then ``decode_image_tokens`` (channels-last, [-1, 1]).
Janus-Pro cannot edit: input images of a generation request are not given to the generator (logged once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from lmms_eval_unify.model_adapters.hf_common import (
    TEXT_ONLY_GENERATION_NOTE,
    OnceLogger,
    SeededRowSampler,
    chat_messages,
    decode_new_tokens,
    signed_pixels_to_pil,
)
from PIL import Image
from transformers import LogitsProcessorList

from lmms_eval_unify.generation.adapter import (
    UNDERSTAND_AND_GENERATE,
    Missing,
    ModelSettings,
    UnifiedModel,
    decoding_options,
    missing_code,
    missing_device,
    missing_weights,
    seeded,
)

DEFAULT_CHECKPOINT = "deepseek-community/Janus-Pro-7B"


@dataclass(frozen=True, kw_only=True)
class JanusProSettings(ModelSettings):
    pretrained: str = DEFAULT_CHECKPOINT
    guidance_scale: float = 5.0
    image_temperature: float = 1.0
    max_new_tokens: int | None = None
    """Caps every task's ``max_new_tokens`` (``None``: the task's value)."""


class JanusPro(UnifiedModel):
    """Janus-Pro 1B/7B (HF-format checkpoints ``deepseek-community/Janus-Pro-*``)."""

    model_id = "janus_pro"
    capabilities = UNDERSTAND_AND_GENERATE
    settings_class = JanusProSettings
    settings: JanusProSettings

    @classmethod
    def missing(cls, settings: JanusProSettings) -> list[Missing]:
        return [
            *missing_code(
                cls.model_id,
                "transformers",
                ("JanusForConditionalGeneration", "JanusProcessor"),
                "pip install -U 'transformers>=4.52'",
            ),
            *missing_weights(cls.model_id, settings.pretrained),
            *missing_device(cls.model_id, settings.device),
        ]

    def __init__(self, **model_args: Any) -> None:
        super().__init__(**model_args)
        from transformers import JanusForConditionalGeneration, JanusProcessor

        self.processor = JanusProcessor.from_pretrained(self.settings.pretrained)
        self.processor.tokenizer.padding_side = "left"
        self.model = JanusForConditionalGeneration.from_pretrained(self.settings.pretrained, dtype=self.dtype)
        self.model.to(self.device).eval()
        self._notes = OnceLogger()

    def _prompt(self, images: list[Image.Image], prompt: str) -> str:
        return self.processor.apply_chat_template(chat_messages(images, prompt), add_generation_prompt=True)

    def _inputs(self, texts: list[str], images: list[Image.Image] | None, mode: str) -> dict[str, torch.Tensor]:
        inputs = self.processor(
            text=texts, images=images or None, generation_mode=mode, padding=True, return_tensors="pt"
        )
        return inputs.to(self.device, dtype=self.dtype)

    @torch.inference_mode()
    def understand_batch(self, batch: list[tuple[list[Image.Image], str]], **decoding: Any) -> list[str]:
        texts = [self._prompt(images, prompt) for images, prompt in batch]
        images = [image for item_images, _ in batch for image in item_images]
        inputs = self._inputs(texts, images, "text")
        with seeded(int(decoding.get("seed", self.seed)), self.device):
            output = self.model.generate(
                **inputs, generation_mode="text", **decoding_options(decoding, self.settings.max_new_tokens)
            )
        return decode_new_tokens(self.processor, output, inputs["input_ids"].shape[1])

    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        return self.understand_batch([(images, prompt)], **decoding)[0]

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        return self.generate_image_batch([(prompt, images, decoding)])[0]

    @torch.inference_mode()
    def generate_image_batch(self, batch: list[tuple[str, list[Image.Image], dict[str, Any]]]) -> list[Image.Image]:
        """One ``generate`` call for the batch (CFG pairs batched); each image keeps its own seed."""
        if any(images for _, images, _ in batch):
            n = max(len(images) for _, images, _ in batch)
            self._notes.warn(TEXT_ONLY_GENERATION_NOTE.format(model=self.model_id, n=n))
        inputs = self._inputs([self._prompt([], prompt) for prompt, _, _ in batch], None, "image")
        seeds = [int(decoding["seed"]) for _, _, decoding in batch]
        sampler = SeededRowSampler(seeds, self.device, guidance_scale=self.settings.guidance_scale)
        tokens = self.model.generate(
            **inputs,
            generation_mode="image",
            do_sample=True,
            temperature=self.settings.image_temperature,
            guidance_scale=1.0,  # guidance is applied by the sampler, before its per-row draw
            logits_processor=LogitsProcessorList([sampler]),
        )
        pixels = self.model.decode_image_tokens(tokens)  # (B, H, W, C) in [-1, 1]
        return [signed_pixels_to_pil(p, channels_first=False) for p in pixels]
