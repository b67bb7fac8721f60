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


def uniform_indices(total: int, count: int) -> list[int]:
    """The released video script's uniform sampling: frames ``linspace(0, total - 1, count)`` (integer part), each
    taken at most once as it reads the video in order (fewer than ``count`` when ``total`` is smaller)."""
    return sorted({int(i) for i in np.linspace(0, total - 1, count).astype(int)})


def resample_frames(frames: list[Image.Image], count: int) -> list[Image.Image]:
    """`count` frames at ``torch.linspace(0, T - 1, count)`` indices (float32, integer part): how the released
    script matches the real video's length to the generated video's (repeating frames of a shorter one)."""
    import torch

    indices = torch.linspace(0, len(frames) - 1, count).long().tolist()
    return [frames[i] for i in indices]


def released_video_frames(path: str, count: int) -> list[Image.Image]:
    """A reference video as ``Evaluate_Generation_Video.py`` samples it for FVD (``load_and_sample_mp4``): its
    :func:`uniform_indices` frames (of the container's frame count), decoded by OpenCV as the script does (PyAV's
    colour conversion differs by up to 2 levels)."""
    import cv2  # opencv-python-headless, a dependency of lmms-eval

    capture = cv2.VideoCapture(str(path))
    try:
        wanted = set(uniform_indices(int(capture.get(cv2.CAP_PROP_FRAME_COUNT)), count))
        frames, index = [], 0
        while True:
            ok, frame = capture.read()
            if not ok:
                break
            if index in wanted:
                frames.append(Image.fromarray(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)))
            index += 1
    finally:
        capture.release()
    return frames


def keyframe_indices(frames: list[Image.Image], count: int = KEYFRAMES, threshold: float = SCENE_CHANGE) -> list[int]:
    """The official key-frame rule (``extract_keyframes``): frames whose grey-level mean absolute change exceeds
    ``threshold``; fewer than ``count`` -> the uniform frames of :func:`uniform_indices` (so a video of fewer than
    ``count`` frames keeps each frame once); more -> evenly subsampled to ``count``."""
    grey = [np.asarray(f.convert("L"), dtype=np.float32) for f in frames]
    keys = [0] + [i for i in range(1, len(grey)) if np.abs(grey[i] - grey[i - 1]).mean() > threshold]
    if len(keys) < count:
        return uniform_indices(len(frames), count)
    if len(keys) > count:
        return [keys[i] for i in np.linspace(0, len(keys) - 1, count).astype(int)]
    return keys


def keyframes(frames: list[Image.Image], count: int = KEYFRAMES, threshold: float = SCENE_CHANGE) -> list[Image.Image]:
    """The key frames of :func:`keyframe_indices`."""
    return [frames[i] for i in keyframe_indices(frames, count, threshold)]


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


RELEASED_LPIPS_MIN_SIDE = 31
"""The released script computes LPIPS (AlexNet) for FIR and TIG; a pair smaller than this in height or width
(after its resize to the smaller height and width) makes it raise, and the sample is dropped."""


def _too_small(image: Image.Image, reference: Image.Image, min_side: int) -> OutputFailure | str | None:
    """Why the pair is below ``min_side`` (after the pair rule): the output (an ``OutputFailure``), the reference
    (a reason to skip the sample: the data's fault), or None."""
    if min(image.size) < min_side:
        return OutputFailure("image_too_small", f"output of {image.width}x{image.height} < {min_side} pixels a side")
    if min(reference.size) < min_side:
        return f"reference_too_small ({reference.width}x{reference.height} < {min_side} pixels a side)"
    return None


def _score_image(subtask: str, doc: dict, image: Image.Image, variant: str) -> Score | OutputFailure:
    """FIR: LPIPS; TIE/TIG: CLIP-I and CLIP-T. A pair too small for LPIPS fails only its sample: FIR always
    (LPIPS cannot take it), TIG in the ``official`` variant (the released script computes LPIPS there too and
    drops the sample); the ``corrected`` TIG scores it (CLIP resizes any image)."""
    if subtask == "FIR":
        from lmms_eval_unify.metrics.lpips_metric import lpips_min_side

        reference = to_pil_images(doc["image"])[0]
        small = _too_small(image, reference, lpips_min_side(metric_config("lpips")))
        if small is not None:
            return small if isinstance(small, OutputFailure) else _skip(subtask, small)
        metric = _variant("lpips")
        value = float(metrics.lpips_distance([image], [reference], variant=metric, config=metric_config("lpips"))[0])
        return Score({"lpips": value}, details={"variant": metric})
    reference = to_pil_images(doc["edited_image"] if subtask == "TIE" else doc["image"])[0]
    if subtask == "TIG" and variant == "official":
        small = _too_small(image, reference, RELEASED_LPIPS_MIN_SIDE)
        if small is not None:
            return small if isinstance(small, OutputFailure) else _skip(subtask, small)
    if variant == "official":
        image, reference = released_clip_pair(image, reference)
    config = metric_config("clip_score")
    clip_i = float(metrics.clip_image_similarity([image], [reference], config)[0])
    clip_t_value = float(metrics.clip_t([image], [doc["Text_Prompt"]], scale="logit", config=config)[0])
    return Score({"clip_i": clip_i, "clip_t": clip_t_value}, details={"variant": variant})


def _score_video(subtask: str, doc: dict, frames: list[Image.Image]) -> Score:
    """Official per-sample "FVD" vs the reference video and "FID" of every frame vs the conditioning image
    (TVG has none: its FID compares each frame with the reference video's frame at the same position; ours)."""
    reference = resample_frames(released_video_frames(doc["video"], len(frames)), len(frames))
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
