"""Reading the images a record references: confined to the run's trusted media roots, regular files only,
bounded in bytes and pixels, decoded strictly. Failures come back as typed ``OutputFailure`` values."""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from lmms_eval_unify.integration.run_context import trusted_media_roots
from lmms_eval_unify.output.failure import OutputFailure

MAX_IMAGE_BYTES = 128 * 1024 * 1024
"""Largest image file a scorer reads (larger ones are ``corrupt_image``, "image too large")."""
MAX_IMAGE_PIXELS = 40_000_000
"""Most pixels (width x height) of an output image a scorer decodes (about 6300 x 6300; the largest
benchmark output is 1024 x 1024); more is ``corrupt_image`` ("image too large") before any pixel is
decoded, which also stops decompression bombs well below PIL's own limit."""


class UnsafePathError(ValueError):
    """A media path that would leave the media root."""


def resolve_media_path(root: str | Path, relative: str) -> Path:
    """Absolute path of ``relative`` inside ``root``; raises ``UnsafePathError`` on traversal or absolute paths."""
    root_path = Path(root).resolve()
    if os.path.isabs(relative):
        raise UnsafePathError(f"absolute media path {relative!r}; records hold paths relative to the root")
    candidate = (root_path / relative).resolve()
    if not candidate.is_relative_to(root_path):
        raise UnsafePathError(f"media path {relative!r} escapes the media root {root_path}")
    return candidate


def load_media(root: str, paths: Sequence[str]) -> list[Image.Image] | OutputFailure:
    """Load images referenced by a record. Relative paths are joined to ``root``; every path, once
    symlinks are resolved, must lie inside one of the run's trusted media roots (``unsafe_path``)."""
    images = []
    for path in paths:
        try:
            full = Path(path) if not root and os.path.isabs(path) else resolve_media_path(root, path)
            images.append(_read_image(confined(full)))
        except UnsafePathError as exc:
            return OutputFailure("unsafe_path", str(exc))
        except FileNotFoundError:
            return OutputFailure("missing_image", f"{path} not found under {root or '/'}")
        except (
            UnidentifiedImageError,
            OSError,
            ValueError,
            SyntaxError,
            Image.DecompressionBombError,
        ) as exc:
            return OutputFailure("corrupt_image", f"{path}: {type(exc).__name__}: {exc}")
    return images


class ImageTooLargeError(ValueError):
    """An output image over :data:`MAX_IMAGE_BYTES` or :data:`MAX_IMAGE_PIXELS` (a ``corrupt_image``)."""


def confined(path: Path) -> Path:
    """``path`` with symlinks resolved, if it lies inside a trusted media root; else ``UnsafePathError``."""
    resolved = path.resolve()
    roots = trusted_media_roots()
    if not any(resolved.is_relative_to(root) for root in roots):
        raise UnsafePathError(
            f"{path} is outside the run's media roots ({', '.join(map(str, roots))}); "
            "add a folder to $LMMS_EVAL_UNIFY_MEDIA_ROOTS to trust it"
        )
    return resolved


def _read_file(path: Path) -> bytes:
    """The bytes of a regular file; never blocks on a FIFO or device (opened non-blocking, then checked)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UnidentifiedImageError(f"{path} is not a regular file")
        if info.st_size > MAX_IMAGE_BYTES:
            raise ImageTooLargeError(f"image too large: {info.st_size} bytes > {MAX_IMAGE_BYTES}")
        return handle.read(MAX_IMAGE_BYTES + 1)


def read_image_file(path: Path) -> bytes:
    """The bytes of an image file that passed the strict checks: a regular file of at most
    :data:`MAX_IMAGE_BYTES`, at most :data:`MAX_IMAGE_PIXELS` pixels (refused before decoding), and a
    structure that passes ``verify`` (for PNG every chunk CRC and a complete stream, which lmms-eval's global
    truncated-image tolerance skips)."""
    data = _read_file(path)
    with Image.open(io.BytesIO(data)) as probe:
        width, height = probe.size
        if width * height > MAX_IMAGE_PIXELS:
            raise ImageTooLargeError(f"image too large: {width}x{height} pixels > {MAX_IMAGE_PIXELS}")
        probe.verify()
    return data


def _read_image(path: Path) -> Image.Image:
    """Decode one image strictly (:func:`read_image_file`); the decoder must fill every pixel. An RGB image
    is returned as decoded (its source is in memory, nothing to close), others converted to RGB."""
    data = read_image_file(path)
    image = Image.open(io.BytesIO(data))
    image.load()
    return image if image.mode == "RGB" else image.convert("RGB")
