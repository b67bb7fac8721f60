"""MME-Unify generation scorers: the official key-frame rule and invalid outputs."""

import numpy as np
import pytest
from PIL import Image

from lmms_eval_unify.benchmarks.mme_unify.generation import (
    WORST,
    keyframe_indices,
    keyframes,
    released_clip_pair,
    released_video_frames,
    resample_frames,
    score_generation,
)
from lmms_eval_unify.benchmarks.mme_unify.offline.data import write_video
from lmms_eval_unify.benchmarks.mme_unify.paper import normalised_fvd_fid
from lmms_eval_unify.output.record import UnifiedOutput


def _grey(level: int) -> Image.Image:
    return Image.fromarray(np.full((8, 8, 3), level, dtype=np.uint8))


def _levels(frames):
    return [int(np.asarray(f)[0, 0, 0]) for f in frames]


def test_keyframes_uniform_when_few_scene_changes():
    frames = [_grey(i) for i in range(40)]  # change 1 per frame < threshold 20
    assert _levels(keyframes(frames)) == np.linspace(0, 39, 16).astype(int).tolist()


def test_keyframes_subsampled_when_many_scene_changes():
    frames = [_grey((i % 2) * 200) for i in range(40)]  # every frame is a scene change
    chosen = keyframes(frames)
    assert len(chosen) == 16 and _levels(chosen)[0] == 0


def test_keyframes_of_a_short_video_keep_each_frame_once():
    """``extract_keyframes`` keeps a frame once when the uniform indices repeat it (fewer than 16 frames)."""
    assert keyframe_indices([_grey(i) for i in range(6)]) == [0, 1, 2, 3, 4, 5]
    assert keyframe_indices([_grey(i) for i in range(16)]) == list(range(16))


def test_reference_video_frames_are_the_released_scripts(tmp_path):
    """``load_and_sample_mp4``: OpenCV's frames at ``linspace(0, T - 1, n)``, each once (the scorer sampled the
    centres of n segments with PyAV, whose colours differ by up to 2 levels)."""
    import cv2

    rng = np.random.default_rng(0)
    frames = [Image.fromarray(rng.integers(0, 255, (32, 48, 3), dtype=np.uint8)) for _ in range(24)]
    path = str(write_video(tmp_path / "v.mp4", frames))
    capture, decoded = cv2.VideoCapture(path), []
    while (read := capture.read())[0]:
        decoded.append(cv2.cvtColor(read[1], cv2.COLOR_BGR2RGB))
    wanted = np.linspace(0, 23, 16, dtype=int)
    assert [np.asarray(f).tolist() for f in released_video_frames(path, 16)] == [decoded[i].tolist() for i in wanted]
    assert len(released_video_frames(path, 40)) == 24


def test_a_real_video_is_resampled_to_the_generated_length_at_linspace_indices():
    assert resample_frames(list("abcde"), 3) == ["a", "c", "e"]
    assert resample_frames(list("abc"), 5) == ["a", "a", "b", "b", "c"]  # float32 linspace, integer part
    assert resample_frames(list("abcdef"), 6) == list("abcdef")


def test_missing_generated_image_is_invalid_and_scores_zero(tmp_path):
    doc = {"image": _grey(10), "Text_Prompt": " "}
    raw = UnifiedOutput("image_only", images=["gone.png"], root=str(tmp_path)).to_json()
    result = score_generation(doc, [raw], subtask="FIR")
    assert result["lpips"] == 1.0 and result["invalid_outputs"] == "missing_image"  # FIR = 1 - LPIPS = 0


def test_video_without_frames_is_invalid(tmp_path):
    doc = {"image": _grey(10), "video": str(tmp_path / "ref.mp4"), "Text_Prompt": "x"}
    result = score_generation(doc, [UnifiedOutput("video", root=str(tmp_path)).to_json()], subtask="VP")
    assert result["fvd"] == result["fid"] == 1000.0 and result["invalid_outputs"] == "no_video_frames"
    assert normalised_fvd_fid(result["fvd"]) == pytest.approx(0.0)


def test_standard_set_level_distances_of_a_perfect_run_are_zero(tmp_path, monkeypatch):
    import json

    from lmms_eval_unify.benchmarks.mme_unify.generation import standard_video_distances
    from lmms_eval_unify.benchmarks.mme_unify.offline.data import write_video
    from lmms_eval_unify.benchmarks.mme_unify.scoring import METRICS_ENV
    from lmms_eval_unify.generation.visuals import read_video_frames

    tiny = {"backbone": "tiny", "weights": "random"}
    monkeypatch.setenv(METRICS_ENV, json.dumps({"fid": tiny, "fvd": tiny}))
    docs, outputs = [], []
    for i in range(3):
        frames = [_grey(40 * i + 3 * k) for k in range(20)]
        video = write_video(tmp_path / f"v{i}.mp4", [f.resize((32, 32)) for f in frames])
        generated = read_video_frames(video, 16)
        names = []
        for k, frame in enumerate(generated):
            frame.save(tmp_path / f"g{i}_{k}.png")
            names.append(f"g{i}_{k}.png")
        docs.append({"video": str(video), "Text_Prompt": "x"})
        outputs.append(UnifiedOutput("video", video_frames=names, root=str(tmp_path)).to_json())
    docs.append({"video": "", "Text_Prompt": "no reference"})
    outputs.append(UnifiedOutput("video", video_frames=["g0_0.png"], root=str(tmp_path)).to_json())
    result = standard_video_distances("TVG", docs, outputs)
    assert result["left_out"] == 1
    assert abs(result["fid"]) < 1e-3 and abs(result["fvd"]) < 1e-3


# --- official variant: skipped failures (item 5) and TIE/TIG preprocessing (item 4) ---------------------------


def _failed_output(tmp_path, failure: str) -> str:
    (tmp_path / "corrupt.png").write_bytes(b"not a PNG")
    if failure == "model_error":
        return UnifiedOutput("image_only", error="CUDA out of memory", root=str(tmp_path)).to_json()
    images = {"no_image": [], "missing_path": ["gone.png"], "corrupt_file": ["corrupt.png"]}[failure]
    return UnifiedOutput("image_only", images=images, root=str(tmp_path)).to_json()


@pytest.mark.parametrize("failure", ["no_image", "missing_path", "corrupt_file", "model_error"])
@pytest.mark.parametrize("subtask", ["FIR", "TIE", "TIG"])
def test_failed_generated_image_official_is_left_out_corrected_scores_worst(tmp_path, subtask, failure):
    # Evaluate_Generation.py: `error != 0` -> continue; empty output path -> continue; a path that does not
    # exist or cannot be decoded -> load_and_preprocess_image returns None -> evaluate_* returns None -> the
    # sample is never appended to results[category], so it is out of the per-category mean.
    doc = {"image": _grey(10), "edited_image": _grey(10), "Text_Prompt": "a cat"}
    raw = _failed_output(tmp_path, failure)
    official = score_generation(doc, [raw], subtask=subtask, variant="official")
    corrected = score_generation(doc, [raw], subtask=subtask, variant="corrected")
    keys = [k for k in official if k not in ("invalid_outputs", "details")]
    assert keys and all(official[k] is None for k in keys)
    assert all(corrected[k] == WORST[k] for k in keys)
    assert official["invalid_outputs"] == corrected["invalid_outputs"] != ""


def test_failed_generated_video_official_is_left_out(tmp_path):
    doc = {"image": _grey(10), "video": str(tmp_path / "ref.mp4"), "Text_Prompt": "x"}
    result = score_generation(
        doc, [UnifiedOutput("video", root=str(tmp_path)).to_json()], subtask="VP", variant="official"
    )
    assert result["fvd"] is None and result["fid"] is None and result["invalid_outputs"] == "no_video_frames"


def test_released_clip_pair_resizes_both_to_the_smaller_height_and_width():
    # Output 2x1 (W x H) pixels [0, 255], reference 1x3. Target = (min H, min W) = (1, 1). Bilinear,
    # align_corners=False, 2 -> 1 columns samples x = 0.5 * 2 - 0.5 = 0.5: the mean of the two columns,
    # 0.5 in [0, 1]; ToPILImage computes byte(0.5 * 255 = 127.5) -> 127 (truncated, not rounded to 128).
    output = Image.fromarray(np.array([[[0, 0, 0], [255, 255, 255]]], dtype=np.uint8))
    reference = Image.fromarray(np.full((3, 1, 3), 200, dtype=np.uint8))
    a, b = released_clip_pair(output, reference)
    assert a.size == b.size == (1, 1)
    assert np.asarray(a).tolist() == [[[127, 127, 127]]]
    # 3 -> 1 rows of a constant column stays 200 (the 8-bit round trip is exact for whole values)
    assert np.asarray(b).tolist() == [[[200, 200, 200]]]


def test_released_clip_pair_keeps_equal_sizes():
    image = _grey(64).resize((5, 4))
    a, b = released_clip_pair(image, image)
    assert a.size == b.size == (5, 4)


def test_tie_official_scores_the_resized_pair(tmp_path, monkeypatch):
    import json

    from lmms_eval_unify.benchmarks.mme_unify.scoring import METRICS_ENV
    from lmms_eval_unify.metrics import clip_image_similarity

    monkeypatch.setenv(METRICS_ENV, json.dumps({"clip_score": {"backbone": "tiny", "weights": "random"}}))
    rng = np.random.default_rng(0)
    output = Image.fromarray(rng.integers(0, 255, (96, 40, 3), dtype=np.uint8))
    reference = Image.fromarray(rng.integers(0, 255, (30, 120, 3), dtype=np.uint8))
    output.save(tmp_path / "out.png")
    doc = {"edited_image": reference, "Text_Prompt": "a cat"}
    raw = UnifiedOutput("image_only", images=["out.png"], root=str(tmp_path)).to_json()
    config = {"backbone": "tiny", "weights": "random"}
    official = score_generation(doc, [raw], subtask="TIE", variant="official")["clip_i"]
    corrected = score_generation(doc, [raw], subtask="TIE", variant="corrected")["clip_i"]
    resized = released_clip_pair(output, reference)
    assert resized[0].size == resized[1].size == (40, 30)
    assert official == pytest.approx(float(clip_image_similarity([resized[0]], [resized[1]], config)[0]))
    assert corrected == pytest.approx(float(clip_image_similarity([output], [reference], config)[0]))
    assert official != pytest.approx(corrected)


def _tiny_metrics(monkeypatch) -> None:
    import json

    from lmms_eval_unify.benchmarks.mme_unify.scoring import METRICS_ENV

    tiny = {"backbone": "tiny", "weights": "random"}
    monkeypatch.setenv(METRICS_ENV, json.dumps({"lpips": {"weights": "random"}, "clip_score": tiny}))


def _output(tmp_path, size: tuple[int, int]) -> str:
    Image.new("RGB", size, (200, 30, 30)).save(tmp_path / f"out_{size[0]}x{size[1]}.png")
    return UnifiedOutput("image_only", images=[f"out_{size[0]}x{size[1]}.png"], root=str(tmp_path)).to_json()


@pytest.mark.parametrize("size", [(1, 1), (30, 30), (30, 400), (400, 30)])
def test_an_output_too_small_for_lpips_fails_only_its_sample(tmp_path, monkeypatch, size):
    """LPIPS (AlexNet) raises on a pair under 31 px a side. FIR: the released script skips the sample (official:
    left out), corrected scores it worst; both say why. TIG: the released script computes LPIPS too and drops the
    sample (official: left out), corrected scores it with CLIP, which resizes any image."""
    _tiny_metrics(monkeypatch)
    doc = {"image": Image.new("RGB", (64, 64), "blue"), "Text_Prompt": "a cat"}
    raw = _output(tmp_path, size)
    fir = {v: score_generation(doc, [raw], subtask="FIR", variant=v) for v in ("official", "corrected")}
    assert fir["official"]["lpips"] is None and fir["corrected"]["lpips"] == WORST["lpips"]
    assert fir["official"]["invalid_outputs"] == fir["corrected"]["invalid_outputs"] == "image_too_small"
    tig = {v: score_generation(doc, [raw], subtask="TIG", variant=v) for v in ("official", "corrected")}
    assert tig["official"]["clip_i"] is None and tig["official"]["invalid_outputs"] == "image_too_small"
    assert isinstance(tig["corrected"]["clip_i"], float) and tig["corrected"]["invalid_outputs"] == ""


def test_the_smallest_pair_lpips_takes_is_scored_and_a_tiny_reference_is_skipped(tmp_path, monkeypatch):
    _tiny_metrics(monkeypatch)
    doc = {"image": Image.new("RGB", (64, 64), "blue"), "Text_Prompt": "a cat"}
    scored = score_generation(doc, [_output(tmp_path, (31, 31))], subtask="FIR", variant="official")
    assert isinstance(scored["lpips"], float) and scored["invalid_outputs"] == ""
    tiny_reference = {"image": Image.new("RGB", (8, 8), "blue"), "Text_Prompt": "a cat"}
    for variant in ("official", "corrected"):
        skipped = score_generation(tiny_reference, [_output(tmp_path, (64, 64))], subtask="FIR", variant=variant)
        assert skipped["lpips"] is None and skipped["invalid_outputs"] == ""
        assert skipped["details"]["skipped"].startswith("reference_too_small")
