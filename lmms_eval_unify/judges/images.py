"""Turn images (paths, bytes, PIL images) into base64 data URLs with a content hash."""

from __future__ import annotations

import base64
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

ImageInput = str | Path | bytes | Image.Image

_MIME = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


@dataclass(frozen=True)
class EncodedImage:
    """An image as sent to the judge; ``sha256`` hashes exactly the bytes sent."""

    mime: str
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"


def _open(image: ImageInput) -> tuple[Image.Image, bytes | None]:
    """Return a PIL image and, when the input was encoded already, its original bytes."""
    if isinstance(image, Image.Image):
        return image, None
    raw = Path(image).read_bytes() if isinstance(image, str | Path) else bytes(image)
    return Image.open(io.BytesIO(raw)), raw


def encode_image(image: ImageInput, fmt: str = "original", max_width: int | None = None) -> EncodedImage:
    """Encode ``image`` as ``fmt`` ('original', 'png' or 'jpeg'), downscaled to ``max_width`` if wider.

    'original' keeps the file bytes untouched when no resize is needed (PIL inputs become PNG).
    """
    pil, raw = _open(image)
    width = max_width if max_width is not None and pil.width > max_width else None
    if fmt == "original" and raw is not None and width is None and pil.format in _MIME:
        return EncodedImage(_MIME[pil.format], raw)
    if width is not None:
        height = max(1, round(pil.height * width / pil.width))
        pil = pil.resize((width, height), Image.Resampling.LANCZOS)
    target = "JPEG" if fmt == "jpeg" else "PNG"
    if target == "JPEG" and pil.mode not in ("RGB", "L"):
        pil = pil.convert("RGB")
    buffer = io.BytesIO()
    pil.save(buffer, format=target, **_save_options(target))
    return EncodedImage(_MIME[target], buffer.getvalue())


def _save_options(target: str) -> dict[str, Any]:
    return {"quality": 95} if target == "JPEG" else {}
