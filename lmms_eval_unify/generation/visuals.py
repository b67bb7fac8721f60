"""Model inputs from task visuals: images, and videos reduced to frames for models that cannot watch them.

A model without video understanding gets each video as the number of uniformly sampled frames its task names
(``generation_kwargs.num_frames``); a model that takes a single image gets the first image (or first frame).
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

VIDEO_SUFFIXES = frozenset({".mp4", ".avi", ".mov", ".mkv", ".webm", ".gif"})


@dataclass(frozen=True)
class Video:
    """A video input, kept as a path until the model's capabilities say how to present it."""

    path: str


def uniform_frame_indices(n_total: int, n_frames: int) -> list[int]:
    """``n_frames`` indices spread evenly over ``n_total`` frames (centres of equal segments)."""
    if n_total <= 0:
        return []
    if n_total <= n_frames:
        return list(range(n_total))
    return [int((i + 0.5) * n_total / n_frames) for i in range(n_frames)]


def read_video_frames(path: str | Path, n_frames: int) -> list[Image.Image]:
    """Decode the uniformly sampled frames of a video file as RGB images."""
    import av

    with av.open(str(path)) as container:
        frames = [frame.to_image().convert("RGB") for frame in container.decode(video=0)]
    return [frames[i] for i in uniform_frame_indices(len(frames), n_frames)]


def as_visual(item: Any) -> Image.Image | Video:
    """One lmms-eval visual (PIL image, path, HF image dict, ``{"video": path}``) as an image or a video."""
    if isinstance(item, Image.Image):
        return item.convert("RGB")
    if isinstance(item, Video):
        return item
    if isinstance(item, dict) and item.get("video"):
        return Video(str(item["video"]))
    if isinstance(item, dict) and (item.get("bytes") or item.get("path")):
        source = io.BytesIO(item["bytes"]) if item.get("bytes") else item["path"]
        if not item.get("bytes") and Path(item["path"]).suffix.lower() in VIDEO_SUFFIXES:
            return Video(str(item["path"]))
        with Image.open(source) as handle:
            return handle.convert("RGB")
    if isinstance(item, (str, Path)):
        if Path(item).suffix.lower() in VIDEO_SUFFIXES:
            return Video(str(item))
        with Image.open(item) as handle:
            return handle.convert("RGB")
    if isinstance(item, np.ndarray):
        return Image.fromarray(item).convert("RGB")
    raise TypeError(f"unsupported visual of type {type(item).__name__}")


def flatten_visuals(visuals: Any) -> list[Image.Image | Video]:
    """Nested lists of visuals, flattened in order."""
    if visuals is None:
        return []
    if isinstance(visuals, (list, tuple)):
        return [v for item in visuals for v in flatten_visuals(item)]
    return [as_visual(visuals)]


def model_inputs(
    visuals: Any, watches_video: bool, max_images: int | None, n_frames: int | None = None
) -> list[Image.Image | Video]:
    """What a model receives: videos become ``n_frames`` uniformly sampled frames unless it watches video; then
    the list is cut to ``max_images`` (a single-image model gets the first image or first frame).

    ``n_frames`` is the task's ``generation_kwargs.num_frames`` (a benchmark's rule, in its task YAML): a
    video for a model that cannot watch it, in a task that names no frame count, is a ``ValueError``, which fails
    that request with its reason."""
    items: list[Image.Image | Video] = []
    for item in flatten_visuals(visuals):
        if isinstance(item, Video) and not watches_video:
            if n_frames is None:
                raise ValueError(
                    "a video among the inputs of a model that cannot watch video, and the task names no "
                    "generation_kwargs.num_frames (how many frames such a model receives)"
                )
            items.extend(read_video_frames(item.path, n_frames))
        else:
            items.append(item)
    return items if max_images is None else items[:max_images]


def visuals_fingerprint(visuals: Any) -> str:
    """A digest of a doc's visual inputs as lmms-eval hands them over, without decoding files: pixels of
    in-memory images and arrays, bytes of encoded images, and path, size and mtime of files on disk.
    Part of the resume signature, so a stored output is never reused for a different input."""
    digest = hashlib.sha256()

    def add(item: Any) -> None:
        if item is None:
            return
        if isinstance(item, (list, tuple)):
            for part in item:
                add(part)
        elif isinstance(item, Image.Image):
            digest.update(f"image:{item.mode}:{item.size}".encode())
            digest.update(item.tobytes())
        elif isinstance(item, np.ndarray):
            digest.update(f"array:{item.dtype}:{item.shape}".encode())
            digest.update(np.ascontiguousarray(item).tobytes())
        elif isinstance(item, dict) and item.get("bytes"):
            digest.update(b"bytes:" + bytes(item["bytes"]))
        elif isinstance(item, (dict, Video, str, Path)):
            path: Any = item.get("video") or item.get("path") if isinstance(item, dict) else getattr(item, "path", item)
            try:
                stat = Path(path).stat()
                digest.update(f"file:{path}:{stat.st_size}:{stat.st_mtime_ns}".encode())
            except (OSError, TypeError):
                digest.update(f"unreadable:{path!r}".encode())
        else:
            digest.update(f"other:{type(item).__name__}:{item!r}".encode())

    add(visuals)
    return digest.hexdigest()


def to_pil_images(visuals: Any) -> list[Image.Image]:
    """Task visuals (PIL images, paths, HF image dicts, nested lists) as RGB PIL images; no videos."""
    items = flatten_visuals(visuals)
    images = [item for item in items if not isinstance(item, Video)]
    if len(images) < len(items):
        raise TypeError("a video visual where images were expected")
    return images
