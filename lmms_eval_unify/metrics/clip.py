"""CLIP metrics on open_clip: CLIP-I, CLIP-T, CLIP choice (image and text) and CLIPSIM for video."""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torchvision.transforms import InterpolationMode

from lmms_eval_unify.metrics.config import (
    ENV_PREFIX,
    TINY_BACKBONE,
    MetricConfig,
    MissingWeightsError,
    as_config,
    encoder_autocast,
    env_value,
    seeded_random_init,
)
from lmms_eval_unify.metrics.encoders import EmbeddingCache, ImageEncoder
from lmms_eval_unify.metrics.images import ImageInput, ImageTransform
from lmms_eval_unify.metrics.registry import get_backbone

ConfigLike = MetricConfig | Mapping[str, Any] | None
VideoInput = Sequence[ImageInput] | torch.Tensor
"""A video as a list of frames or a uint8 tensor [T, 3, H, W] (frame sampling is the task's job)."""

CLIP_FAMILIES = ("clip_score", "clip_choice")
_TINY_CLIP_KWARGS = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 64, "patch_size": 8, "head_width": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
}
_CHECKPOINT_ENV_NAMES = {"ViT-L-14": "CLIP_L14_CKPT", "ViT-B-32": "CLIP_B32_CKPT"}
_HF_WEIGHT_FILES = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")


@dataclass(frozen=True)
class Choice:
    """Result of an argmax choice: chosen index (lowest index wins exact ties) and all similarities."""

    index: int
    similarities: tuple[float, ...]


@dataclass
class ClipBackbone:
    model: Any  # an open_clip CLIP module (open_clip has no type information)
    tokenizer: Any
    images: ImageEncoder
    texts: EmbeddingCache
    text_lock: threading.Lock
    config: MetricConfig

    @property
    def logit_scale(self) -> float:
        return float(self.model.logit_scale.exp().clamp(max=100.0))

    def embed_images(self, images: Sequence[ImageInput]) -> torch.Tensor:
        """L2-normalised fp32 image embeddings [N, D]."""
        return self.images.embed(images)

    def embed_texts(self, texts: Sequence[str]) -> torch.Tensor:
        """L2-normalised fp32 text embeddings [N, D]; texts are truncated to the 77-token context."""
        keys = ["txt:" + hashlib.blake2b(t.encode(), digest_size=16).hexdigest() for t in texts]

        def compute(indices: list[int]) -> torch.Tensor:
            tokens = self.tokenizer([texts[i] for i in indices]).to(self.config.torch_device)
            chunks = []
            for start in range(0, len(tokens), self.config.batch_size):
                with self.text_lock, encoder_autocast(self.config):
                    out = self.model.encode_text(tokens[start : start + self.config.batch_size])
                chunks.append(F.normalize(out.float(), dim=-1))
            return torch.cat(chunks)

        return self.texts.get_or_compute(keys, compute)


def checkpoint_env_name(backbone: str) -> str:
    """Env var (without prefix) holding a local checkpoint for a CLIP backbone, e.g. CLIP_L14_CKPT."""
    arch = backbone.removesuffix("-quickgelu")
    return _CHECKPOINT_ENV_NAMES.get(arch, "CLIP_" + re.sub(r"[^A-Z0-9]+", "_", arch.upper()) + "_CKPT")


def pretrained_source(config: MetricConfig) -> str:
    """Local checkpoint path (explicit, env var, or HF cache), or the tag itself when downloads are allowed."""
    env_name = checkpoint_env_name(config.backbone)
    explicit = config.weights if config.weights and os.path.exists(config.weights) else env_value(env_name)
    if explicit:
        if not os.path.exists(explicit):
            raise MissingWeightsError(config.backbone, [explicit], ENV_PREFIX + env_name, "The file does not exist.")
        return explicit
    import open_clip
    from huggingface_hub import constants, try_to_load_from_cache

    tag = config.weights or "openai"
    hf_repo = (open_clip.get_pretrained_cfg(config.backbone, tag).get("hf_hub") or "").strip("/")
    for filename in _HF_WEIGHT_FILES:
        cached = try_to_load_from_cache(hf_repo, filename, cache_dir=constants.HF_HUB_CACHE) if hf_repo else None
        if isinstance(cached, str):
            return cached
    if env_value("ALLOW_DOWNLOADS"):
        return tag
    looked_in = [
        f"${ENV_PREFIX}{env_name} (unset)",
        os.path.join(constants.HF_HUB_CACHE, f"models--{hf_repo.replace('/', '--')}"),
    ]
    raise MissingWeightsError(
        config.backbone,
        looked_in,
        ENV_PREFIX + env_name,
        f"Download it with `hf download {hf_repo} {_HF_WEIGHT_FILES[0]}` or set "
        f"{ENV_PREFIX}ALLOW_DOWNLOADS=1 to let open_clip fetch pretrained={tag!r}.",
    )


def _build_clip_model(config: MetricConfig) -> Any:
    """An open_clip CLIP module (open_clip has no type information)."""
    import open_clip  # imported on first use: it pulls in timm and costs seconds at import time

    if config.backbone == TINY_BACKBONE and not config.random_weights:
        raise ValueError("the 'tiny' CLIP backbone exists only with weights='random' (tests/benchmarks)")
    if config.random_weights:
        with seeded_random_init():
            if config.backbone == TINY_BACKBONE:
                return open_clip.create_model("ViT-B-32", pretrained=None, **_TINY_CLIP_KWARGS)
            return open_clip.create_model(config.backbone, pretrained=None)
    return open_clip.create_model(config.backbone, pretrained=pretrained_source(config), require_pretrained=True)


def load_clip(config: MetricConfig) -> ClipBackbone:
    """Build the CLIP backbone of `config` (use `get_clip` to share one instance per config)."""
    import open_clip

    model = _build_clip_model(config).eval().requires_grad_(False).to(config.torch_device)
    pre = open_clip.get_model_preprocess_cfg(model)
    transform = ImageTransform(
        size=pre["size"][0] if isinstance(pre["size"], tuple | list) else pre["size"],
        resize_mode="shortest_crop",
        interpolation=InterpolationMode(pre.get("interpolation", "bicubic")),
        mean=tuple(pre["mean"]),
        std=tuple(pre["std"]),
    )
    tokenizer = open_clip.get_tokenizer("ViT-B-32" if config.backbone == TINY_BACKBONE else config.backbone)

    def encode(batch: torch.Tensor) -> torch.Tensor:
        return F.normalize(model.encode_image(batch).float(), dim=-1)

    return ClipBackbone(
        model, tokenizer, ImageEncoder(config, transform, encode), EmbeddingCache(), threading.Lock(), config
    )


def get_clip(config: ConfigLike = None, family: str = "clip_score") -> ClipBackbone:
    """The shared CLIP backbone for a config (a MetricConfig of a CLIP family, task metadata, or None)."""
    if isinstance(config, MetricConfig) and config.family in CLIP_FAMILIES:
        return get_backbone(config, load_clip)
    return get_backbone(as_config(family, config), load_clip)


def _cut_words(text: str, max_words: int | None) -> str:
    return text if max_words is None else " ".join(text.split()[:max_words])


def _unit64(embeddings: torch.Tensor) -> torch.Tensor:
    """Re-normalise in float64 so cosines, argmaxes and identities (cos(x, x) = 1) are exact to fp64."""
    return F.normalize(embeddings.double(), dim=-1)


def _pairwise_cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (_unit64(a) * _unit64(b)).sum(dim=-1)


def clip_image_similarity(
    images_a: Sequence[ImageInput], images_b: Sequence[ImageInput], config: ConfigLike = None
) -> torch.Tensor:
    """CLIP-I: cosine of image embeddings for each pair, float64 [N] (x1; a paper showing x100 scales it)."""
    if len(images_a) != len(images_b):
        raise ValueError("clip_image_similarity needs the same number of images on both sides")
    clip = get_clip(config)
    embeddings = clip.embed_images([*images_a, *images_b])
    return _pairwise_cosine(embeddings[: len(images_a)], embeddings[len(images_a) :])


def clip_t(
    images: Sequence[ImageInput],
    texts: Sequence[str],
    *,
    scale: float | Literal["logit"] = 1.0,
    max_words: int | None = None,
    config: ConfigLike = None,
) -> torch.Tensor:
    """CLIP-T: scale * cos(image, text) per pair, float64 [N].

    `scale="logit"` multiplies by the model's logit scale (100 for OpenAI CLIP): open_clip's
    `logits_per_image`, the CLIP-T of released scripts that report those logits.
    """
    if len(images) != len(texts):
        raise ValueError("clip_t needs one text per image")
    clip = get_clip(config)
    factor = clip.logit_scale if scale == "logit" else float(scale)
    texts = [_cut_words(t, max_words) for t in texts]
    return factor * _pairwise_cosine(clip.embed_images(images), clip.embed_texts(texts))


def _argmax_choice(similarities: torch.Tensor) -> Choice:
    # torch.argmax returns the first maximal index, so exact ties go to the lowest index (the official rule).
    return Choice(int(torch.argmax(similarities)), tuple(similarities.tolist()))


def clip_choices(
    generated: Sequence[ImageInput], candidates: Sequence[Sequence[ImageInput]], config: ConfigLike = None
) -> list[Choice]:
    """For each generated image, the argmax of CLIP-I against its candidates (all encoded in one batched pass;
    candidates shared between samples are embedded once thanks to the content-hash cache)."""
    if len(generated) != len(candidates):
        raise ValueError("clip_choices needs one candidate list per generated image")
    clip = get_clip(config, family="clip_choice")
    flat = [c for cands in candidates for c in cands]
    embeddings = _unit64(clip.embed_images([*generated, *flat]))
    gen, cand = embeddings[: len(generated)], embeddings[len(generated) :]
    choices, offset = [], 0
    for i, cands in enumerate(candidates):
        choices.append(_argmax_choice(cand[offset : offset + len(cands)] @ gen[i]))
        offset += len(cands)
    return choices


def clip_choice(generated: ImageInput, candidates: Sequence[ImageInput], config: ConfigLike = None) -> Choice:
    """Argmax of CLIP-I between one generated image and K candidate images."""
    return clip_choices([generated], [candidates], config)[0]


def clip_text_choice(text: str, options: Sequence[str], config: ConfigLike = None) -> Choice:
    """Argmax of the CLIP text-text cosine between a generated text and K option texts."""
    clip = get_clip(config, family="clip_choice")
    embeddings = _unit64(clip.embed_texts([text, *options]))
    return _argmax_choice(embeddings[1:] @ embeddings[0])


def _frames(video: VideoInput) -> list[ImageInput]:
    return list(video.unbind(0)) if isinstance(video, torch.Tensor) else list(video)


def clipsim(
    videos: Sequence[VideoInput],
    texts: Sequence[str],
    *,
    max_words: int | None = None,
    config: ConfigLike = None,
) -> torch.Tensor:
    """CLIPSIM: per video, mean over frames of cos(frame, text), float64 [N] (x1; a paper showing x100 scales it).

    `max_words` cuts prompts to that many words before the 77-token truncation (a released video script's rule).
    """
    if len(videos) != len(texts):
        raise ValueError("clipsim needs one text per video")
    clip = get_clip(config)
    frames = [_frames(video) for video in videos]
    if any(not f for f in frames):
        raise ValueError("clipsim got a video without frames")
    frame_embeddings = _unit64(clip.embed_images([f for video in frames for f in video]))
    text_embeddings = _unit64(clip.embed_texts([_cut_words(t, max_words) for t in texts]))
    counts = [len(f) for f in frames]
    per_video = torch.split(frame_embeddings, counts)
    return torch.stack([(emb @ text_embeddings[i]).mean() for i, emb in enumerate(per_video)])
