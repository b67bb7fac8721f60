import av
import numpy as np
import pytest
from PIL import Image

from lmms_eval_unify.generation.visuals import Video, model_inputs, read_video_frames, uniform_frame_indices


def _write_video(path, n_frames):
    """A video whose frame i is a flat grey of level 10 * i."""
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("mpeg4", rate=8)
        stream.width, stream.height, stream.pix_fmt = 32, 32, "yuv420p"
        for i in range(n_frames):
            frame = av.VideoFrame.from_ndarray(np.full((32, 32, 3), 10 * i, dtype=np.uint8), format="rgb24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode())


def test_uniform_indices():
    assert uniform_frame_indices(12, 6) == [1, 3, 5, 7, 9, 11]
    assert uniform_frame_indices(4, 6) == [0, 1, 2, 3]
    assert uniform_frame_indices(0, 6) == []


def test_six_frame_rule_on_a_generated_video(tmp_path):
    path = tmp_path / "clip.mp4"
    _write_video(path, 24)
    frames = read_video_frames(path, 6)
    levels = [round(np.asarray(f).mean() / 10) for f in frames]
    assert levels == [i for i in uniform_frame_indices(24, 6)]


def test_model_inputs_by_capability(tmp_path):
    path = tmp_path / "clip.mp4"
    _write_video(path, 12)
    image = Image.new("RGB", (4, 4), "red")
    as_frames = model_inputs([image, str(path)], watches_video=False, max_images=None, n_frames=6)
    assert len(as_frames) == 7 and all(isinstance(x, Image.Image) for x in as_frames)
    assert model_inputs([image, {"video": str(path)}], watches_video=True, max_images=None)[1] == Video(str(path))
    first_only = model_inputs([str(path), image], watches_video=False, max_images=1, n_frames=6)
    assert len(first_only) == 1 and round(np.asarray(first_only[0]).mean() / 10) == 1


def test_a_video_for_a_model_that_cannot_watch_it_needs_the_tasks_frame_count(tmp_path):
    path = tmp_path / "clip.mp4"
    _write_video(path, 12)
    with pytest.raises(ValueError, match="num_frames"):
        model_inputs([{"video": str(path)}], watches_video=False, max_images=None)
    assert model_inputs([{"video": str(path)}], watches_video=True, max_images=None) == [Video(str(path))]


def test_unknown_visual_type_raises():
    with pytest.raises(TypeError):
        model_inputs([object()], watches_video=False, max_images=None)
