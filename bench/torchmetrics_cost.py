"""CPU time of our CLIPScore (CLIP-T x 100, mean over pairs) and set-level FID (``variant="standard"``) vs
torchmetrics' ``CLIPScore`` and ``FrechetInceptionDistance`` on the same weights and the same preprocessing.

    python bench/torchmetrics_cost.py [--n 64] [--size 256] [--repeats 9] [--backbones tiny|full] [--quick]

Both sides get the same in-memory uint8 images (smooth random 256² by default) and captions. torchmetrics gets
our open_clip model and tokenizer through its callable ``model_name_or_path`` (a CLIP-compatible model and
processor, the processor applying our CLIP image transform), and for FID a feature module with the same seeded
random weights as ours behind our FID image transform; it is fed batches of our batch size. ``--backbones tiny``
(default): the test-size networks (3M-parameter CLIP at 32 px, a 2-layer conv net at 32 px), where the pipeline
around the network dominates; ``full``: CLIP ViT-B/32 and Inception-v3 with random weights. Pinned threads
(OMP/MKL/BLAS, torch and our decode pool at 1), ``time.process_time``, ours and torchmetrics interleaved in
one process after one untimed round, our embedding caches emptied in each of our runs, medians reported; the
values must agree
before a number is printed. ``--quick`` (4 images of 64², 1 round) only checks that it runs. Results:
docs/benchmarks.md.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _cpu_time import interleaved_cpu_times, median, pin_threads

if __name__ == "__main__":  # before numpy and torch load (not when a test imports the script)
    pin_threads()

import argparse
import math
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torchmetrics.image.fid import FrechetInceptionDistance
from torchmetrics.multimodal.clip_score import CLIPScore

from lmms_eval_unify.metrics import RANDOM_WEIGHTS, MetricConfig, clip_t, fid, get_clip, resolve_config
from lmms_eval_unify.metrics.clip import ClipBackbone
from lmms_eval_unify.metrics.config import TINY_BACKBONE
from lmms_eval_unify.metrics.encoders import EmbeddingCache, ImageEncoder
from lmms_eval_unify.metrics.fid_fvd import _IMAGE_BACKBONES, load_image_features
from lmms_eval_unify.metrics.images import ImageTransform
from lmms_eval_unify.metrics.registry import get_backbone

BACKBONES = {"tiny": (TINY_BACKBONE, TINY_BACKBONE), "full": ("ViT-B-32-quickgelu", "inception_v3")}
"""--backbones -> (CLIP backbone, FID feature backbone)."""
WORDS = "a the of on with small large red blue green photo painting cat dog house tree car street river".split()


def smooth_images(count: int, size: int, seed: int) -> list[torch.Tensor]:
    """uint8 [3, size, size] images: upsampled noise, which resizes like real pictures rather than pure noise."""
    rng = np.random.default_rng(seed)
    coarse = torch.from_numpy(rng.integers(0, 256, (count, 3, max(1, size // 16), max(1, size // 16)), np.uint8))
    return list(F.interpolate(coarse.float(), (size, size), mode="bilinear").round().to(torch.uint8))


def captions(count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 8)) for _ in range(count)]


class OpenClipForTorchmetrics(nn.Module):
    """An open_clip model behind the two methods torchmetrics' CLIPScore calls on a transformers CLIPModel."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model  # an open_clip CLIP
        self.config = types.SimpleNamespace()  # no text_config: torchmetrics then leaves the 77 tokens alone

    def get_image_features(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.model.encode_image(pixel_values)

    def get_text_features(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model.encode_text(input_ids)


class ClipProcessor:
    """torchmetrics' processor call: our CLIP image transform on the stacked images, or open_clip tokens."""

    def __init__(self, transform: ImageTransform, tokenizer: Callable[[list[str]], torch.Tensor]) -> None:
        self.transform, self.tokenizer = transform, tokenizer

    def __call__(self, images: list[torch.Tensor] | None = None, text: list[str] | None = None, **_: Any) -> dict:
        if images is not None:
            return {"pixel_values": self.transform(torch.stack(images))}
        tokens = self.tokenizer(text or [])
        return {"input_ids": tokens, "attention_mask": torch.ones_like(tokens)}


class TransformedFeatures(nn.Module):
    """Our FID image transform, then a feature network (torchmetrics' custom ``feature`` module)."""

    def __init__(self, transform: ImageTransform, net: nn.Module, num_features: int) -> None:
        super().__init__()
        self.transform, self.net, self.num_features = transform, net, num_features

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(self.transform(images))


def same_fid_network(config: MetricConfig) -> nn.Module:
    """A second feature network with our seeded random weights, in the default memory format (what a
    torchmetrics user builds; ours runs channels-last)."""
    build, _ = _IMAGE_BACKBONES[config.backbone]
    network: Any = build(config)  # an nn.Module for every backbone but torch-fidelity's
    return network.eval().requires_grad_(False)


def clip_sides(clip: ClipBackbone, config: MetricConfig, images: list[torch.Tensor], texts: list[str]) -> dict:
    """Our CLIPScore run and torchmetrics' on the same model, each returning the mean score before CLIPScore's
    clip at 0 (random weights often give a negative mean; the clipped 0 would agree without saying anything)."""
    processor = ClipProcessor(clip.images.transform, clip.tokenizer)

    def compatible() -> Any:  # a CLIP-compatible model and processor (torchmetrics types it as HF's)
        return OpenClipForTorchmetrics(clip.model), processor

    theirs = CLIPScore(model_name_or_path=compatible)
    step = config.batch_size

    def ours() -> float:
        clip.images.cache, clip.texts = EmbeddingCache(), EmbeddingCache()  # no hits from the previous round
        return float(clip_t(images, texts, scale=100.0, config=config).mean())  # CLIPScore = max(this, 0)

    def torchmetrics() -> float:
        theirs.reset()
        for start in range(0, len(images), step):
            theirs.update(images[start : start + step], texts[start : start + step])
        theirs.compute()
        return float(theirs.score / theirs.n_samples)  # the mean before the clip at 0, to compare

    return {"ours": ours, "torchmetrics": torchmetrics}


def fid_sides(config: MetricConfig, real: list[torch.Tensor], generated: list[torch.Tensor]) -> dict:
    """Our set-level FID run and torchmetrics' on a network with the same weights, each returning the FID."""
    encoder: ImageEncoder = get_backbone(config, load_image_features)
    network = same_fid_network(config)
    width = int(network(encoder.transform(real[0][None])).shape[-1])
    theirs = FrechetInceptionDistance(feature=TransformedFeatures(encoder.transform, network, width))
    step = config.batch_size

    def ours() -> float:
        encoder.cache = EmbeddingCache()
        return fid(real, generated, variant="standard", config=config).value

    def torchmetrics() -> float:
        theirs.reset()
        for images, is_real in ((real, True), (generated, False)):
            for start in range(0, len(images), step):
                theirs.update(torch.stack(images[start : start + step]), real=is_real)
        return float(theirs.compute())

    return {"ours": ours, "torchmetrics": torchmetrics}


def report(name: str, sides: dict, repeats: int, items: int, unit: str, tolerance: float) -> str:
    """Interleaved CPU times of both sides over ``items`` ``unit``s; the values must agree within ``tolerance``
    (relative)."""
    times, values = interleaved_cpu_times(sides, repeats)
    ours, theirs = float(values["ours"]), float(values["torchmetrics"])  # type: ignore[arg-type]
    assert math.isclose(ours, theirs, rel_tol=tolerance, abs_tol=1e-6), f"{name}: ours {ours} vs torchmetrics {theirs}"
    ours_ms, theirs_ms = 1e3 * median(times["ours"]), 1e3 * median(times["torchmetrics"])
    return (
        f"{name}: CPU ms per run of {items} {unit}s (median of {repeats}): ours {ours_ms:.1f}, torchmetrics "
        f"{theirs_ms:.1f}; per {unit} ours {1e3 * ours_ms / items:.0f} us, torchmetrics "
        f"{1e3 * theirs_ms / items:.0f} us; ours / torchmetrics {ours_ms / theirs_ms:.2f}x; "
        f"values ours {ours:.6g}, torchmetrics {theirs:.6g} (agree within {tolerance:g})"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64, help="image pairs (CLIP: image-caption pairs)")
    parser.add_argument("--size", type=int, default=256, help="image side in pixels")
    parser.add_argument("--repeats", type=int, default=9, help="interleaved rounds")
    parser.add_argument("--backbones", choices=list(BACKBONES), default="tiny")
    parser.add_argument("--quick", action="store_true", help="4 images of 64 px, 1 round: only check that it runs")
    args = parser.parse_args(argv)
    n, size, repeats = (4, 64, 1) if args.quick else (args.n, args.size, args.repeats)
    clip_backbone, fid_backbone = BACKBONES[args.backbones]
    random_cpu = dict(weights=RANDOM_WEIGHTS, device="cpu")
    clip_config = resolve_config("clip_score", backbone=clip_backbone, **random_cpu)
    fid_config = resolve_config("fid", backbone=fid_backbone, variant="standard", **random_cpu)
    images, generated = smooth_images(n, size, seed=1), smooth_images(n, size, seed=2)
    print(f"{torch.get_num_threads()} torch thread(s), {n} pairs of {size}² images, backbones {args.backbones}")
    clip = get_clip(clip_config)
    clip_runs = clip_sides(clip, clip_config, images, captions(n, 3))
    print(report("CLIPScore", clip_runs, repeats, n, "image-caption pair", 1e-4), flush=True)
    print(report("FID (set)", fid_sides(fid_config, images, generated), repeats, 2 * n, "image", 1e-3), flush=True)


if __name__ == "__main__":
    main()
