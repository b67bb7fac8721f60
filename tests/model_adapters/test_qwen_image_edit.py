"""Qwen-Image-Edit adapter on a tiny diffusers pipeline (CPU, offline)."""

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
    assert call["true_cfg_scale"] == 4.0 and call["negative_prompt"] == " " and "guidance_scale" not in call
    assert call["image"].getpixel((0, 0)) == (0, 0, 255)  # the last input image is the one edited
    assert call["generator"].initial_seed() == 11 and call["prompt"] == "move the dot up"


def test_text_to_image_requests_are_refused_clearly(editor):
    with pytest.raises(ValueError, match="edits an input image"):
        editor.generate_image("a maze", [], seed=0)
    assert editor.capabilities == {"generate_image"}


def test_a_batch_is_the_model_cards_call_per_item(editor):
    """Each item is the model card's one-image call with its own seed: a batch equals one-by-one bit for bit."""
    red, blue = Image.new("RGB", (40, 40), "red"), Image.new("RGB", (40, 30), "blue")
    batch = [("move the dot up", [red], {"seed": 1}), ("paint it green please now", [red], {"seed": 2}),
             ("rotate", [blue], {"seed": 3})]  # fmt: skip
    batched = editor.generate_image_batch(batch)
    for image, (prompt, images, decoding) in zip(batched, batch, strict=True):
        assert image.tobytes() == editor.generate_image(prompt, images, **decoding).tobytes()
    assert batched[0].tobytes() != batched[1].tobytes()
