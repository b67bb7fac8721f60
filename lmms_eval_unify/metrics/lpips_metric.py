"""LPIPS distance (lpips package, AlexNet by default) with the `official` (unscaled) or `standard` input scaling."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
import torchvision

from lmms_eval_unify.metrics.config import (
    MetricConfig,
    Variant,
    as_config,
    check_variant,
    encoder_autocast,
    find_weights_file,
    seeded_random_init,
    torch_hub_checkpoint,
)
from lmms_eval_unify.metrics.encoders import as_channels_last, unique_image_items
from lmms_eval_unify.metrics.images import ImageInput, decode_items, group_by_shape
from lmms_eval_unify.metrics.registry import get_backbone

# backbone -> (torchvision constructor, env var name, torchvision cache file name)
_TRUNKS = {
    "alex": (torchvision.models.alexnet, "ALEXNET_CKPT", "alexnet-owt-7be5be79.pth"),
    "vgg": (torchvision.models.vgg16, "VGG16_CKPT", "vgg16-397923af.pth"),
}


MIN_SIDE = {"alex": 31, "vgg": 16}
"""Smallest height and width of a pair (after the pair rule's resize to the smaller height and width) that each
trunk's pooling layers accept: lpips raises ``RuntimeError`` on anything smaller (measured with lpips 0.1.4)."""


class ImageTooSmallError(ValueError):
    """A pair below :data:`MIN_SIDE` of the LPIPS trunk; ``indices`` are the pairs concerned."""

    def __init__(self, indices: list[int], sizes: list[tuple[int, int]], min_side: int) -> None:
        self.indices = indices
        super().__init__(f"LPIPS needs pairs of at least {min_side}x{min_side} pixels; pairs {indices} are {sizes}")


def lpips_min_side(config: MetricConfig | Mapping[str, Any] | None = None) -> int:
    """The smallest side a pair may have for the configured LPIPS trunk (:data:`MIN_SIDE`)."""
    return MIN_SIDE[as_config("lpips", config).backbone]


@dataclass
class LpipsBackbone:
    model: torch.nn.Module  # lpips.LPIPS
    lock: threading.Lock
    config: MetricConfig


def trunk_checkpoint(config: MetricConfig) -> str:
    """The torchvision checkpoint of the LPIPS trunk (``MissingWeightsError`` if absent)."""
    _, env_name, filename = _TRUNKS[config.backbone]
    return find_weights_file(
        config,
        env_name,
        [torch_hub_checkpoint(filename)],
        f"It is torchvision's ImageNet {config.backbone} checkpoint ({filename}, download.pytorch.org/models/).",
    )


def _load_trunk_weights(model: Any, backbone: str, path: str) -> None:
    """Load torchvision's trunk checkpoint into an ``lpips.LPIPS`` (lpips has no type information)."""
    trunk = _TRUNKS[backbone][0]()
    trunk.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    # lpips splits `trunk.features` into slices whose children are named by their index in `features`.
    for slice_index in range(1, model.net.N_slices + 1):
        for name, layer in getattr(model.net, f"slice{slice_index}").named_children():
            layer.load_state_dict(trunk.features[int(name)].state_dict())


def load_lpips(config: MetricConfig) -> LpipsBackbone:
    """LPIPS with the packaged linear heads; the trunk comes from a local torchvision checkpoint."""
    if config.backbone not in _TRUNKS:
        raise ValueError(f"unsupported LPIPS backbone {config.backbone!r}; expected one of {sorted(_TRUNKS)}")
    import lpips  # imported on first use, like every backbone library

    trunk_path = None if config.random_weights else trunk_checkpoint(config)
    # lpips 0.1.4 still passes torchvision's deprecated `pretrained=` argument
    with seeded_random_init(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning, module="torchvision")
        model = lpips.LPIPS(net=config.backbone, pnet_rand=True, verbose=False)
    if trunk_path is not None:
        _load_trunk_weights(model, config.backbone, trunk_path)
    model = as_channels_last(model.eval().requires_grad_(False).to(config.torch_device))
    return LpipsBackbone(model, threading.Lock(), config)


def resize_pair_to_common_size(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The pair rule: float [0,1] images of different shapes are bilinearly resized to (min H, min W)."""
    a, b = a.float() / 255.0, b.float() / 255.0
    if a.shape == b.shape:
        return a, b
    size = (min(a.shape[-2], b.shape[-2]), min(a.shape[-1], b.shape[-1]))

    def resize(x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x[None], size=size, mode="bilinear", align_corners=False)[0]

    return resize(a), resize(b)


def lpips_distance(
    images_a: Sequence[ImageInput],
    images_b: Sequence[ImageInput],
    *,
    variant: Variant | None = None,
    config: MetricConfig | Mapping[str, Any] | None = None,
) -> torch.Tensor:
    """LPIPS per pair, float64 [N].

    `official`: [0,1] tensors are fed without the [-1,1] rescaling LPIPS expects (as a released script does).
    `standard`: inputs rescaled to [-1,1] (`normalize=True`). Both resize mismatched pairs to (min H, min W).
    A pair whose (min H, min W) is below the trunk's :data:`MIN_SIDE` raises :class:`ImageTooSmallError`
    before any pair is computed (callers check :func:`lpips_min_side` to fail only that sample).
    """
    if len(images_a) != len(images_b):
        raise ValueError("lpips_distance needs the same number of images on both sides")
    resolved = as_config("lpips", config)
    min_side = MIN_SIDE.get(resolved.backbone, 1)
    small = [
        (i, _pair_size(a, b)) for i, (a, b) in enumerate(zip(images_a, images_b, strict=True))
        if min(_pair_size(a, b)) < min_side
    ]  # fmt: skip
    if small:
        raise ImageTooSmallError([i for i, _ in small], [size for _, size in small], min_side)
    backbone = get_backbone(resolved, load_lpips)
    normalize = check_variant(variant or backbone.config.variant) == "standard"
    batch_size = backbone.config.batch_size
    distances = torch.empty(len(images_a), dtype=torch.float64)
    for start in range(0, len(images_a), batch_size):  # decode one batch of pairs at a time to bound memory
        chunk = range(start, min(start + batch_size, len(images_a)))
        items = unique_image_items([*images_a[chunk.start : chunk.stop], *images_b[chunk.start : chunk.stop]])
        pixels = decode_items(items, backbone.config.torch_device)
        pairs = [
            resize_pair_to_common_size(a, b) for a, b in zip(pixels[: len(chunk)], pixels[len(chunk) :], strict=True)
        ]
        for indices, side_a in group_by_shape([a for a, _ in pairs]):
            side_b = torch.stack([pairs[i][1] for i in indices])
            with backbone.lock, encoder_autocast(backbone.config):
                out = backbone.model(as_channels_last(side_a), as_channels_last(side_b), normalize=normalize)
            distances[[chunk[i] for i in indices]] = out.flatten().double().cpu()
    return distances


def _pair_size(a: ImageInput, b: ImageInput) -> tuple[int, int]:
    """(min H, min W) of a pair, read without decoding pixels where the input allows."""
    (ha, wa), (hb, wb) = _size(a), _size(b)
    return min(ha, hb), min(wa, wb)


def _size(image: ImageInput) -> tuple[int, int]:
    """(H, W) of one metric input (:data:`ImageInput`): a PIL image, a [C, H, W] tensor, or a file's header."""
    from PIL import Image

    if isinstance(image, Image.Image):
        return image.height, image.width
    if isinstance(image, torch.Tensor):
        return int(image.shape[-2]), int(image.shape[-1])
    with Image.open(image) as handle:
        return handle.height, handle.width
