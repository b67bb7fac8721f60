"""MME-Unify generation scorers (FIR, TIE, TIG, CIVG, TVG, VP), per sample, through lmms_eval_unify.metrics.

Keys follow docs/scoring.md: FIR ``lpips``; TIE/TIG ``clip_i`` (cosine) and ``clip_t`` (CLIP logit); CIVG/TVG
``fvd``, ``fid``, ``clipsim``; VP ``fvd``, ``fid``. The metric variant (``official`` = the released scripts,
``standard`` = textbook LPIPS) comes from the shared metric configuration (``LMMS_EVAL_UNIFY_METRIC_VARIANT``,
default ``official``) and is written into each sample's ``details``. FID/FVD are per-sample distances, which
only the ``official`` definition has; the set-level ``standard`` FID/FVD is not computed per sample.

The scoring ``variant`` (task ``mme_unify_<x>`` = ``corrected``, ``mme_unify_<x>_official``) decides what an
unusable output counts as and how TIE/TIG images are prepared (docs/fidelity/mme_unify.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from lmms_eval_unify import metrics
from lmms_eval_unify.benchmarks.mme_unify.scoring import check_variant, metric_config
from lmms_eval_unify.benchmarks.mme_unify.spec import METRICS
from lmms_eval_unify.generation.visuals import read_video_frames, to_pil_images
from lmms_eval_unify.output.media_reader import load_media
from lmms_eval_unify.output.record import OutputFailure, ParsedOutput, parse_output
from lmms_eval_unify.scoring.scorer import Score, scorer

KEYFRAMES = 16
SCENE_CHANGE = 20.0
CLIPSIM_MAX_WORDS = 70


def keyframes(frames: list[Image.Image], count: int = KEYFRAMES, threshold: float = SCENE_CHANGE) -> list[Image.Image]:
    """The official key-frame rule: frames whose grey-level mean absolute change exceeds ``threshold``; fewer
    than ``count`` -> ``count`` uniform frames (linspace); more -> evenly subsampled to ``count``."""
    grey = [np.asarray(f.convert("L"), dtype=np.float32) for f in frames]
    keys = [0] + [i for i in range(1, len(grey)) if np.abs(grey[i] - grey[i - 1]).mean() > threshold]
    if len(keys) < count:
        keys = np.linspace(0, len(frames) - 1, count).astype(int).tolist()
    elif len(keys) > count:
        keys = [keys[i] for i in np.linspace(0, len(keys) - 1, count).astype(int)]
    return [frames[i] for i in keys]


def _variant(family: str) -> str:
    return metrics.resolve_config(family, metric_config(family)).variant


WORST = {"lpips": 1.0, "clip_i": 0.0, "clip_t": 0.0, "clipsim": 0.0, "fid": 1000.0, "fvd": 1000.0}
"""Raw values that score 0 after Appendix H's normalisation (1 - LPIPS; 100(1 - (x - 1)/999) for FID/FVD)."""


def _skip(subtask: str, reason: str) -> Score:
    """A reference problem, not the model's: no score (the sample is left out of the means)."""
    return Score(dict.fromkeys(METRICS[subtask]), details={"skipped": reason})


def generation_failed(doc: dict, *, subtask: str, variant: str = "corrected") -> dict:
    """Values of an unusable output. ``corrected``: the worst value of every metric (it scores 0);
    ``official``: no value (left out of the means, as the released scripts skip it); TVG items without a
    reference video have no value either way."""
    left_out = variant == "official" or (subtask == "TVG" and not doc.get("video"))
    return {k: None if left_out else WORST[k] for k in METRICS[subtask]}


@scorer(metrics_for=lambda subtask, **params: METRICS[subtask], failed=generation_failed)
def score_generation(
    doc: dict, parsed: ParsedOutput, *, subtask: str, variant: str = "corrected"
) -> Score | OutputFailure:
    """Per-sample raw metrics of one generation item; missing/corrupt output is counted invalid and scores 0
    (``corrected``) or is left out (``official``)."""
    check_variant(variant)
    if subtask == "TVG" and not doc.get("video"):
        return _skip(subtask, "no_reference_video")
    if subtask in ("FIR", "TIE", "TIG"):
        loaded = parsed.load_images(expected=1)
        if isinstance(loaded, OutputFailure):
            return loaded
        return _score_image(subtask, doc, loaded[0], variant)
    if not parsed.record.video_frames:
        return OutputFailure("no_video_frames", "the output has no video frames")
    frames = load_media(parsed.record.root, parsed.record.video_frames)
    if isinstance(frames, OutputFailure):
        return frames
    return _score_video(subtask, doc, keyframes(frames))


def released_clip_pair(output: Image.Image, reference: Image.Image) -> tuple[Image.Image, Image.Image]:
    """Evaluate_Generation.py's TIE/TIG preparation: both images as [0, 1] tensors, bilinearly resized to the
    smaller height and width when their sizes differ, then back to 8-bit images (``ToPILImage`` truncates)."""
    import torch
    from torchvision.transforms.functional import to_pil_image, to_tensor

    a, b = to_tensor(output).unsqueeze(0), to_tensor(reference).unsqueeze(0)
    if a.shape != b.shape:
        size = (min(a.shape[2], b.shape[2]), min(a.shape[3], b.shape[3]))
        a = torch.nn.functional.interpolate(a, size=size, mode="bilinear", align_corners=False)
        b = torch.nn.functional.interpolate(b, size=size, mode="bilinear", align_corners=False)
    return to_pil_image(a[0]), to_pil_image(b[0])


def _score_image(subtask: str, doc: dict, image: Image.Image, variant: str) -> Score:
    if subtask == "FIR":
        reference = to_pil_images(doc["image"])[0]
        metric = _variant("lpips")
        value = float(metrics.lpips_distance([image], [reference], variant=metric, config=metric_config("lpips"))[0])
        return Score({"lpips": value}, details={"variant": metric})
    reference = to_pil_images(doc["edited_image"] if subtask == "TIE" else doc["image"])[0]
    if variant == "official":
        image, reference = released_clip_pair(image, reference)
    config = metric_config("clip_score")
    clip_i = float(metrics.clip_image_similarity([image], [reference], config)[0])
    clip_t_value = float(metrics.clip_t([image], [doc["Text_Prompt"]], scale="logit", config=config)[0])
    return Score({"clip_i": clip_i, "clip_t": clip_t_value}, details={"variant": variant})


def _score_video(subtask: str, doc: dict, frames: list[Image.Image]) -> Score:
    """Official per-sample "FVD" vs the reference video and "FID" of every frame vs the conditioning image
    (TVG has none: its FID compares each frame with the reference video's frame at the same position; ours)."""
    reference = read_video_frames(doc["video"], len(frames))
    condition = to_pil_images(doc["image"])[0] if subtask != "TVG" else None
    fid_real = [condition] * len(frames) if condition is not None else reference
    values = {
        "fvd": float(metrics.fvd([reference], [frames], variant="official", config=metric_config("fvd")).per_sample[0]),
        "fid": float(metrics.fid(fid_real, frames, variant="official", config=metric_config("fid")).per_sample.mean()),
    }
    if subtask != "VP":
        config = metric_config("clip_score")
        values["clipsim"] = float(
            metrics.clipsim([frames], [doc["Text_Prompt"]], max_words=CLIPSIM_MAX_WORDS, config=config)[0]
        )
    return Score(values, details={"variant": "official", "frames": len(frames)})


def standard_video_distances(subtask: str, docs: list[dict], raw_outputs: list[Any]) -> dict[str, float | int]:
    """Textbook (``standard``) set-level FID and FVD of one video subtask, computed after a run from the
    documents and the logged outputs (the per-sample records hold only the official distances).

    FID compares the set of generated key frames with the set of reference frames (the conditioning images
    for CIVG/VP, the reference videos' frames for TVG); FVD compares the generated with the reference
    videos. Items without a reference or with unusable output are left out and counted.
    """
    real_images, fake_images, real_videos, fake_videos, left_out = [], [], [], [], 0
    for doc, raw in zip(docs, raw_outputs, strict=True):
        parsed = parse_output(raw)
        frames = load_media(parsed.record.root, parsed.record.video_frames) if parsed.record.video_frames else None
        if not doc.get("video") or parsed.failure or frames is None or isinstance(frames, OutputFailure):
            left_out += 1
            continue
        frames = keyframes(frames)
        reference = read_video_frames(doc["video"], len(frames))
        real_images.extend(reference if subtask == "TVG" else to_pil_images(doc["image"]))
        fake_images.extend(frames)
        real_videos.append(reference)
        fake_videos.append(frames)
    fid_value = metrics.fid(real_images, fake_images, variant="standard", config=metric_config("fid")).value
    fvd_value = metrics.fvd(real_videos, fake_videos, variant="standard", config=metric_config("fvd")).value
    return {"fid": float(fid_value), "fvd": float(fvd_value), "left_out": left_out}
