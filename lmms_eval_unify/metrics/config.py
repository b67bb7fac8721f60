"""Configuration of the shared metric backbones: explicit arguments > env vars > task metadata > defaults."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import torch

from lmms_eval_unify.env_vars import PREFIX as ENV_PREFIX
from lmms_eval_unify.env_vars import read
from lmms_eval_unify.metrics.switches import tiny_metrics_on

RANDOM_WEIGHTS = "random"
"""Sentinel for `MetricConfig.weights`: build the backbone with random weights (tests and benchmarks only)."""

Variant = Literal["official", "standard"]
VARIANTS: tuple[str, ...] = ("official", "standard")

# family -> (default backbone, default weights); weights None means "resolve from env var / cache".
DEFAULT_BACKBONES: dict[str, tuple[str, str | None]] = {
    "clip_score": ("ViT-L-14-quickgelu", "openai"),  # CLIP-I, CLIP-T and CLIPSIM of generated images/videos
    "clip_choice": ("ViT-B-32-quickgelu", "openai"),  # CLIP choice of the candidate closest to an output
    "lpips": ("alex", None),
    "dreamsim": ("ensemble", None),
    "fid": ("inception_v3", None),
    "fvd": ("resnet50", None),
}
# The textbook (set-level) metrics use other feature networks than the paired `official` ones.
STANDARD_VARIANT_BACKBONES: dict[str, str] = {"fid": "tf_inception_v3", "fvd": "i3d"}
# fp32 even on CUDA: Fréchet maths on bf16 features shift FID/FVD, and bf16 moved DreamSim ViT-L/14 distances
# by up to 0.028 on an H100 (docs/benchmarks.md), more than the 0.02 we accept against the official path.
FP32_FAMILIES = frozenset({"fid", "fvd", "dreamsim"})


TINY_BACKBONE = "tiny"
"""Backbone name of the tiny test/benchmark networks (CLIP, FID/FVD); they exist only with RANDOM_WEIGHTS."""
TINY_DREAMSIM_TYPE = "clip_vitl14"
"""The DreamSim type of the tiny random checkpoints (``tiny.write_tiny_dreamsim_checkpoint``)."""


def tiny_backbone(family: str) -> dict[str, str]:
    """The backbone and weights of a family's tiny network (``tiny.tiny_configs``): random weights, for DreamSim
    a tiny ``clip_vitl14`` whose random checkpoint is written into the cache on first use
    (``tiny.cached_tiny_dreamsim``)."""
    if family == "dreamsim":
        return {"backbone": TINY_DREAMSIM_TYPE, "weights": RANDOM_WEIGHTS}
    if family == "lpips":
        return {"weights": RANDOM_WEIGHTS}
    return {"backbone": TINY_BACKBONE, "weights": RANDOM_WEIGHTS}


def check_variant(variant: str) -> Variant:
    if variant not in VARIANTS:
        raise ValueError(f"unknown metric variant {variant!r}; expected one of {VARIANTS}")
    return variant  # type: ignore[return-value]


class MissingWeightsError(FileNotFoundError):
    """Raised when a backbone's weights are not available offline; never falls back to random weights."""

    def __init__(self, backbone: str, looked_in: list[str], env_var: str, how_to_get: str) -> None:
        self.backbone, self.looked_in, self.env_var, self.how_to_get = (
            backbone,
            looked_in,
            env_var,
            how_to_get,
        )
        super().__init__(
            f"No weights for metric backbone {backbone!r}. Looked in: {', '.join(looked_in)}. "
            f"Supply the file by setting {env_var}=/path/to/checkpoint (or MetricConfig(weights=...)). "
            f"{how_to_get}"
        )


@dataclass(frozen=True)
class MetricConfig:
    """How one metric backbone is built and run. Frozen, so it keys the process-wide backbone registry."""

    family: str
    backbone: str
    weights: str | None = None  # pretrained tag, local file/dir, RANDOM_WEIGHTS, or None (env var / cache)
    device: str = "cpu"
    dtype: str = "fp32"  # autocast dtype of the encoders: fp32 | bf16 | fp16
    batch_size: int = 32
    variant: Variant = "official"

    def __post_init__(self) -> None:
        if self.family not in DEFAULT_BACKBONES:
            raise ValueError(f"unknown metric family {self.family!r}; expected one of {sorted(DEFAULT_BACKBONES)}")
        check_variant(self.variant)
        if self.dtype not in _AUTOCAST_DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}; expected one of {sorted(_AUTOCAST_DTYPES)}")
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")

    @property
    def random_weights(self) -> bool:
        return self.weights == RANDOM_WEIGHTS

    @property
    def torch_device(self) -> torch.device:
        return torch.device(self.device)


_AUTOCAST_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def env_value(name: str) -> Any:
    """The value of ``ENV_PREFIX + name`` parsed by the registry (``env_vars.read``), or None when unset/empty."""
    return read(ENV_PREFIX + name)


def default_device() -> str:
    """CUDA when available (the process's own GPU under `accelerate launch`/torchrun), else CPU."""
    if not torch.cuda.is_available():
        return "cpu"
    local_rank = os.environ.get("LOCAL_RANK")
    return f"cuda:{local_rank}" if local_rank is not None else "cuda"


def resolve_config(family: str, metadata: Mapping[str, Any] | None = None, **explicit: Any) -> MetricConfig:
    """Build the config of one metric family.

    Precedence: explicit keyword arguments > the tiny-metrics switch (``LMMS_EVAL_UNIFY_TINY_METRICS``: backbone
    and weights of :func:`tiny_backbone`) > env vars (`LMMS_EVAL_UNIFY_DEVICE`, `..._METRIC_DTYPE`,
    `..._METRIC_BATCH_SIZE`, `..._METRIC_VARIANT`, `..._<FAMILY>_BACKBONE`) > task YAML metadata (a mapping
    with the same field names) > defaults. Checkpoint files have their own per-backbone env vars (see
    docs/metrics.md). The standard FID/FVD variants default to the textbook feature networks.
    """
    if family not in DEFAULT_BACKBONES:
        raise ValueError(f"unknown metric family {family!r}; expected one of {sorted(DEFAULT_BACKBONES)}")
    env = {
        "device": read("LMMS_EVAL_UNIFY_DEVICE"),
        "dtype": read("LMMS_EVAL_UNIFY_METRIC_DTYPE"),
        "batch_size": read("LMMS_EVAL_UNIFY_METRIC_BATCH_SIZE"),
        "variant": read("LMMS_EVAL_UNIFY_METRIC_VARIANT"),
        "backbone": env_value(f"{family.upper()}_BACKBONE"),
    }
    fields = {f.name for f in dataclasses.fields(MetricConfig)} - {"family"}
    unknown = set(explicit) - fields
    if unknown:
        raise TypeError(f"unknown MetricConfig fields: {sorted(unknown)}")
    values: dict[str, Any] = {}
    tiny = tiny_backbone(family) if tiny_metrics_on() else {}
    for layer in (metadata or {}, {k: v for k, v in env.items() if v is not None}, tiny, explicit):
        values.update({k: v for k, v in layer.items() if k in fields and v is not None})
    variant = values.get("variant", "official")
    default_backbone, default_weights = DEFAULT_BACKBONES[family]
    if variant == "standard":
        default_backbone = STANDARD_VARIANT_BACKBONES.get(family, default_backbone)
    device = values.get("device", "auto")
    device = default_device() if device == "auto" else device
    dtype = values.get("dtype", "auto")
    if dtype == "auto":  # FP32_FAMILIES stay fp32 (see above)
        dtype = "bf16" if torch.device(device).type == "cuda" and family not in FP32_FAMILIES else "fp32"
    backbone = values.get("backbone", default_backbone)
    weights = values.get("weights", default_weights if backbone == default_backbone else None)
    return MetricConfig(
        family=family,
        backbone=backbone,
        weights=weights,
        device=device,
        dtype=dtype,
        batch_size=int(values.get("batch_size", 32)),
        variant=variant,
    )


def as_config(family: str, config: MetricConfig | Mapping[str, Any] | None, **explicit: Any) -> MetricConfig:
    """Accept a ready config, a metadata mapping or None, and return the resolved config of `family`."""
    if isinstance(config, MetricConfig):
        if config.family != family:
            raise ValueError(f"config is for metric family {config.family!r}, expected {family!r}")
        return dataclasses.replace(config, **explicit) if explicit else config
    return resolve_config(family, config, **explicit)


@contextlib.contextmanager
def encoder_autocast(config: MetricConfig) -> Iterator[None]:
    """Inference mode plus autocast to `config.dtype` for the encoder forward passes (no-op for fp32)."""
    dtype = _AUTOCAST_DTYPES[config.dtype]
    with (
        torch.inference_mode(),
        torch.autocast(config.torch_device.type, dtype=dtype, enabled=dtype is not None),
    ):
        yield


@contextlib.contextmanager
def seeded_random_init(seed: int = 0) -> Iterator[None]:
    """Random-weight backbones are reproducible: every config with weights='random' builds the same weights."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def find_weights_file(config: MetricConfig, env_name: str, default_paths: list[str], how_to_get: str) -> str:
    """Return the first existing checkpoint among config.weights, ``ENV_PREFIX + env_name`` and defaults."""
    env_var = ENV_PREFIX + env_name
    candidates = [config.weights] if config.weights else [env_value(env_name) or f"${env_var} (unset)"]
    candidates += default_paths
    for path in candidates:
        if path and os.path.exists(path):
            return path
    raise MissingWeightsError(config.backbone, candidates, env_var, how_to_get)


def torch_hub_checkpoint(filename: str) -> str:
    """Where torch.hub / torchvision cache a downloaded checkpoint (`$TORCH_HOME/hub/checkpoints`)."""
    return os.path.join(torch.hub.get_dir(), "checkpoints", filename)
