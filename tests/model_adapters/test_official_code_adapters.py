"""show_o2, bagel, omnigen2: clear errors without their official code/weights; glue tested at the backend.

The official code is not on PyPI (and CI cannot fetch it), so these tests replace the backend (the object the
official code would build in the model's worker) by a stand-in class run in this process through the same
``invoke`` the worker uses (``InProcessBackend``), and check everything on our side of it: arguments, inputs,
settings, post-processing, per-sample seeds. tests/generation/test_worker.py runs the worker itself.
"""

from types import SimpleNamespace

import pytest
import torch
from conftest import make_request
from lmms_eval_unify.model_adapters.bagel import Bagel
from lmms_eval_unify.model_adapters.official.show_o2_backend import ShowO2Backend, hyper_params
from lmms_eval_unify.model_adapters.official_code import MissingOfficialCode
from lmms_eval_unify.model_adapters.omnigen2 import NEGATIVE_PROMPT, OmniGen2
from lmms_eval_unify.model_adapters.show_o2 import ShowO2
from PIL import Image

from lmms_eval_unify.generation.worker import InProcessBackend
from lmms_eval_unify.output.record import parse_output

ADAPTERS = [(ShowO2, "SHOW_O2_REPO"), (Bagel, "BAGEL_REPO"), (OmniGen2, "OMNIGEN2_REPO")]


def _random_image(*args, **kwargs):
    """What a seeded sampler would draw: the colour comes from torch's global generator."""
    r, g, b = (int(v) for v in torch.randint(0, 256, (3,)))
    return Image.new("RGB", (16, 16), (r, g, b))


@pytest.mark.parametrize(("cls", "env_var"), ADAPTERS)
def test_missing_checkout_names_the_argument_and_variable(cls, env_var, monkeypatch, tmp_path):
    monkeypatch.delenv(env_var, raising=False)
    weights = tmp_path / "weights"
    weights.mkdir()
    for name in ("llm_config.json", "vit_config.json", "ae.safetensors", "ema.safetensors"):
        (weights / name).write_text("{}")
    vae = tmp_path / "vae.pth"
    vae.write_bytes(b"PK\x03\x04")
    args = {"output_dir": str(tmp_path), **({"vae_path": str(vae)} if cls is ShowO2 else {})}
    args.update({"pretrained": str(weights)} if cls is Bagel else {})
    with pytest.raises(MissingOfficialCode, match=rf"repo_path=<checkout> or set \${env_var}"):
        cls(**args)
    with pytest.raises(MissingOfficialCode, match="is not a checkout of"):
        cls(repo_path=str(tmp_path), **args)


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


@pytest.mark.parametrize(("cls", "env_var"), ADAPTERS)
def test_a_missing_model_environment_names_the_command_that_makes_it(cls, env_var, monkeypatch, tmp_path):
    monkeypatch.setenv("LMMS_EVAL_UNIFY_MODEL_ENVS", str(tmp_path / "envs"))
    missing = cls.missing(cls.settings_class(repo_path=str(tmp_path)))
    envs = [item for item in missing if "environment of its own" in item.what]
    assert len(envs) == 1 and f"env create {cls.model_id}" in envs[0].fix
    assert str(tmp_path / "envs" / cls.model_id) in envs[0].what


# ---- Bagel ----------------------------------------------------------------------------------------------
class FakeInferencer:
    """The method of the BAGEL backend (the official ``InterleaveInferencer``'s) the adapter uses, recording its
    arguments."""

    def __init__(self):
        self.calls = []

    def interleave_inference(self, inputs, **settings):
        self.calls.append(("interleave_inference", inputs, settings))
        if settings["understanding_output"]:
            return ["<think>plan</think> The answer is B."]
        return [_random_image()]


@pytest.fixture
def bagel(monkeypatch, tmp_path):
    monkeypatch.setattr(Bagel, "_load_backend", lambda self: InProcessBackend(FakeInferencer()))
    model = Bagel(output_dir=str(tmp_path), max_new_tokens=64)
    model.task_dict = {"toy": {"test": {i: {} for i in range(10)}}}
    return model


def test_bagel_understanding_sends_every_image_then_the_prompt(bagel):
    images = [Image.new("RGB", (8, 8), c) for c in ("red", "blue")]
    assert bagel.understand(images, "Which?", max_new_tokens=1024) == "The answer is B."
    _, inputs, settings = bagel.backend.instance.calls[-1]
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
    (_, t2i_inputs, t2i), (_, edit_inputs, edit) = bagel.backend.instance.calls
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
    bagel.backend.instance.interleave_inference = lambda inputs, **s: []
    out = parse_output(bagel.generate_until([make_request("q", {})])[0])
    assert out.failure.reason == "model_error" and "no text" in out.record.error


# ---- Show-o2 --------------------------------------------------------------------------------------------
class FakeShowO2Backend:
    def __init__(self):
        self.calls = []

    def understand(self, image, question, max_new_tokens):
        """Like the official route, whose VAE encoding samples from torch's global generator."""
        self.calls.append(("understand", image.size, question, max_new_tokens))
        text = " a maze \n" if question == "what?" else f"latent {torch.randint(0, 10**6, ()).item()}"
        return {"token_ids": [], "text": text}

    def generate(self, prompts, seeds, guidance_scale, num_steps):
        self.calls.append(("generate", prompts, guidance_scale, num_steps))
        return [_seed_image(seed) for seed in seeds]


def _seed_image(seed):
    colour = torch.randint(0, 256, (3,), generator=torch.Generator().manual_seed(seed))
    return Image.new("RGB", (16, 16), tuple(int(v) for v in colour))


@pytest.fixture
def show_o2(monkeypatch, tmp_path):
    def build(**model_args):
        model = ShowO2(output_dir=str(tmp_path / str(len(model_args))), **model_args)
        model.task_dict = {"toy": {"test": {i: {} for i in range(10)}}}
        return model

    monkeypatch.setattr(ShowO2, "_load_backend", lambda self: InProcessBackend(FakeShowO2Backend()))
    build.default = build()
    return build


def test_show_o2_sees_one_image_and_draws_from_text_with_official_defaults(show_o2):
    show_o2 = show_o2.default
    request = make_request(
        "[GEN_PROMPT]draw[/GEN_PROMPT][QUESTION]what?[/QUESTION]",
        {"visual_cot": True, "max_new_tokens": 1024},
        n_images=3,
    )
    out = parse_output(show_o2.generate_until([request])[0])
    assert out.failure is None and out.record.text == "a maze"
    generate, understand = show_o2.backend.instance.calls
    assert generate == ("generate", ["draw"], 5.0, 50)
    assert understand == ("understand", (8, 8), "what?", 300)  # the first image only; official 300-token cap
    assert show_o2.max_input_images == 1


def test_show_o2_understanding_without_an_image_is_an_error(show_o2):
    with pytest.raises(ValueError, match="needs an image"):
        show_o2.default.understand([], "hello")


def test_show_o2_generates_a_window_in_one_backend_call_with_per_sample_seeds(show_o2):
    requests = [
        make_request(f"[GEN_PROMPT]draw {i}[/GEN_PROMPT][QUESTION]q{i}?[/QUESTION]", {"visual_cot": True}, doc_id=i)
        for i in range(3)
    ]
    batched = show_o2(batch_size=3)
    outputs = [parse_output(text) for text in batched.generate_until(requests)]
    generate_calls = [call for call in batched.backend.instance.calls if call[0] == "generate"]
    assert generate_calls == [("generate", ["draw 0", "draw 1", "draw 2"], 5.0, 50)]
    single = show_o2.default
    for request, output in zip(requests, outputs, strict=True):
        alone = parse_output(single.generate_until([request])[0])
        assert output.load_images() == alone.load_images()  # the same seed per sample, batched or not


class ShowO2StandIns:
    """The official modules the backend's text-to-image routine calls, with row-independent arithmetic:
    a velocity that depends on each row's noise and text, CFG over [conditional rows, unconditional rows]
    as ``t2i_generate`` splits them, an Euler sampler, and an identity VAE."""

    hyper = (4, None, 16, 6, 3, 1, 4, 4, 0, 1, 2, 3, 4, None, None, 5, None, None)

    def __init__(self):
        self.batch_rows = []

    def prepare_gen_input(self, prompts, tokenizer, n_image, bos, eos, boi, eoi, pad, img_pad, max_text, device):
        text = torch.tensor([[ord(c) for c in p[:max_text].ljust(max_text)] for p in prompts])
        positions = torch.ones(len(prompts), 1, 2, dtype=torch.long)
        return text, torch.zeros_like(text), positions, positions.clone()

    def omni_attn_mask_naive(self, rows, max_seq_len, positions, device):
        assert positions.shape[0] == rows
        return torch.ones(rows, 1, max_seq_len, max_seq_len)

    def t2i_generate(self, x, t, text_tokens, attention_mask, guidance_scale, **kwargs):
        self.batch_rows.append(x.shape[0])
        velocity = -x + text_tokens.float().mean(dim=1).view(-1, 1, 1, 1).to(x.dtype) / 1000
        conditional, unconditional = velocity.chunk(2)
        guided = unconditional + guidance_scale * (conditional - unconditional)
        return torch.cat([guided, guided])

    def sample_ode(self, num_steps, **kwargs):
        def sample(z, model_fn, **model_kwargs):
            x = z
            for step in range(num_steps):
                x = x + model_fn(x, step / num_steps, **model_kwargs) / num_steps
            return [z, x]

        return sample


def _stand_in_backend(stand_ins):
    backend = ShowO2Backend.__new__(ShowO2Backend)  # the official modules are replaced, not loaded
    transport_config = SimpleNamespace(
        path_type=None, prediction=None, loss_weight=None, train_eps=None, sample_eps=None, snr_type=None,
        do_shift=None, sampling_method="euler", atol=None, rtol=None, reverse=False, time_shifting_factor=None,
    )  # fmt: skip
    backend.hyper, backend.device, backend.dtype = hyper_params(stand_ins.hyper), torch.device("cpu"), torch.float32
    backend.torch = torch
    backend.config = SimpleNamespace(transport=transport_config)
    backend.tokenizer, backend.prepare_gen_input = None, stand_ins.prepare_gen_input
    backend.models = SimpleNamespace(omni_attn_mask_naive=stand_ins.omni_attn_mask_naive)
    backend.transport = SimpleNamespace(create_transport=lambda **kwargs: None, Sampler=lambda transport: stand_ins)
    backend.model = SimpleNamespace(t2i_generate=stand_ins.t2i_generate)
    backend.vae = SimpleNamespace(batch_decode=lambda latents: latents)
    backend.utils = SimpleNamespace(
        denorm=lambda images: ((images.float().clamp(-1, 1) + 1) * 127.5).permute(0, 2, 3, 1).byte().numpy()
    )
    return backend


def test_show_o2_backend_batch_equals_single_prompt_runs():
    stand_ins = ShowO2StandIns()
    backend = _stand_in_backend(stand_ins)
    prompts, seeds = ["a red cube", "two cats", "x"], [7, 11, 7]
    batched = backend.generate(prompts, seeds, 5.0, 4)
    assert stand_ins.batch_rows == [6] * 4  # three conditional + three unconditional rows per step
    singles = [backend.generate([p], [s], 5.0, 4)[0] for p, s in zip(prompts, seeds, strict=True)]
    assert [image.tobytes() for image in batched] == [image.tobytes() for image in singles]
    assert batched[0].tobytes() != batched[2].tobytes()  # same seed, different prompt
    assert len({image.tobytes() for image in batched}) == 3


# ---- OmniGen2 -------------------------------------------------------------------------------------------
class FakeOmniGen2Backend:
    """The OmniGen2 backend's two calls. Draws its image from the item's generator seed and, as the official
    pipeline's VAE encoding of input images does, from torch's global generator."""

    def __init__(self):
        self.calls = []

    def generate(self, generator_seed, **settings):
        self.calls.append(("generate", generator_seed, settings))
        latent = torch.randint(0, 256, (3,), generator=torch.Generator().manual_seed(generator_seed))
        if settings["input_images"]:
            latent = (latent + torch.randint(0, 256, (3,))) % 256
        return [Image.new("RGB", (8, 8), tuple(latent.tolist()))]

    def chat(self, generator_seed, **settings):
        self.calls.append(("chat", generator_seed, settings))
        return " B "


@pytest.fixture
def omnigen2(monkeypatch, tmp_path):
    monkeypatch.setattr(OmniGen2, "_load_backend", lambda self: InProcessBackend(FakeOmniGen2Backend()))
    return OmniGen2(output_dir=str(tmp_path))


def test_omnigen2_generation_and_editing_settings(omnigen2):
    omnigen2.generate_image("a maze", [], seed=7)
    omnigen2.generate_image("edit", [Image.new("RGB", (8, 8))] * 2, seed=7)
    (_, t2i_seed, t2i), (_, _, edit) = omnigen2.backend.instance.calls
    assert t2i["input_images"] is None and len(edit["input_images"]) == 2
    assert t2i_seed == 7 and t2i["negative_prompt"] == NEGATIVE_PROMPT
    assert (t2i["height"], t2i["width"], t2i["num_inference_steps"]) == (1024, 1024, 50)
    assert (t2i["text_guidance_scale"], t2i["image_guidance_scale"], t2i["cfg_range"]) == (
        5.0,
        2.0,
        (0.0, 1.0),
    )


def test_omnigen2_understanding_reads_the_chat_text(omnigen2):
    assert omnigen2.understand([Image.new("RGB", (8, 8))], "which?") == "B"
    assert (
        omnigen2.backend.instance.calls[0][:2] == ("chat", 0)
        and omnigen2.backend.instance.calls[0][2]["prompt"] == "which?"
    )


def test_omnigen2_edits_are_reproducible_per_sample_seed(omnigen2):
    """The same request and seed give the same image whatever torch's global state was before."""
    inputs = [Image.new("RGB", (8, 8), "red")]
    images = []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)
        images.append([omnigen2.generate_image("edit", inputs, seed=seed).tobytes() for seed in (7, 8)])
    assert images[0] == images[1] and images[0][0] != images[0][1]


def test_show_o2_answers_are_reproducible_per_sample_seed(show_o2):
    model, image = show_o2.default, Image.new("RGB", (8, 8))
    answers = []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)
        answers.append([model.understand([image], "which?", seed=seed) for seed in (7, 8)])
    assert answers[0] == answers[1] and answers[0][0] != answers[0][1]


def test_the_official_codes_commit_environment_and_packages_are_recorded_in_model_json(monkeypatch, tmp_path):
    """The checkout's HEAD beside the checked commit, the interpreter and the versions the backend reported reach
    ``model.json``'s provenance, not ``describe()`` (the same weights and settings stay one configuration)."""
    import json
    import subprocess

    from lmms_eval_unify.generation.worker_main import package_versions

    checkout = tmp_path / "OmniGen2"
    checkout.mkdir()
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    monkeypatch.setattr(OmniGen2, "_load_backend", lambda self: InProcessBackend(FakeOmniGen2Backend()))
    model = OmniGen2(output_dir=str(tmp_path / "out"), repo_path=str(checkout), env="current")
    model.task_dict = {"toy": {"test": {0: {}}}}
    model.generate_until([make_request("draw", {"protocol": "image_only"})])
    saved = json.loads((model.media.root / "model.json").read_text(encoding="utf-8"))
    ((_, official),) = saved.pop("provenance")[0].items()
    assert official["commit"] == head and official["checkout"] == str(checkout.resolve())
    assert official["checked_commit"] == OmniGen2.official.checked_commit and official["environment"] == "current"
    assert official["packages"] == package_versions() and "torch" in official["packages"]
    assert "repo_path" not in saved and "commit" not in json.dumps(saved)


@pytest.mark.parametrize(("cls", "env_var"), ADAPTERS)
def test_every_official_code_adapter_records_its_official_codes_provenance(cls, env_var):
    import importlib

    from lmms_eval_unify.model_adapters.official_code import RunsOfficialCode

    assert cls.official is importlib.import_module(cls.__module__).OFFICIAL and cls.official.env_var == env_var
    assert cls.provenance is RunsOfficialCode.provenance  # not UnifiedModel's empty one
