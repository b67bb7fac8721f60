"""MME-Unify generation scorers: the official key-frame rule and invalid outputs."""

import numpy as np
from PIL import Image

from lmms_eval_unify.benchmarks.mme_unify.generation import keyframes, score_generation
from lmms_eval_unify.metrics import normalise_distance_score
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


def test_missing_generated_image_is_invalid_and_scores_zero(tmp_path):
    doc = {"image": _grey(10), "Text_Prompt": " "}
    raw = UnifiedOutput("image_only", images=["gone.png"], root=str(tmp_path)).to_json()
    result = score_generation("FIR", doc, raw)
    assert result["lpips"] == 1.0 and result["invalid_outputs"] == "missing_image"  # FIR = 1 - LPIPS = 0


def test_video_without_frames_is_invalid(tmp_path):
    doc = {"image": _grey(10), "video": str(tmp_path / "ref.mp4"), "Text_Prompt": "x"}
    result = score_generation("VP", doc, UnifiedOutput("video", root=str(tmp_path)).to_json())
    assert result["fvd"] == result["fid"] == 1000.0 and result["invalid_outputs"] == "no_video_frames"
    assert normalise_distance_score(result["fvd"], "official") == 0.0


def test_standard_set_level_distances_of_a_perfect_run_are_zero(tmp_path, monkeypatch):
    import json

    from lmms_eval_unify.benchmarks.mme_unify.data import write_video
    from lmms_eval_unify.benchmarks.mme_unify.generation import standard_video_distances
    from lmms_eval_unify.benchmarks.mme_unify.scoring import METRICS_ENV
    from lmms_eval_unify.visuals import read_video_frames

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
