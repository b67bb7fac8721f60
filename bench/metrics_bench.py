"""Throughput of the shared metric module vs a naive per-sample loop, on randomly initialised backbones.

    python bench/metrics_bench.py [--samples 64] [--size 256] [--repeats 5] [--threads N]
                                  [--device cpu|cuda] [--backbones tiny|full]

`--backbones tiny` (default) uses the test-size networks; `full` the papers' architectures (CLIP ViT-L/14 and
ViT-B/32, LPIPS-Alex, DreamSim's ViT-L/14 branch, Inception-v3 for FID) with random weights, for GPU runs.

Inputs are PNG files on disk (as generated images are). The naive loop is what the official scripts do:
PIL decode + PIL preprocessing per image and one forward per image or pair, re-encoding shared candidates
for every sample. Both sides use the same weights; the script checks that they agree before timing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torchvision import transforms

from lmms_eval_unify.metrics import (
    RANDOM_WEIGHTS,
    MetricConfig,
    clip_choices,
    clip_image_similarity,
    dreamsim_distance,
    fid,
    get_clip,
    lpips_distance,
    resolve_config,
)
from lmms_eval_unify.metrics.dreamsim_metric import load_dreamsim
from lmms_eval_unify.metrics.encoders import EmbeddingCache
from lmms_eval_unify.metrics.fid_fvd import load_image_features
from lmms_eval_unify.metrics.images import (
    ImageTransform,
    decode_items,
    group_by_shape,
    image_item,
    parallel_map,
)
from lmms_eval_unify.metrics.lpips_metric import load_lpips
from lmms_eval_unify.metrics.registry import get_backbone
from lmms_eval_unify.metrics.tiny import TINY_DREAMSIM_TYPE, tiny_configs, write_tiny_dreamsim_checkpoint

NUM_CANDIDATES = 4


def write_pngs(directory: str, count: int, size: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(count):
        # smooth random images (upsampled noise) compress like real renders, unlike pure noise
        small = rng.integers(0, 256, (size // 16, size // 16, 3), dtype=np.uint8)
        path = os.path.join(directory, f"{seed}_{i}.png")
        Image.fromarray(small).resize((size, size), Image.BILINEAR).save(path)
        paths.append(path)
    return paths


def interleaved_best_times(
    module_run: Callable[[], object], naive_run: Callable[[], object], repeats: int, reset: Callable[[], None]
) -> tuple[float, float, object, object]:
    """Best-of-`repeats` wall times, alternating the two sides so both see the same machine load."""
    module_best = naive_best = float("inf")
    module_values = naive_values = None
    for _ in range(repeats):
        reset()
        start = time.perf_counter()
        module_values = module_run()
        module_best = min(module_best, time.perf_counter() - start)
        start = time.perf_counter()
        naive_values = naive_run()
        naive_best = min(naive_best, time.perf_counter() - start)
    return module_best, naive_best, module_values, naive_values


def full_configs(dreamsim_dir: str, device: str) -> dict[str, MetricConfig]:
    """The papers' architectures with random weights (only the weights differ from a real run)."""
    random = dict(weights=RANDOM_WEIGHTS, device=device)
    return {
        "clip_score": resolve_config("clip_score", backbone="ViT-L-14-quickgelu", **random),
        "clip_choice": resolve_config("clip_choice", backbone="ViT-B-32-quickgelu", **random),
        "lpips": resolve_config("lpips", **random),
        "dreamsim": resolve_config("dreamsim", backbone=TINY_DREAMSIM_TYPE, weights=dreamsim_dir, device=device),
        "fid": resolve_config("fid", backbone="inception_v3", **random),
    }


def synced(value: torch.Tensor) -> float:
    return float(value)  # .item() waits for the device


def naive_clip(config):
    import open_clip

    model = get_clip(config).model
    pre = open_clip.get_model_preprocess_cfg(model)
    size = pre["size"][0] if isinstance(pre["size"], tuple | list) else pre["size"]
    preprocess = open_clip.image_transform(size, is_train=False, mean=pre["mean"], std=pre["std"])
    device = config.torch_device

    def embed(path: str) -> torch.Tensor:
        with torch.no_grad():
            pixels = preprocess(Image.open(path).convert("RGB"))[None].to(device)
            return F.normalize(model.encode_image(pixels), dim=-1)[0]

    def similarity(paths_a, paths_b):
        return [synced(embed(a) @ embed(b)) for a, b in zip(paths_a, paths_b, strict=True)]

    def choice(generated, candidates):
        """[(argmax, margin)]: the chosen candidate and its lead over the runner-up similarity."""
        out = []
        for g, cands in zip(generated, candidates, strict=True):
            sims = torch.stack([embed(c) for c in cands]) @ embed(g)
            top2 = sims.float().topk(2).values
            out.append((int(sims.argmax()), synced(top2[0] - top2[1])))
        return out

    return similarity, choice


def per_pair(pair_distance, preprocess, device):
    """The naive loop: decode and preprocess both files of a pair with PIL, one forward per pair."""

    def distance(paths_a, paths_b):
        out = []
        for a, b in zip(paths_a, paths_b, strict=True):
            with torch.no_grad():
                x, y = (preprocess(Image.open(p).convert("RGB"))[None].to(device) for p in (a, b))
                out.append(synced(pair_distance(x, y)))
        return out

    return distance


def naive_lpips(config):
    return per_pair(get_backbone(config, load_lpips).model, transforms.ToTensor(), config.torch_device)


def naive_fid(config):
    """MME-Unify's official per-pair FID: Inception pool features of each image, one forward per image."""
    net = get_backbone(config, load_image_features).forward
    preprocess = transforms.Compose(
        [
            transforms.Resize((299, 299), interpolation=transforms.InterpolationMode.BILINEAR),
            transforms.ToTensor(),
            transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
        ]
    )
    return per_pair(lambda x, y: (net(x).double() - net(y).double()).square().sum(), preprocess, config.torch_device)


def naive_dreamsim(directory: str, device: str):
    """DreamSim as its README shows it: dreamsim's PIL preprocess and model(a, b) per pair."""
    from dreamsim.model import PerceptualModel
    from peft import PeftModel

    model = PerceptualModel(
        model_type=TINY_DREAMSIM_TYPE, feat_type="embedding", stride="14", lora=True,
        load_dir=directory, device=device, normalize_embeds=True,
    )  # fmt: skip
    model = (
        PeftModel.from_pretrained(model, os.path.join(directory, f"{TINY_DREAMSIM_TYPE}_single_lora")).to(device).eval()
    )
    preprocess = transforms.Compose(
        [
            transforms.Resize((224, 224), interpolation=transforms.InterpolationMode.BICUBIC),
            transforms.ToTensor(),
        ]
    )
    return per_pair(model, preprocess, device)


def host_pipeline_rate(paths: list[str], workers: int, repeats: int) -> float:
    """Best img/s of the host side of the pipeline: read + hash + decode (`workers` threads) + batched
    224-px shortest-side resize and centre crop on the CPU; no encoder."""
    transform = ImageTransform(224, "shortest_crop")
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        items = [image_item(p) for p in paths] if workers == 1 else parallel_map(image_item, paths, workers)
        for _, batch in group_by_shape(decode_items(items, torch.device("cpu"), workers=workers)):
            transform(batch)
        best = min(best, time.perf_counter() - start)
    return len(paths) / best


CHOICE_MARGIN_TOLERANCE = 2e-3
"""Cosine-similarity leads at or below this are numerical ties: the batched and per-image paths differ by up to
~1e-3 in similarity (CLIP-I max |diff| in docs/benchmarks.md), so their argmax may legitimately flip there."""


def compare_choices(module: list[int], naive: list[tuple[int, float]]) -> tuple[bool, float, dict]:
    """Agreement of module and naive argmax choices where the naive margin exceeds the tolerance.

    Returns (agree, fraction of compared choices that differ, {"flipped": margins of all differing items,
    "near_ties": items not compared, "median": median margin}).
    """
    margins = [margin for _, margin in naive]
    flipped = [round(m, 6) for c, (n, m) in zip(module, naive, strict=True) if c != n]
    decided = [(c, n) for c, (n, m) in zip(module, naive, strict=True) if m > CHOICE_MARGIN_TOLERANCE]
    differ = sum(c != n for c, n in decided)
    summary = {
        "flipped": flipped,
        "near_ties": len(naive) - len(decided),
        "median": float(np.median(margins)),
    }
    return differ == 0, differ / max(1, len(decided)), summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--size", type=int, default=256, help="side of the square PNG inputs")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's choice)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--backbones", choices=("tiny", "full"), default="tiny")
    parser.add_argument(
        "--dtype", choices=("fp32", "bf16"), default="fp32",
        help="the module's autocast dtype for CLIP/LPIPS/DreamSim (the naive loop is always fp32; FID stays fp32)",
    )  # fmt: skip
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    work = tempfile.mkdtemp(prefix="metrics_bench_")
    write_tiny_dreamsim_checkpoint(work, shape=args.backbones)
    configs = tiny_configs(work, args.device) if args.backbones == "tiny" else full_configs(work, args.device)
    configs = {
        family: dataclasses.replace(config, dtype=args.dtype if family != "fid" else "fp32")
        for family, config in configs.items()
    }
    generated = write_pngs(work, args.samples, args.size, seed=1)
    references = write_pngs(work, args.samples, args.size, seed=2)
    candidates = [write_pngs(work, NUM_CANDIDATES, args.size, seed=3)] * args.samples  # shared by all samples

    naive_similarity, _ = naive_clip(configs["clip_score"])
    _, naive_choice = naive_clip(configs["clip_choice"])
    naive_lpips_distance = naive_lpips(configs["lpips"])
    naive_dreamsim_distance = naive_dreamsim(work, args.device)
    cases = {
        "CLIP-I": (
            lambda: clip_image_similarity(generated, references, configs["clip_score"]).tolist(),
            lambda: naive_similarity(generated, references),
        ),
        f"CLIP-choice ({NUM_CANDIDATES} shared candidates)": (
            lambda: [c.index for c in clip_choices(generated, candidates, configs["clip_choice"])],
            lambda: naive_choice(generated, candidates),
        ),
        "LPIPS-Alex (official)": (
            lambda: lpips_distance(generated, references, config=configs["lpips"]).tolist(),
            lambda: naive_lpips_distance(generated, references),
        ),
        "DreamSim": (
            lambda: dreamsim_distance(generated, references, configs["dreamsim"]).tolist(),
            lambda: naive_dreamsim_distance(generated, references),
        ),
    }
    if "fid" in configs and args.backbones == "full":
        naive_fid_distance = naive_fid(configs["fid"])
        cases["FID per pair (official, Inception-v3)"] = (
            lambda: fid(references, generated, variant="official", config=configs["fid"]).per_sample.tolist(),
            lambda: naive_fid_distance(references, generated),
        )

    def clear_embedding_caches() -> None:
        """Every timed module run starts cold: no embedding of the timed images is cached."""
        for family in ("clip_score", "clip_choice"):
            clip = get_clip(configs[family])
            clip.images.cache, clip.texts = EmbeddingCache(), EmbeddingCache()
        get_backbone(configs["dreamsim"], load_dreamsim).cache = EmbeddingCache()
        if "FID per pair (official, Inception-v3)" in cases:
            get_backbone(configs["fid"], load_image_features).cache = EmbeddingCache()

    device_name = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {device_name}, "
          f"{args.backbones} backbones, module dtype {args.dtype}, "
          f"{args.samples} samples of {args.size}x{args.size} PNG, best of {args.repeats}")  # fmt: skip
    print(f"{'metric':38s} {'module img/s':>13s} {'naive img/s':>12s} {'speed-up':>9s}  agree (max |diff|)")
    results = {}
    items = args.samples  # one generated image scored per sample
    for name, (module_run, naive_run) in cases.items():
        module_run()  # warm-up: loads the backbone
        module_time, naive_time, module_values, naive_values = interleaved_best_times(
            module_run, naive_run, args.repeats, clear_embedding_caches
        )
        if "choice" in name:
            agree, deviation, margins = compare_choices(module_values, naive_values)
            results[name] = {"flipped_margins": margins["flipped"], "near_ties": margins["near_ties"]}
            print(
                f"  {name}: {margins['near_ties']} near-ties (margin <= {CHOICE_MARGIN_TOLERANCE}) not compared; "
                f"margins of flipped choices {margins['flipped']}; median margin {margins['median']:.2e}"
            )
        else:
            agree = bool(np.allclose(module_values, naive_values, rtol=2e-2, atol=2e-2))
            deviation = float(np.max(np.abs(np.subtract(module_values, naive_values))))
        results[name] = results.get(name, {}) | {
            "module_items_per_s": items / module_time,
            "naive_items_per_s": items / naive_time,
            "speedup": naive_time / module_time,
            "agree": agree,
            "max_deviation": deviation,
        }
        print(
            f"{name:38s} {items / module_time:13.1f} {items / naive_time:12.1f} {naive_time / module_time:8.1f}x"
            f"  {agree} ({deviation:.3g})"
        )
    pipeline = {workers: host_pipeline_rate(generated, workers, args.repeats) for workers in (1, 2, 4, 8)}
    print("host pipeline (read+hash+decode+resize), img/s by decode workers:",
          ", ".join(f"{w}: {rate:.1f}" for w, rate in pipeline.items()))  # fmt: skip
    results["host_pipeline_img_per_s"] = pipeline
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    if args.dtype == "fp32" and not all(r["agree"] for r in results.values() if "agree" in r):
        sys.exit("module and naive loop disagree")


if __name__ == "__main__":
    main()
