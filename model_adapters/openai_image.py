"""Any OpenAI-compatible endpoint: chat completions for understanding, the Images API for drawing.

Understanding sends one user message with the images as ``data:image/png;base64`` URLs followed by the
prompt. Generation calls ``POST /images/generations`` (JSON) without input images and
``POST /images/edits`` (multipart: field ``image`` for one file, ``image[]`` for several) with them, and
reads ``data[0].b64_json`` (GPT image models always return it; a ``url`` is downloaded instead). Transient
errors (429, 5xx, timeouts) are retried by the OpenAI client with exponential backoff honouring
``Retry-After``; what still fails is recorded for that sample by the base class.
"""

from __future__ import annotations

import base64
import io
import os
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from lmms_eval_unify.generation.adapter import UNDERSTAND_AND_GENERATE, ModelSettings, UnifiedModel, run_only


def png_bytes(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def data_url(image: Image.Image) -> str:
    return "data:image/png;base64," + base64.b64encode(png_bytes(image)).decode()


def _base_url_from_environment() -> str | None:
    return os.environ.get("OPENAI_BASE_URL")


@dataclass(frozen=True, kw_only=True)
class OpenAIImageSettings(ModelSettings):
    model: str = "gpt-image-1"
    """Images API model."""
    chat_model: str = "gpt-4.1"
    """Chat model that answers (understanding)."""
    base_url: str | None = field(default_factory=_base_url_from_environment)
    """Endpoint (default ``$OPENAI_BASE_URL``, else OpenAI's)."""
    api_key_env: str = run_only("OPENAI_API_KEY")
    """Name of the environment variable holding the API key."""
    size: str = "1024x1024"
    quality: str | None = None
    edit: bool = True
    """Send input images to ``/images/edits`` (``false``: generate from the text only)."""
    max_retries: int = run_only(5)
    timeout: float = run_only(300.0)


class OpenAIImage(UnifiedModel):
    """GPT-image (or any gateway speaking the same API) as a unified model."""

    model_id = "openai_image"
    capabilities = UNDERSTAND_AND_GENERATE
    settings_class = OpenAIImageSettings
    settings: OpenAIImageSettings

    def __init__(self, **model_args: Any) -> None:
        super().__init__(**model_args)
        from openai import OpenAI

        settings = self.settings
        api_key = os.environ.get(settings.api_key_env)
        if not api_key:
            raise RuntimeError(
                f"{self.model_id}: set the API key in ${settings.api_key_env} (model argument api_key_env "
                "names the variable)"
            )
        self.client = OpenAI(
            api_key=api_key,
            base_url=settings.base_url,
            max_retries=settings.max_retries,
            timeout=settings.timeout,
        )

    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": data_url(im)}} for im in images]
        content.append({"type": "text", "text": prompt})
        options: dict[str, Any] = {"max_tokens": int(decoding.get("max_new_tokens", 1024))}
        if "temperature" in decoding:
            options["temperature"] = float(decoding["temperature"])
        if "seed" in decoding:
            options["seed"] = int(decoding["seed"])
        response = self.client.chat.completions.create(
            model=self.settings.chat_model, messages=[{"role": "user", "content": content}], **options
        )
        return response.choices[0].message.content or ""

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        options: dict[str, Any] = {
            "model": self.settings.model,
            "prompt": prompt,
            "size": self.settings.size,
            "n": 1,
        }
        if self.settings.quality:
            options["quality"] = self.settings.quality
        if images and self.settings.edit:
            files = [(f"image_{i}.png", png_bytes(im), "image/png") for i, im in enumerate(images)]
            response = self.client.images.edit(image=files[0] if len(files) == 1 else files, **options)
        else:
            response = self.client.images.generate(**options)
        if not response.data:
            raise ValueError("the Images API returned no image")
        return self._decode(response.data[0])

    def _decode(self, item: Any) -> Image.Image:
        if item.b64_json:
            raw = base64.b64decode(item.b64_json)
        elif item.url:
            raw = _download(item.url)
        else:
            raise ValueError("the Images API returned neither b64_json nor url")
        image = Image.open(io.BytesIO(raw))
        image.load()
        return image.convert("RGB")


def _download(url: str) -> bytes:
    import httpx

    response = httpx.get(url, timeout=120, follow_redirects=True)
    response.raise_for_status()
    return response.content
