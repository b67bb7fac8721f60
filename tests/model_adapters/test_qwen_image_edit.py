"""Qwen-Image-Edit adapter on a tiny diffusers pipeline (CPU, offline)."""

import numpy as np
import pytest
from lmms_eval_unify.model_adapters.qwen_image_edit import QwenImageEdit
from PIL import Image


@pytest.fixture(scope="module")
def editor(tiny_qwen_edit, tmp_path_factory):
    media = str(tmp_path_factory.mktemp("media"))
    return QwenImageEdit(pretrained=str(tiny_qwen_edit), num_inference_steps=1, height=32, width=32, output_dir=media)


def test_edits_with_true_cfg_and_the_per_sample_seed(editor, monkeypatch):
    calls = []
    original = type(editor.pipeline).__call__

    def spy(pipeline, **kwargs):
        calls.append(kwargs)
        return original(pipeline, **kwargs)

    monkeypatch.setattr(type(editor.pipeline), "__call__", spy)
    first = Image.new("RGB", (40, 40), "red")
    image = editor.generate_image("move the dot up", [first, Image.new("RGB", (40, 40), "blue")], seed=11)
    assert image.size == (32, 32) and image.mode == "RGB"
    (call,) = calls
    assert call["true_cfg_scale"] == 4.0 and call["negative_prompt"] == [" "] and "guidance_scale" not in call
    assert call["image"][0].getpixel((0, 0)) == (0, 0, 255)  # the last input image is the one edited
    assert [g.initial_seed() for g in call["generator"]] == [11]


def test_text_to_image_requests_are_refused_clearly(editor):
    with pytest.raises(ValueError, match="edits an input image"):
        editor.generate_image("a maze", [], seed=0)
    assert editor.capabilities == {"generate_image"}


def test_batched_edits_equal_one_by_one_within_tolerance(editor):
    """Items keep their own seeded noise; batching only changes float summation order (padding of the
    prompt encodings), so pixels agree within 2/255."""
    red, blue = Image.new("RGB", (40, 40), "red"), Image.new("RGB", (40, 30), "blue")
    batch = [("move the dot up", [red], {"seed": 1}), ("paint it green please now", [red], {"seed": 2}),
             ("rotate", [blue], {"seed": 3})]  # fmt: skip
    batched = editor.generate_image_batch(batch)
    for image, (prompt, images, decoding) in zip(batched, batch, strict=True):
        alone = np.asarray(editor.generate_image(prompt, images, **decoding), dtype=np.int16)
        assert np.abs(np.asarray(image, dtype=np.int16) - alone).max() <= 2
    assert batched[0].tobytes() != batched[1].tobytes()
