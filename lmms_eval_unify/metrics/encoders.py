"""Batched, cached embedding of images (and texts) by any backbone: the one place encoders are run."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import torch

from lmms_eval_unify.metrics.config import MetricConfig, encoder_autocast
from lmms_eval_unify.metrics.images import (
    ImageInput,
    ImageItem,
    ImageTransform,
    decode_items,
    group_by_shape,
    image_item,
    parallel_map,
    prefetched,
)

MAX_CACHED_EMBEDDINGS = 200_000


def as_channels_last(module_or_batch: torch.nn.Module | torch.Tensor) -> Any:
    """A convolutional network, or its [N, C, H, W] input, in channels-last memory format, which selects the
    faster conv kernels (CPU, measured: per-pair FID 1.24-1.46x, LPIPS-Alex 1.04-1.25x; docs/benchmarks.md).
    Results change only by float rounding."""
    if isinstance(module_or_batch, torch.Tensor):
        return module_or_batch.contiguous(memory_format=torch.channels_last)
    return module_or_batch.to(memory_format=torch.channels_last)


class EmbeddingCache:
    """Thread-safe LRU map content-key -> fp32 CPU embedding, filled in batches."""

    def __init__(self, max_entries: int = MAX_CACHED_EMBEDDINGS) -> None:
        self._entries: OrderedDict[str, torch.Tensor] = OrderedDict()
        self._lock = threading.Lock()
        self.max_entries = max_entries

    def __len__(self) -> int:
        return len(self._entries)

    def get_or_compute(self, keys: Sequence[str], compute: Callable[[list[int]], torch.Tensor]) -> torch.Tensor:
        """Embeddings [N, D] for `keys`; `compute(indices)` embeds the first occurrence of each missing key."""
        with self._lock:
            found = {k: self._entries[k] for k in keys if k in self._entries}
            for k in found:
                self._entries.move_to_end(k)
        first_missing: dict[str, int] = {}
        for i, key in enumerate(keys):
            if key not in found:
                first_missing.setdefault(key, i)
        if first_missing:
            computed = compute(list(first_missing.values()))
            fresh = dict(zip(first_missing, computed.float().cpu(), strict=True))
            found.update(fresh)
            with self._lock:
                self._entries.update(fresh)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        return torch.stack([found[k] for k in keys])


def unique_image_items(images: Sequence[ImageInput]) -> list[ImageItem]:
    """`image_item` of every input, reading and hashing each distinct path or object only once per call
    (shared candidates repeat the same path or tensor for every sample); distinct inputs are hashed in
    parallel so that hashing does not serialise the pipeline."""
    first_of: dict[tuple[str, object], ImageInput] = {}
    references = []
    for image in images:
        reference = ("path", os.fspath(image)) if isinstance(image, str | os.PathLike) else ("object", id(image))
        first_of.setdefault(reference, image)
        references.append(reference)
    by_reference = dict(zip(first_of, parallel_map(image_item, first_of.values()), strict=True))
    return [by_reference[reference] for reference in references]


class ImageEncoder:
    """Runs `forward` on batches of transformed images with caching by content hash.

    The forward lock makes one backbone safe to share between lmms-eval's `process_results` threads (some
    backbones, e.g. DreamSim's ViT extractor, keep per-call state in hooks).
    """

    def __init__(
        self,
        config: MetricConfig,
        transform: ImageTransform,
        forward: Callable[[torch.Tensor], torch.Tensor],
        channels_last: bool = False,
    ) -> None:
        self.config = config
        self.transform = transform
        self.forward = forward
        self.channels_last = channels_last
        self.cache = EmbeddingCache()
        self.forward_lock = threading.Lock()

    def embed(self, images: Sequence[ImageInput]) -> torch.Tensor:
        """fp32 CPU features [N, D] of the images, in input order."""
        items = unique_image_items(images)

        def compute(indices: list[int]) -> torch.Tensor:  # decode one batch at a time to bound memory
            step = self.config.batch_size
            chunks = [indices[start : start + step] for start in range(0, len(indices), step)]
            device = self.config.torch_device
            pil = self.transform.pil  # a PIL transform reproduces PIL pipelines: decode files with PIL too
            batches = prefetched(lambda chunk: decode_items([items[i] for i in chunk], device, pil=pil), chunks)
            return torch.cat([self.embed_pixels(pixels) for pixels in batches])

        return self.cache.get_or_compute([item.key for item in items], compute)

    def embed_pixels(self, pixels: Sequence[torch.Tensor]) -> torch.Tensor:
        """Features of decoded uint8 [3,H,W] images (no caching): transform per shape, forward per batch."""
        groups = group_by_shape(pixels)
        if len(groups) == 1:  # one shape (the usual case): the same batches, without splitting and restacking
            prepared = self.transform(groups[0][1]).contiguous()  # as torch.stack of its rows gave
            return torch.cat([self._forward(prepared[start : start + self.config.batch_size]).float()
                              for start in range(0, len(pixels), self.config.batch_size)])  # fmt: skip
        rows: list[torch.Tensor] = [torch.empty(0)] * len(pixels)
        for indices, batch in groups:
            for i, tensor in zip(indices, self.transform(batch), strict=True):
                rows[i] = tensor
        features: list[torch.Tensor] = [torch.empty(0)] * len(pixels)
        for indices, batch in group_by_shape(rows):
            for start in range(0, len(indices), self.config.batch_size):
                chunk = indices[start : start + self.config.batch_size]
                for i, row in zip(chunk, self._forward(batch[start : start + len(chunk)]).float(), strict=True):
                    features[i] = row
        return torch.stack(features)

    def _forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """The backbone on one batch of transformed images (channels-last first for convolutional ones)."""
        if self.channels_last:
            inputs = as_channels_last(inputs)
        with self.forward_lock, encoder_autocast(self.config):
            return self.forward(inputs)
