"""FID and FVD in two named variants.

`official` (a paired distance, as some benchmarks' released code computes it): per-pair squared L2 distance
between single feature vectors; "FID" uses torchvision's ImageNet Inception-v3 (Mixed_7c + global average pool)
per image, "FVD" the frame-averaged torchvision ImageNet ResNet-50 feature of each video (of the frames given:
a benchmark that samples or resamples frames does so before the call).
`standard`: the Fréchet distance between the feature distributions of the two sets; FID on the TF-Inception
(torch-fidelity weights, TF1-style resize without antialias, like torch-fidelity), FVD on the I3D torchscript
of StyleGAN-V.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torchvision
from torch import nn
from torchvision.transforms import InterpolationMode

from lmms_eval_unify.metrics.clip import VideoInput
from lmms_eval_unify.metrics.config import (
    TINY_BACKBONE,
    MetricConfig,
    Variant,
    as_config,
    check_variant,
    encoder_autocast,
    find_weights_file,
    seeded_random_init,
    torch_hub_checkpoint,
)
from lmms_eval_unify.metrics.distributed import gather_variable_length
from lmms_eval_unify.metrics.encoders import ImageEncoder, as_channels_last
from lmms_eval_unify.metrics.frechet import FeatureStatistics, frechet_distance_between
from lmms_eval_unify.metrics.images import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    ImageInput,
    ImageTransform,
    decode_items,
    image_item,
)
from lmms_eval_unify.metrics.registry import get_backbone

ConfigLike = MetricConfig | Mapping[str, Any] | None
I3D_FRAME_SIZE = 224


@dataclass(frozen=True)
class DistanceResult:
    """A FID/FVD value plus what produced it (the report must say which variant and backbone)."""

    value: float  # official: mean of per_sample; standard: the Fréchet distance of the two sets
    variant: Variant
    backbone: str
    num_real: int
    num_generated: int
    per_sample: torch.Tensor | None = None  # official only: squared L2 per pair, float64


def _tiny_feature_net() -> nn.Module:
    """A 2-layer conv net with seeded random weights: the test/benchmark stand-in for Inception/ResNet."""
    with seeded_random_init():
        return nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.Conv2d(8, 16, 3, stride=2), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )  # fmt: skip


# backbone -> (env var name without prefix, torch.hub cache file name, where the file comes from)
CHECKPOINTS: dict[str, tuple[str, str, str]] = {
    "inception_v3": ("INCEPTION_V3_CKPT", "inception_v3_google-0cc3c7bd.pth", "torchvision's ImageNet checkpoint"),
    "resnet50": ("RESNET50_CKPT", "resnet50-0676ba61.pth", "torchvision's ImageNet checkpoint"),
    "tf_inception_v3": (
        "FID_INCEPTION_CKPT", "weights-inception-2015-12-05-6726825d.pth",
        "torch-fidelity's TF-Inception checkpoint (github.com/toshas/torch-fidelity releases)",
    ),
    "i3d": ("I3D_CKPT", "i3d_torchscript.pt", "StyleGAN-V's I3D torchscript (400-d Kinetics features)"),
}  # fmt: skip


def checkpoint_path(config: MetricConfig) -> str:
    """The local checkpoint of a FID/FVD feature backbone (``MissingWeightsError`` naming the env var)."""
    env, filename, source = CHECKPOINTS[config.backbone]
    return find_weights_file(config, env, [torch_hub_checkpoint(filename)], f"It is {source}: {filename}.")


def _torchvision_trunk(config: MetricConfig, build: Callable[..., nn.Module], **build_kwargs: Any) -> nn.Module:
    with seeded_random_init():
        model = build(weights=None, **build_kwargs)
    if not config.random_weights:
        path = checkpoint_path(config)
        model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model


def _inception_pool_features(config: MetricConfig) -> nn.Module:
    net = _torchvision_trunk(config, torchvision.models.inception_v3, aux_logits=True, init_weights=False)
    keep = [
        "Conv2d_1a_3x3", "Conv2d_2a_3x3", "Conv2d_2b_3x3", "maxpool1", "Conv2d_3b_1x1", "Conv2d_4a_3x3", "maxpool2",
        "Mixed_5b", "Mixed_5c", "Mixed_5d", "Mixed_6a", "Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e",
        "Mixed_7a", "Mixed_7b", "Mixed_7c", "avgpool",
    ]  # fmt: skip
    return nn.Sequential(*[getattr(net, name) for name in keep], nn.Flatten())


def _resnet50_pool_features(config: MetricConfig) -> nn.Module:
    net = _torchvision_trunk(config, torchvision.models.resnet50)
    net.fc = nn.Identity()
    return net


def _tf_inception_features(config: MetricConfig) -> Callable[[torch.Tensor], torch.Tensor]:
    from torchmetrics.image.fid import NoTrainInceptionV3  # needs torch-fidelity

    path = checkpoint_path(config)
    net = NoTrainInceptionV3("inception-v3-compat", ["2048"], feature_extractor_weights_path=path, antialias=False)
    net = net.to(config.torch_device)
    # The transform hands over [0,1] floats of the original size; torch-fidelity wants the uint8 pixels back.
    return lambda batch: net((batch * 255.0).round().to(torch.uint8)).float()


# backbone -> (feature builder, per-image transform)
_IMAGE_BACKBONES: dict[str, tuple[Callable[[MetricConfig], Callable], ImageTransform]] = {
    "inception_v3": (
        _inception_pool_features,
        ImageTransform(299, "squash", InterpolationMode.BILINEAR, mean=IMAGENET_MEAN, std=IMAGENET_STD),
    ),
    "resnet50": (
        _resnet50_pool_features,
        ImageTransform(224, "squash", InterpolationMode.BILINEAR, mean=IMAGENET_MEAN, std=IMAGENET_STD),
    ),
    "tf_inception_v3": (_tf_inception_features, ImageTransform(0, "none")),
    TINY_BACKBONE: (
        lambda config: _tiny_feature_net(),
        ImageTransform(32, "squash", InterpolationMode.BILINEAR, mean=IMAGENET_MEAN, std=IMAGENET_STD),
    ),
}


def load_image_features(config: MetricConfig) -> ImageEncoder:
    """Per-image feature extractor (cached by content hash) for FID and frame-based FVD."""
    if config.backbone not in _IMAGE_BACKBONES:
        raise ValueError(
            f"unknown image feature backbone {config.backbone!r}; expected one of {sorted(_IMAGE_BACKBONES)}"
        )
    if config.backbone == TINY_BACKBONE and not config.random_weights:
        raise ValueError("the 'tiny' feature backbone exists only with weights='random' (tests/benchmarks)")
    build, transform = _IMAGE_BACKBONES[config.backbone]
    net = build(config)
    if isinstance(net, nn.Module):
        convolutional = as_channels_last(net.eval().requires_grad_(False).to(config.torch_device))
        return ImageEncoder(config, transform, convolutional, channels_last=True)
    return ImageEncoder(config, transform, net, channels_last=False)  # torch-fidelity's network: its own layout


def _official_or_set(
    variant: Variant, config: MetricConfig, real: torch.Tensor, generated: torch.Tensor, distributed: bool
) -> DistanceResult:
    """Squared L2 per pair (official) or the Fréchet distance of the two feature sets (standard)."""
    if variant == "official":
        if real.shape[0] != generated.shape[0]:
            raise ValueError("the official variant compares pairs: pass as many real as generated items")
        per_sample = (real.double() - generated.double()).square().sum(dim=-1)
        if distributed:
            per_sample = gather_variable_length(per_sample)
        value = float(per_sample.mean())
        return DistanceResult(value, variant, config.backbone, per_sample.numel(), per_sample.numel(), per_sample)
    stats_real, stats_generated = (
        FeatureStatistics.from_features(real),
        FeatureStatistics.from_features(generated),
    )
    if distributed:
        stats_real, stats_generated = stats_real.all_reduce(), stats_generated.all_reduce()
    value = frechet_distance_between(stats_real, stats_generated)
    return DistanceResult(value, variant, config.backbone, stats_real.count, stats_generated.count)


def fid(
    real: Sequence[ImageInput],
    generated: Sequence[ImageInput],
    *,
    variant: Variant | None = None,
    config: ConfigLike = None,
    distributed: bool = False,
) -> DistanceResult:
    """FID between image sets (standard) or the per-pair squared feature distance (official).

    With `distributed=True` every rank passes its own shard; statistics (or per-pair values) are combined
    across ranks without padding duplicates.
    """
    config = _resolve(config, "fid", variant)
    encoder = get_backbone(config, load_image_features)
    features = encoder.embed([*real, *generated])
    return _official_or_set(config.variant, config, features[: len(real)], features[len(real) :], distributed)


def _frame_list(video: VideoInput) -> list[ImageInput]:
    return list(video.unbind(0)) if isinstance(video, torch.Tensor) else list(video)


def _frame_mean_features(config: MetricConfig, videos: Sequence[list[ImageInput]]) -> torch.Tensor:
    encoder = get_backbone(config, load_image_features)
    features = encoder.embed([frame for video in videos for frame in video])
    return torch.stack([chunk.mean(dim=0) for chunk in torch.split(features, [len(v) for v in videos])])


def load_i3d(config: MetricConfig) -> torch.jit.ScriptModule:
    if config.random_weights:
        raise ValueError("the I3D backbone is a torchscript file; it cannot be built with random weights")
    path = checkpoint_path(config)
    # The published I3D is a TorchScript archive; torch.jit.load (deprecated) is the only reader.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning)
        return torch.jit.load(path, map_location=config.torch_device).eval()


def _i3d_features(config: MetricConfig, videos: Sequence[list[ImageInput]]) -> torch.Tensor:
    """I3D features as in common_metrics_on_video_quality: short side -> 224 (bilinear, no antialias),
    centre crop, [-1, 1], then the torchscript with rescale=False, resize=False, return_features=True.
    Videos with the same frame count are batched; clips are built chunk by chunk to bound memory."""
    i3d = get_backbone(config, load_i3d)
    transform = ImageTransform(I3D_FRAME_SIZE, "shortest_crop", InterpolationMode.BILINEAR, antialias=False)

    def clip(video: list[ImageInput]) -> torch.Tensor:  # [3, T, 224, 224] in [-1, 1]
        frames = torch.stack(decode_items([image_item(f) for f in video], config.torch_device))
        return transform(frames).permute(1, 0, 2, 3) * 2.0 - 1.0

    by_length: dict[int, list[int]] = {}
    for i, video in enumerate(videos):
        by_length.setdefault(len(video), []).append(i)
    features: list[torch.Tensor] = [torch.empty(0)] * len(videos)
    for indices in by_length.values():
        for start in range(0, len(indices), config.batch_size):
            chunk = indices[start : start + config.batch_size]
            batch = torch.stack([clip(videos[i]) for i in chunk])
            with encoder_autocast(config):
                out = i3d(batch, rescale=False, resize=False, return_features=True).float().cpu()
            for i, row in zip(chunk, out, strict=True):
                features[i] = row
    return torch.stack(features)


def fvd(
    real: Sequence[VideoInput],
    generated: Sequence[VideoInput],
    *,
    variant: Variant | None = None,
    config: ConfigLike = None,
    distributed: bool = False,
) -> DistanceResult:
    """FVD between video sets (standard, I3D by default) or the per-pair squared distance of frame-averaged
    ResNet-50 features (official), over every frame given."""
    config = _resolve(config, "fvd", variant)
    real_frames = [_frame_list(v) for v in real]
    generated_frames = [_frame_list(v) for v in generated]
    extract = _i3d_features if config.backbone == "i3d" else _frame_mean_features
    features = extract(config, [*real_frames, *generated_frames])
    return _official_or_set(
        config.variant, config, features[: len(real_frames)], features[len(real_frames) :], distributed
    )


def _resolve(config: ConfigLike, family: str, variant: Variant | None) -> MetricConfig:
    if variant is None:
        return as_config(family, config)
    return as_config(family, config, variant=check_variant(variant))
