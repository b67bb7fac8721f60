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
from PIL import Image
from transformers import BatchFeature, DynamicCache, LogitsProcessorList

from lmms_eval_unify.adapter import (
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

from .hf_common import (
    TEXT_ONLY_GENERATION_NOTE,
    OnceLogger,
    SeededRowSampler,
    chat_messages,
    decode_new_tokens,
    signed_pixels_to_pil,
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
        # The official scripts cast the loaded model with .to(bfloat16), buffers included (the rotary inv_freq);
        # from_pretrained(dtype=) alone keeps that buffer float32, and bf16 answers then part from the official.
        self.model.to(self.device, self.dtype).eval()  # type: ignore[arg-type]  # transformers' @wraps(Module.to)
        self._notes = OnceLogger()

    def official_square(self, image: Image.Image) -> Image.Image:
        """``image`` sized as deepseek-ai/Janus's ``VLMImageProcessor.resize`` sizes it
        (``janus/models/image_processing_vlm.py:127-156``): the longest side to the model's image size, the other
        truncated (at least ``min_size``), bicubic, centred on a square of the mean colour. transformers'
        processor rounds the short side instead (a row more or less), so it gets the official square, which it
        leaves as it is."""
        import torchvision.transforms.functional as tvf

        processor = self.processor.image_processor
        side, (width, height) = int(processor.size["height"]), image.size
        longest = max(width, height)
        size = [
            max(int(height / longest * side), processor.min_size),
            max(int(width / longest * side), processor.min_size),
        ]
        resized = tvf.resize(image.convert("RGB"), size, interpolation=tvf.InterpolationMode.BICUBIC, antialias=True)
        square = Image.new("RGB", (max(resized.size),) * 2, tuple(int(x * 255) for x in processor.image_mean))
        square.paste(resized, ((square.width - resized.width) // 2, (square.height - resized.height) // 2))
        return square

    def _prompt(self, images: list[Image.Image], prompt: str) -> str:
        return self.processor.apply_chat_template(chat_messages(images, prompt), add_generation_prompt=True)

    def _inputs(self, texts: list[str], images: list[Image.Image] | None, mode: str) -> BatchFeature:
        inputs = self.processor(
            text=texts, images=images or None, generation_mode=mode, padding=True, return_tensors="pt"
        )
        return inputs.to(self.device, dtype=self.dtype)

    @torch.inference_mode()
    def understand_batch(self, batch: list[tuple[list[Image.Image], str]], **decoding: Any) -> list[str]:
        texts = [self._prompt(images, prompt) for images, prompt in batch]
        images = [self.official_square(image) for item_images, _ in batch for image in item_images]
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
            cache=DynamicCache(config=self.model.config.get_text_config()),  # the official loop's cache
            do_sample=True,
            temperature=self.settings.image_temperature,
            guidance_scale=1.0,  # guidance is applied by the sampler, before its per-row draw
            logits_processor=LogitsProcessorList([sampler]),
        )
        pixels = self.model.decode_image_tokens(tokens)  # (B, H, W, C) in [-1, 1]
        return [signed_pixels_to_pil(p, channels_first=False) for p in pixels]
