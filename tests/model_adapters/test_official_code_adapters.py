"""show_o2, bagel, omnigen2: clear errors without their official code/weights; glue tested at the backend.

The official code is GPU-only and not on PyPI, so these tests replace the backend (the object the official
code would build) and check everything on our side of it: arguments, inputs, settings, post-processing.
"""

from types import SimpleNamespace

import pytest
import torch
from conftest import make_request
from lmms_eval_unify.model_adapters.bagel import Bagel
from lmms_eval_unify.model_adapters.official_code import MissingOfficialCode
from lmms_eval_unify.model_adapters.omnigen2 import NEGATIVE_PROMPT, OmniGen2
from lmms_eval_unify.model_adapters.show_o2 import ShowO2
from PIL import Image

from lmms_eval_unify.record import parse_output

ADAPTERS = [(ShowO2, "SHOW_O2_REPO"), (Bagel, "BAGEL_REPO"), (OmniGen2, "OMNIGEN2_REPO")]


def _random_image(*args, **kwargs):
    """What a seeded sampler would draw: the colour comes from torch's global generator."""
    r, g, b = (int(v) for v in torch.randint(0, 256, (3,)))
    return Image.new("RGB", (16, 16), (r, g, b))


@pytest.mark.parametrize(("cls", "env_var"), ADAPTERS)
def test_missing_checkout_names_the_argument_and_variable(cls, env_var, monkeypatch, tmp_path):
    monkeypatch.delenv(env_var, raising=False)
    with pytest.raises(MissingOfficialCode, match=rf"repo_path=<checkout> or set \${env_var}"):
        cls(output_dir=str(tmp_path))
    with pytest.raises(MissingOfficialCode, match="is not a checkout of"):
        cls(repo_path=str(tmp_path), output_dir=str(tmp_path))


def test_show_o2_without_the_wan_vae_says_which_file(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    with pytest.raises(MissingOfficialCode, match="Wan2.1_VAE.pth"):
        ShowO2(repo_path=str(tmp_path), output_dir=str(tmp_path))


def test_bagel_weights_folder_missing_files_is_reported(tmp_path, monkeypatch):
    (tmp_path / "inferencer.py").write_text("")
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "llm_config.json").write_text("{}")
    with pytest.raises(MissingOfficialCode, match="lacks vit_config.json, ae.safetensors, ema.safetensors"):
        Bagel(repo_path=str(tmp_path), pretrained=str(weights), output_dir=str(tmp_path))


def test_an_official_module_that_fails_to_import_is_named(tmp_path):
    probe = tmp_path / "omnigen2" / "pipelines" / "omnigen2" / "pipeline_omnigen2.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("import flash_attn_not_installed_here\n")
    with pytest.raises(
        MissingOfficialCode, match="cannot import omnigen2.pipelines.omnigen2.pipeline_omnigen2"
    ):
        OmniGen2(repo_path=str(tmp_path), output_dir=str(tmp_path))


# ---- Bagel ----------------------------------------------------------------------------------------------
class FakeInferencer:
    """The methods of the official ``InterleaveInferencer`` the adapter uses, recording their arguments."""

    def __init__(self):
        self.calls = []

    def interleave_inference(self, inputs, **settings):
        self.calls.append(("interleave_inference", inputs, settings))
        if settings["understanding_output"]:
            return ["<think>plan</think> The answer is B."]
        return [_random_image()]


@pytest.fixture
def bagel(monkeypatch, tmp_path):
    monkeypatch.setattr(Bagel, "_load_backend", lambda self: FakeInferencer())
    model = Bagel(output_dir=str(tmp_path), max_new_tokens=64)
    model.task_dict = {"toy": {"test": {i: {} for i in range(10)}}}
    return model


def test_bagel_understanding_sends_every_image_then_the_prompt(bagel):
    images = [Image.new("RGB", (8, 8), c) for c in ("red", "blue")]
    assert bagel.understand(images, "Which?", max_new_tokens=1024) == "The answer is B."
    _, inputs, settings = bagel.inferencer.calls[-1]
    assert inputs[:2] == images and inputs[2] == "Which?"
    assert settings == {
        "think": False,
        "understanding_output": True,
        "do_sample": False,
        "text_temperature": 0.3,
        "max_think_token_n": 64,
    }


def test_bagel_uses_the_official_settings_for_t2i_and_editing(bagel):
    bagel.generate_image("a maze", [], seed=1)
    bagel.generate_image("move the dot", [Image.new("RGB", (8, 8))], seed=1)
    (_, t2i_inputs, t2i), (_, edit_inputs, edit) = bagel.inferencer.calls
    assert t2i_inputs == ["a maze"] and len(edit_inputs) == 2
    assert t2i["cfg_interval"] == [0.4, 1.0] and t2i["cfg_renorm_type"] == "global"
    assert t2i["image_shapes"] == (1024, 1024) and "cfg_img_scale" not in t2i
    assert edit["cfg_interval"] == [0.0, 1.0] and edit["cfg_renorm_type"] == "text_channel"
    assert edit["cfg_img_scale"] == 2.0 and "image_shapes" not in edit  # the shape follows the input image
    assert t2i["cfg_text_scale"] == edit["cfg_text_scale"] == 4.0 and t2i["num_timesteps"] == 50


def test_bagel_images_are_reproducible_per_sample_seed(bagel):
    first, again = bagel.generate_image("x", [], seed=5), bagel.generate_image("x", [], seed=5)
    assert first.tobytes() == again.tobytes() != bagel.generate_image("x", [], seed=6).tobytes()


def test_bagel_failure_of_one_request_is_recorded(bagel):
    bagel.inferencer.interleave_inference = lambda inputs, **s: []
    out = parse_output(bagel.generate_until([make_request("q", {})])[0])
    assert out.failure.reason == "model_error" and "no text" in out.record.error


# ---- Show-o2 --------------------------------------------------------------------------------------------
class FakeShowO2Backend:
    def __init__(self):
        self.calls = []

    def understand(self, image, question, max_new_tokens):
        self.calls.append(("understand", image.size, question, max_new_tokens))
        return " a maze \n"

    def generate(self, prompt, guidance_scale, num_steps):
        self.calls.append(("generate", prompt, guidance_scale, num_steps))
        return _random_image()


@pytest.fixture
def show_o2(monkeypatch, tmp_path):
    monkeypatch.setattr(ShowO2, "_load_backend", lambda self: FakeShowO2Backend())
    model = ShowO2(output_dir=str(tmp_path))
    model.task_dict = {"toy": {"test": {i: {} for i in range(10)}}}
    return model


def test_show_o2_sees_one_image_and_draws_from_text_with_official_defaults(show_o2):
    request = make_request(
        "[GEN_PROMPT]draw[/GEN_PROMPT][QUESTION]what?[/QUESTION]",
        {"visual_cot": True, "max_new_tokens": 1024},
        n_images=3,
    )
    out = parse_output(show_o2.generate_until([request])[0])
    assert out.failure is None and out.record.text == "a maze"
    generate, understand = show_o2.backend.calls
    assert generate == ("generate", "draw", 5.0, 50)
    assert understand == ("understand", (8, 8), "what?", 300)  # the first image only; official 300-token cap
    assert show_o2.max_input_images == 1


def test_show_o2_understanding_without_an_image_is_an_error(show_o2):
    with pytest.raises(ValueError, match="needs an image"):
        show_o2.understand([], "hello")


# ---- OmniGen2 -------------------------------------------------------------------------------------------
class FakePipeline:
    def __init__(self, text=None):
        self.calls, self.text = [], text

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        return SimpleNamespace(images=[Image.new("RGB", (8, 8))], text=self.text)


@pytest.fixture
def omnigen2(monkeypatch, tmp_path):
    monkeypatch.setattr(OmniGen2, "_load_backend", lambda self: (FakePipeline(), FakePipeline(text=" B ")))
    return OmniGen2(output_dir=str(tmp_path))


def test_omnigen2_generation_and_editing_settings(omnigen2):
    omnigen2.generate_image("a maze", [], seed=7)
    omnigen2.generate_image("edit", [Image.new("RGB", (8, 8))] * 2, seed=7)
    t2i, edit = omnigen2.pipeline.calls
    assert t2i["input_images"] is None and len(edit["input_images"]) == 2
    assert t2i["generator"].initial_seed() == 7 and t2i["negative_prompt"] == NEGATIVE_PROMPT
    assert (t2i["height"], t2i["width"], t2i["num_inference_steps"]) == (1024, 1024, 50)
    assert (t2i["text_guidance_scale"], t2i["image_guidance_scale"], t2i["cfg_range"]) == (
        5.0,
        2.0,
        (0.0, 1.0),
    )


def test_omnigen2_understanding_reads_the_chat_text(omnigen2):
    assert omnigen2.understand([Image.new("RGB", (8, 8))], "which?") == "B"
    assert omnigen2.chat.calls[0]["prompt"] == "which?"
