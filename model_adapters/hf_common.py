"""Helpers shared by the adapters built on transformers' native unified models (Janus-Pro, Emu3)."""

from __future__ import annotations

from typing import Any

import torch
from loguru import logger
from PIL import Image

TEXT_ONLY_GENERATION_NOTE = (
    "{model} generates images from text only: the {n} input image(s) of this request are not given to the "
    "generator (the model has no image editing)"
)


def signed_pixels_to_pil(pixels: torch.Tensor, channels_first: bool) -> Image.Image:
    """One decoded image with values in [-1, 1] (``CHW`` or ``HWC``) as an RGB PIL image."""
    array = pixels.detach().float().cpu()
    if channels_first:
        array = array.permute(1, 2, 0)
    array = ((array + 1) / 2 * 255).clamp(0, 255).round().to(torch.uint8).numpy()
    return Image.fromarray(array)


def chat_messages(images: list[Image.Image], prompt: str) -> list[dict[str, Any]]:
    """One user turn: the images (in order) followed by the prompt, in the processor chat format."""
    content: list[dict[str, Any]] = [{"type": "image"} for _ in images]
    content.append({"type": "text", "text": prompt})
    return [{"role": "user", "content": content}]


def decode_new_tokens(processor: Any, output: torch.Tensor, prompt_length: int) -> list[str]:
    """The generated continuation of each row, special tokens dropped and whitespace trimmed."""
    return [
        text.strip() for text in processor.batch_decode(output[:, prompt_length:], skip_special_tokens=True)
    ]


class OnceLogger:
    """Logs a warning the first time each distinct message is seen (e.g. once per run, not per sample)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def warn(self, message: str) -> None:
        if message not in self._seen:
            self._seen.add(message)
            logger.warning(message)
