"""MME-Unify generation scorers: the official key-frame rule and invalid outputs."""

import numpy as np
from PIL import Image

from lmms_eval_unify.benchmarks.mme_unify.generation import keyframes, score_generation
from lmms_eval_unify.record import UnifiedOutput


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


def test_missing_generated_image_is_invalid_and_skipped(tmp_path):
    doc = {"image": _grey(10), "Text_Prompt": " "}
    raw = UnifiedOutput("image_only", images=["gone.png"], root=str(tmp_path)).to_json()
    result = score_generation("FIR", doc, raw)
    assert result["lpips"] is None and result["invalid_outputs"] == "missing_image"


def test_video_without_frames_is_invalid(tmp_path):
    doc = {"image": _grey(10), "video": str(tmp_path / "ref.mp4"), "Text_Prompt": "x"}
    result = score_generation("VP", doc, UnifiedOutput("video", root=str(tmp_path)).to_json())
    assert result["fvd"] is None and result["fid"] is None and result["invalid_outputs"] == "no_video_frames"
