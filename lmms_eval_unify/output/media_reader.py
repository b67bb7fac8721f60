"""Reading the images a record references, through the gate (:mod:`lmms_eval_unify.gate`): confined to the run's
trusted media roots, regular files only, bounded in count, bytes and pixels, decoded strictly. Failures come back
as typed ``OutputFailure`` values."""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from lmms_eval_unify import gate
from lmms_eval_unify.output.failure import OutputFailure
from lmms_eval_unify.run.context import EXTRA_MEDIA_ROOTS_ENV, trusted_media_roots

TRUST_FIX = f"add the folder to ${EXTRA_MEDIA_ROOTS_ENV} to trust it"

_FAILURE_OF: dict[str, str] = {
    "outside_roots": "unsafe_path",
    "bad_path": "unsafe_path",
    "missing": "missing_image",
    "too_many": "too_many_images",
}
"""The ``OutputFailure`` reason of each gate refusal of an output image (any other refusal: ``corrupt_image``)."""

DECODE_ERRORS = (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError)
"""What PIL raises on bytes that are not a whole image."""


def image_failure(refused: gate.Refused) -> OutputFailure:
    """The typed failure of an output image the gate refused."""
    return OutputFailure(_FAILURE_OF.get(refused.reason, "corrupt_image"), str(refused))


def load_media(root: str, paths: Sequence[str]) -> list[Image.Image] | OutputFailure:
    """Load images referenced by a record. Relative paths are joined to ``root``; every path, once
    symlinks are resolved, must lie inside one of the run's trusted media roots (``unsafe_path``)."""
    roots = trusted_media_roots()
    images = []
    try:
        gate.check_count(len(paths), "images", "the output's images")
        for path in paths:
            full = Path(path) if not root and os.path.isabs(path) else gate.join(root, path)
            try:
                images.append(_decoded(read_image_file(full, roots)))
            except DECODE_ERRORS as exc:
                return OutputFailure("corrupt_image", f"{path}: {type(exc).__name__}: {exc}")
    except gate.Refused as refused:
        return image_failure(refused)
    return images


def read_image_file(path: Path, roots: Sequence[Path]) -> bytes:
    """The bytes of an image file that passed the gate (inside ``roots``, a regular file within
    ``image_bytes``), has at most ``image_pixels`` pixels (read from its header, before decoding) and a
    structure that passes ``verify`` (for PNG every chunk CRC and a complete stream, which lmms-eval's global
    truncated-image tolerance skips). Raises ``gate.Refused`` or one of :data:`DECODE_ERRORS`."""
    data = gate.read_bytes(path, "image", roots, TRUST_FIX)
    check_image_bytes(data, path)
    return data


def check_image_bytes(data: bytes, subject: object) -> None:
    """Refuse an encoded image over ``image_bytes`` or ``image_pixels`` (``gate.Refused``, before any pixel is
    decoded), or whose structure fails ``verify`` (one of :data:`DECODE_ERRORS`)."""
    gate.check_count(len(data), "image", f"{subject} ({len(data)} bytes)")
    with Image.open(io.BytesIO(data)) as probe:
        width, height = probe.size
        gate.check_count(width * height, "image_pixels", f"{subject} ({width}x{height} pixels)")
        probe.verify()


def _decoded(data: bytes) -> Image.Image:
    """Decode one checked image; the decoder must fill every pixel. An RGB image is returned as decoded (its
    source is in memory, nothing to close), others converted to RGB."""
    image = Image.open(io.BytesIO(data))
    image.load()
    return image if image.mode == "RGB" else image.convert("RGB")
