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
    """One decoded image with values in [-1, 1] (``CHW`` or ``HWC``) as an RGB PIL image, converted to 8 bits as
    both official scripts do: ``clip((x + 1) / 2 * 255, 0, 255)`` truncated to ``uint8`` (Janus
    ``generation_inference.py:101-104``, Emu3 ``astype(np.uint8)``), not rounded."""
    values = pixels.detach().float().cpu()
    if channels_first:
        values = values.permute(1, 2, 0)
    return Image.fromarray(((values + 1) / 2 * 255).clamp(0, 255).to(torch.uint8).numpy())


def chat_messages(images: list[Image.Image], prompt: str) -> list[dict[str, Any]]:
    """One user turn: the images (in order) followed by the prompt, in the processor chat format."""
    content: list[dict[str, Any]] = [{"type": "image"} for _ in images]
    content.append({"type": "text", "text": prompt})
    return [{"role": "user", "content": content}]


def decode_new_tokens(processor: Any, output: torch.Tensor, prompt_length: int) -> list[str]:
    """The generated continuation of each row, special tokens dropped and whitespace trimmed."""
    return [text.strip() for text in processor.batch_decode(output[:, prompt_length:], skip_special_tokens=True)]


class OnceLogger:
    """Logs a warning the first time each distinct message is seen (e.g. once per run, not per sample)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def warn(self, message: str) -> None:
        if message not in self._seen:
            self._seen.add(message)
            logger.warning(message)


class SeededRowSampler:
    """A logits processor that samples each row with its own seeded generator and returns scores that leave
    only the sampled token, so ``generate``'s own draw keeps it.

    ``warpers`` (:func:`sampling_warpers`) run first: ``generate`` appends its own temperature/top-k/top-p after
    custom processors, where a sampler that already drew would make them void.

    It lets one batched ``generate`` call give every image the tokens its per-sample seed gives alone:
    ``torch.multinomial`` on row i with a generator seeded ``seeds[i]`` draws what the global generator seeded
    ``seeds[i]`` draws for a batch of one. Placed last among the processors it sees the final scores. With
    ``guidance_scale`` it first applies classifier-free guidance to scores that arrive as (conditional rows,
    unconditional rows), as Janus's image loop produces them.
    """

    def __init__(
        self,
        seeds: list[int],
        device: torch.device,
        guidance_scale: float | None = None,
        warpers: Any = None,
    ) -> None:
        self.guidance_scale = guidance_scale
        self.warpers = warpers
        self.generators = [torch.Generator(device=device).manual_seed(int(seed)) for seed in seeds]

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self.guidance_scale is not None:
            conditional, unconditional = scores.split(scores.shape[0] // 2, dim=0)
            scores = unconditional + (conditional - unconditional) * self.guidance_scale
        if self.warpers is not None:
            scores = self.warpers(input_ids, scores)
        probs = torch.softmax(scores, dim=-1)
        tokens = torch.cat(
            [torch.multinomial(probs[i : i + 1], 1, generator=g) for i, g in enumerate(self.generators)]
        ).squeeze(-1)
        only_sampled = torch.full_like(scores, float("-inf"))
        only_sampled[torch.arange(len(tokens), device=tokens.device), tokens] = 0.0
        return only_sampled


def sampling_warpers(temperature: float | None = None, top_k: int | None = None, top_p: float | None = None) -> Any:
    """The temperature, top-k and top-p warpers ``generate`` would build for these settings when sampling, in its
    order, for a :class:`SeededRowSampler` to apply before it draws."""
    from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    warpers = LogitsProcessorList()
    if temperature is not None and temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(temperature))
    if top_k:
        warpers.append(TopKLogitsWarper(top_k=top_k))
    if top_p is not None and top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p=top_p))
    return warpers
