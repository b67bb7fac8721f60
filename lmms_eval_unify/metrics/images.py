"""Image inputs: content hashing, batched decoding (on the GPU for JPEG when possible) and tensor transforms."""

from __future__ import annotations

import io
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TypeVar

import numpy as np
import torch
import torchvision.transforms.v2.functional as TF
import xxhash
from PIL import Image
from torchvision.io import ImageReadMode, decode_image, decode_jpeg
from torchvision.transforms import InterpolationMode

from lmms_eval_unify.env_vars import read

ImageInput = Image.Image | str | os.PathLike | torch.Tensor
"""A PIL image, an image file path, or a uint8 tensor shaped [C, H, W] (C in 1, 3, 4)."""

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
_JPEG_MAGIC = b"\xff\xd8"
DECODE_WORKERS_ENV = "LMMS_EVAL_UNIFY_DECODE_WORKERS"
_T = TypeVar("_T")
_Resizable = TypeVar("_Resizable", torch.Tensor, Image.Image)
_R = TypeVar("_R")


def decode_workers() -> int:
    """Threads that read, hash and decode image files: ``$LMMS_EVAL_UNIFY_DECODE_WORKERS``, else min(8, cores)."""
    workers: int | None = read(DECODE_WORKERS_ENV)
    return workers or min(8, os.cpu_count() or 1)


@cache
def _pool(workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="image-decode")


def parallel_map(function: Callable[[_T], _R], inputs: Iterable[_T], workers: int | None = None) -> list[_R]:
    """``[function(x) for x in inputs]`` on a shared thread pool (file reads, hashing and decoding release the
    GIL); order is kept and the first exception is raised as in the serial loop. ``workers=1`` runs inline."""
    inputs = list(inputs)
    workers = decode_workers() if workers is None else workers
    if workers <= 1 or len(inputs) <= 1:
        return [function(x) for x in inputs]
    return list(_pool(workers).map(function, inputs))


@dataclass(frozen=True)
class ImageItem:
    """One input image: its content hash and either its encoded file bytes or its decoded uint8 pixels."""

    key: str
    encoded: bytes | None = None
    pixels: torch.Tensor | None = None


def _digest(*parts: bytes | memoryview) -> str:
    """128-bit XXH3 of the parts (bytes, or views of C-contiguous arrays read in place): the content key of the
    in-process embedding caches. It is not a cryptographic hash and need not be: forging a collision with an
    image needs that image's content, which a model could output directly. It hashes at memory speed, where
    BLAKE2b (1.4 GB/s here) cost more CPU time than a tiny backbone's forward pass (docs/benchmarks.md)."""
    h = xxhash.xxh3_128()
    for part in parts:
        h.update(part)
    return h.hexdigest()


def _rgb_uint8(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.dtype != torch.uint8 or tensor.ndim != 3 or tensor.shape[0] not in (1, 3, 4):
        raise ValueError(f"expected a uint8 tensor [C,H,W] with C in (1,3,4), got {tensor.dtype} {tuple(tensor.shape)}")
    if tensor.shape[0] == 1:
        return tensor.expand(3, -1, -1)
    return tensor[:3]


def image_item(image: ImageInput) -> ImageItem:
    """Hash one input by content (file bytes, PIL pixels or tensor pixels) without decoding files."""
    if isinstance(image, str | os.PathLike):
        with open(image, "rb") as f:
            data = f.read()
        return ImageItem(key="file:" + _digest(data), encoded=data)
    if isinstance(image, Image.Image):
        pixels = torch.from_numpy(_pil_to_array(image)).permute(2, 0, 1)
    elif isinstance(image, torch.Tensor):
        pixels = _rgb_uint8(image)
    else:
        raise TypeError(f"unsupported image input {type(image).__name__}; expected PIL image, path or uint8 tensor")
    pixels = pixels.contiguous()
    cpu = pixels.cpu()
    return ImageItem(key="px:" + _digest(str(tuple(cpu.shape)).encode(), cpu.numpy().data), pixels=pixels)


def _pil_to_array(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.uint8).copy()


def _decode_with_pil(data: bytes) -> torch.Tensor:
    return torch.from_numpy(_pil_to_array(Image.open(io.BytesIO(data)))).permute(2, 0, 1)


def _decode_on_cpu(data: bytes, pil: bool) -> torch.Tensor:
    if not pil:
        try:
            decoded = decode_image(torch.frombuffer(bytearray(data), dtype=torch.uint8), mode=ImageReadMode.RGB)
        except RuntimeError:  # formats torchvision cannot decode (e.g. BMP, TIFF) go through PIL
            decoded = None
        if decoded is not None and decoded.dtype == torch.uint8:  # 16-bit PNGs come back uint16: PIL reads them
            return decoded
    return _decode_with_pil(data)


def prefetched(function: Callable[[_T], _R], inputs: Sequence[_T]) -> Iterable[_R]:
    """Yield ``function(x)`` for each input in order while the next one is computed on a background thread
    (decoding batch k+1 overlaps the encoder's forward pass on batch k)."""
    if not inputs:
        return
    ahead = _prefetch_pool().submit(function, inputs[0])
    for nxt in inputs[1:]:
        current, ahead = ahead.result(), _prefetch_pool().submit(function, nxt)
        yield current
    yield ahead.result()


@lru_cache(maxsize=1)
def _prefetch_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="image-prefetch")


def _host_pixels(item: ImageItem, pin: bool, pil: bool) -> torch.Tensor:
    if item.pixels is not None:
        pixels = item.pixels
    elif item.encoded is not None:
        pixels = _decode_on_cpu(item.encoded, pil)
    else:
        raise ValueError(f"image {item.key} holds neither file bytes nor pixels")
    return pixels.pin_memory() if pin and pixels.device.type == "cpu" else pixels


def decode_items(
    items: Sequence[ImageItem], device: torch.device, workers: int | None = None, pil: bool = False
) -> list[torch.Tensor]:
    """Decode items to uint8 [3,H,W] tensors on `device`.

    On CUDA, JPEG files are decoded on the GPU in one call; other files are decoded by `workers` threads
    (default `decode_workers()`) into pinned memory and copied without blocking. `pil=True` decodes every
    file on the host as ``Image.open(file).convert("RGB")`` does (what PIL-based reference scripts read;
    torchvision differs on e.g. 16-bit PNGs).
    """
    out: list[torch.Tensor | None] = [None] * len(items)
    gpu_jpeg = {
        i: it.encoded
        for i, it in enumerate(items)
        if not pil and device.type == "cuda" and it.encoded and it.encoded[:2] == _JPEG_MAGIC
    }
    if gpu_jpeg:
        data = [torch.frombuffer(bytearray(encoded), dtype=torch.uint8) for encoded in gpu_jpeg.values()]
        for i, pixels in zip(gpu_jpeg, decode_jpeg(data, mode=ImageReadMode.RGB, device=device), strict=True):
            out[i] = pixels
    on_host = [i for i in range(len(items)) if out[i] is None]
    pin = device.type == "cuda" and torch.cuda.is_available()
    decoded = parallel_map(lambda i: _host_pixels(items[i], pin, pil), on_host, workers)
    for i, pixels in zip(on_host, decoded, strict=True):
        out[i] = pixels.to(device, non_blocking=True)
    return out  # type: ignore[return-value]


def group_by_shape(images: Sequence[torch.Tensor]) -> list[tuple[list[int], torch.Tensor]]:
    """Stack same-shaped tensors so that transforms run once per shape: [(indices, batch)]."""
    groups: dict[tuple[int, ...], list[int]] = defaultdict(list)
    for i, image in enumerate(images):
        groups[tuple(image.shape)].append(i)
    return [(idx, torch.stack([images[i] for i in idx])) for idx in groups.values()]


@dataclass(frozen=True)
class ImageTransform:
    """Batched uint8 -> model-input transform.

    `resize_mode`: "shortest_crop" (resize the short side to `size`, centre-crop; CLIP eval transform),
    "squash" (resize to size x size, aspect not kept) or "none". The result is float in [0,1], then
    normalised by mean/std when given. `pil=False` resizes the batch as tensors on its device (antialiased;
    within a few uint8 steps of PIL); `pil=True` resizes each image as a PIL image and scales it on the CPU,
    bit for bit what torchvision's ``Resize``/``CenterCrop`` + ``ToTensor`` (+ ``Normalize``) give on that
    PIL image, then moves the result to the batch's device.
    """

    size: int
    resize_mode: str = "squash"
    interpolation: InterpolationMode = InterpolationMode.BICUBIC
    antialias: bool = True
    mean: tuple[float, float, float] | None = None
    std: tuple[float, float, float] | None = None
    pil: bool = False

    def __call__(self, batch: torch.Tensor) -> torch.Tensor:
        if not self.pil:
            return self._scale(self._resize(batch))
        if batch.dtype != torch.uint8:
            raise ValueError(f"the PIL transform takes uint8 images, got {batch.dtype}")
        resized = [TF.pil_to_tensor(self._resize(TF.to_pil_image(image))) for image in batch.cpu()]
        return self._scale(torch.stack(resized)).to(batch.device)

    def _resize(self, images: _Resizable) -> _Resizable:
        """Resize a tensor batch or one PIL image (torchvision's functional API dispatches on the type)."""
        if self.resize_mode == "shortest_crop":
            images = TF.resize(images, [self.size], interpolation=self.interpolation, antialias=self.antialias)
            return TF.center_crop(images, [self.size, self.size])
        if self.resize_mode == "squash":
            return TF.resize(images, [self.size, self.size], interpolation=self.interpolation, antialias=self.antialias)
        if self.resize_mode != "none":
            raise ValueError(f"unknown resize_mode {self.resize_mode!r}")
        return images

    def _scale(self, batch: torch.Tensor) -> torch.Tensor:
        batch = batch.float() / 255.0 if batch.dtype == torch.uint8 else batch.float()
        if self.mean is not None and self.std is not None:
            batch = TF.normalize(batch, list(self.mean), list(self.std))
        return batch
