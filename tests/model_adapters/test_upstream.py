"""The ``upstream`` bridge on stand-ins of lmms-eval's four unified models (the real ones need their weights and
code checkouts): each stand-in takes the real constructor's arguments, defaults its folders to ``./logs/...`` and
answers the way the real class does (JSON ``{"text", "images"}`` in a generation mode, images only saved in its
folder by the GtA route, plain text). The stand-ins replace the real classes in lmms-eval's own registry for
one test, so the bridge finds them the way it finds the real ones. The per-model table is checked against the
real upstream source files (read, not imported)."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import inspect
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from huggingface_hub import constants
from lmms_eval.api.model import lmms
from lmms_eval_unify.model_adapters.upstream import (
    FIXED_WHY,
    UPSTREAMS,
    Upstream,
    UpstreamUnavailable,
    reply_text,
)
from PIL import Image, ImageOps

from lmms_eval_unify.commands.check_adapter import (
    SAMPLE_SPLIT,
    SAMPLE_TASK,
    build_model,
    check_protocol,
    run_checks,
    sample_image,
)
from lmms_eval_unify.commands.check_adapter import main as check_adapter_main
from lmms_eval_unify.generation.devices import seeded
from lmms_eval_unify.generation.readiness import model_missing
from lmms_eval_unify.generation.settings import ModelArgumentError
from lmms_eval_unify.output.record import parse_output

GEN_PROMPT = re.compile(r"\[GEN_PROMPT\](.*?)\[/GEN_PROMPT\]", re.DOTALL)
SERVED_READING_ONE_IMAGE = {"direct", "answer_and_image", "image_only", "visual_cot_steps"}
"""The protocols of check-adapter's sample that models answering about one image only serve (a one-step visual
chain plans from the input image; the others answer about a generated image too)."""


def colour_of(prompt: str, salt: int) -> tuple[int, int, int]:
    red, green, blue = hashlib.sha256(f"{prompt}|{salt}".encode()).digest()[:3]
    return red, green, blue


def drawn(prompt: str, inputs: list[Image.Image], salt: int) -> Image.Image:
    """What every stand-in draws: the first input image inverted (an edit), else a flat colour of the prompt."""
    if inputs:
        return ImageOps.invert(inputs[0].convert("RGB"))
    return Image.new("RGB", (24, 16), colour_of(prompt, salt))


def answer(name: str, context: str, images: list[Image.Image], gen_kwargs: dict) -> str:
    """What the stand-ins answer: what they read, and the first line of the prompt (a step loop's prompt ends in
    its stop word, which must not end the loop)."""
    sizes = ",".join(f"{image.width}x{image.height}" for image in images)
    budget = gen_kwargs.get("max_new_tokens")
    return f"{name} read {len(images)} image(s) [{sizes}] max_new_tokens={budget}: {context.splitlines()[0]}"


class StandIn(lmms):
    """What the stand-ins share: the doc lookup of the real classes, and a way to misbehave when saving."""

    misbehaviour: str | None = None
    """``None``; ``nothing`` (no file); ``not_an_image``; ``symlink`` (a link to an image outside); ``outside``
    (the image saved outside and that path reported)."""
    outside: Path = Path("/nonexistent")

    def loglikelihood(self, requests):
        raise NotImplementedError

    def generate_until_multi_round(self, requests):
        raise NotImplementedError

    def visuals(self, request: Any) -> list[Image.Image]:
        _, _, doc_to_visual, doc_id, task, split = request.args
        return list(doc_to_visual(self.task_dict[task][split][doc_id]))

    def save(self, image: Image.Image, path: str) -> str:
        """Save ``image`` at ``path`` the way the test asks; the path the model reports."""
        escaped = self.outside / Path(path).name
        if self.misbehaviour == "nothing":
            return path
        if self.misbehaviour == "not_an_image":
            Path(path).write_bytes(b"certainly not a PNG")
            return path
        if self.misbehaviour in ("symlink", "outside"):
            image.save(escaped)
            if self.misbehaviour == "outside":
                return str(escaped)
            os.symlink(escaped, path)
            return path
        image.save(path)
        return path


class StandInOvisU1(StandIn):
    """Like ``ovis_u1.OvisU1``: understanding in plain text; ``visual_cot`` gen_kwargs run the GtA route, whose
    stage 1 saves ``generated_images/<task>/<task>_<doc>_stage1_0.png`` and whose reply is the stage-2 text."""

    def __init__(
        self,
        pretrained: str = "AIDC-AI/Ovis-U1-3B",
        device: str = "cuda",
        stage2_max_new_tokens: int = 512,
        output_dir: str | None = None,
        save_intermediate: bool = False,
        intermediate_dir: str | None = None,
        fail_gracefully: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.arguments = {"pretrained": pretrained, "device": device, "fail_gracefully": fail_gracefully, **kwargs}
        self.stage2_max_new_tokens = stage2_max_new_tokens
        self.output_dir = output_dir or "./logs/ovis_u1_visual_cot"
        self.generated_images_dir = os.path.join(self.output_dir, "generated_images")
        self.intermediate_dir = intermediate_dir or os.path.join(self.output_dir, "intermediate_artifacts")

    def generate_visual_cot(self, requests):
        return self.generate_until(requests)

    def generate_until(self, requests):
        replies = []
        for request in requests:
            context, gen_kwargs, _, doc_id, task, _ = request.args
            images = self.visuals(request)
            if gen_kwargs.pop("visual_cot", False):
                folder = os.path.join(self.generated_images_dir, task)
                os.makedirs(folder, exist_ok=True)
                salt = int(torch.randint(0, 2**31 - 1, (1,)).item())  # its diffusion samples from torch
                image = drawn(GEN_PROMPT.search(context).group(1), images[:1], salt)
                self.save(image, os.path.join(folder, f"{task}_{doc_id}_stage1_0.png"))
                replies.append(f"stage-2 answer in {self.stage2_max_new_tokens} token(s)")
            else:
                replies.append(answer("ovis", context, images, gen_kwargs))
        return replies


class StandInIllume(StandIn):
    """Like ``illume_plus.ILLUMEPlus``: prompts in GtA tags (or every prompt with ``enable_visual_cot``) draw,
    saving ``generated_images/<task>/<doc>_gen.png`` (a grey placeholder without image decoding)."""

    def __init__(
        self,
        pretrained: str = "ILLUME-MLLM/illume_plus-qwen2_5-7b-hf",
        device: str = "cuda",
        enable_visual_cot: bool = False,
        stage2_max_new_tokens: int = 512,
        output_dir: str | None = None,
        intermediate_dir: str | None = None,
        fail_gracefully: bool = True,
        enable_image_decoding: bool = False,
        tokenizer_config_path: str | None = None,
        diffusion_decoder_path: str | None = None,
    ) -> None:
        super().__init__()
        self.arguments = {
            "tokenizer_config_path": tokenizer_config_path,
            "diffusion_decoder_path": diffusion_decoder_path,
        }
        self.enable_visual_cot = enable_visual_cot or bool(tokenizer_config_path or diffusion_decoder_path)
        self.enable_image_decoding = enable_image_decoding
        self.output_dir = output_dir or "./logs/illume_plus_visual_cot"
        self.generated_images_dir = os.path.join(self.output_dir, "generated_images")
        os.makedirs(self.generated_images_dir, exist_ok=True)
        self.intermediate_dir = intermediate_dir or os.path.join(self.output_dir, "intermediate_artifacts")
        self.inputs_seen: list[int] = []

    def generate_visual_cot(self, requests):
        return self.generate_until(requests)

    def generate_until(self, requests):
        replies = []
        for request in requests:
            context, gen_kwargs, _, doc_id, task, _ = request.args
            images = self.visuals(request)
            tags = GEN_PROMPT.search(context)
            if self.enable_visual_cot or tags:
                self.inputs_seen.append(len(images))
                folder = os.path.join(self.generated_images_dir, task)
                os.makedirs(folder, exist_ok=True)
                salt = int(torch.randint(0, 2**31 - 1, (1,)).item())
                image = drawn(tags.group(1) if tags else context, images, salt)
                if not self.enable_image_decoding:
                    image = Image.new("RGB", (256, 256), (200, 200, 200))
                self.save(image, os.path.join(folder, f"{doc_id}_gen.png"))
                replies.append("stage-2 answer")
            else:
                replies.append(answer("illume", context, images, gen_kwargs))
        return replies


class StandInMMaDA(StandIn):
    """Like ``mmada.MMaDA``: ``mode=understanding`` answers about the first image in plain text (``""`` without
    one); ``mode=generation`` draws from the text alone, seeded by ``self.seed``, and replies JSON."""

    def __init__(
        self,
        pretrained: str = "Gen-Verse/MMaDA-8B-MixCoT",
        mode: str = "understanding",
        output_image_dir: str | None = None,
        seed: int = 0,
        continual_mode: bool = True,
        response_persistent_folder: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if mode not in ("understanding", "generation"):
            raise ValueError(f"mode must be 'understanding' or 'generation', got '{mode}'")
        self.mode, self.seed, self.continual_mode = mode, seed, continual_mode
        self.response_persistent_folder = response_persistent_folder or "./logs/mmada_persistent_folder"
        self.output_image_dir = output_image_dir or os.path.join(
            self.response_persistent_folder, "mmada_generated_images"
        )
        os.makedirs(self.output_image_dir, exist_ok=True)
        if continual_mode:
            os.makedirs(self.response_persistent_folder, exist_ok=True)

    def generate_until(self, requests):
        replies = []
        for request in requests:
            context, gen_kwargs, _, doc_id, task, _ = request.args
            if self.mode == "understanding":
                images = self.visuals(request)[:1]
                reply = answer(type(self).__name__, context, images, {}) if images else ""
            else:
                path = os.path.join(self.output_image_dir, f"{task}_{doc_id}.png")
                path = self.save(drawn(context, [], self.seed), path)
                reply = json.dumps({"text": f"Generated image for prompt: {context}", "images": [path]})
            if self.continual_mode:
                Path(self.response_persistent_folder, "mmada_response.json").write_text(json.dumps({doc_id: reply}))
            replies.append(reply)
        return replies


class StandInBagel(StandInMMaDA):
    """Like ``bagel_unig2u.BagelUniG2U``: MMaDA's modes, plus the ``visual_cot`` GtA route whose stage 1 edits the
    first image into ``<output_image_dir>/<task>_<doc>_stage1.png`` and whose reply is the stage-2 text."""

    def __init__(
        self,
        pretrained: str,
        mode: str = "generation",
        output_image_dir: str | None = None,
        seed: int = 0,
        continual_mode: bool = True,
        response_persistent_folder: str | None = None,
        stage2_max_new_tokens: int = 16384,
        intermediate_dir: str | None = None,
        fail_gracefully: bool = True,
    ) -> None:
        folder = response_persistent_folder or "./logs/bagel_persistent_folder"
        self.intermediate_dir = intermediate_dir or os.path.join(folder, "visual_cot_artifacts")
        super().__init__(pretrained, mode, output_image_dir, seed, continual_mode, folder)

    def generate_visual_cot(self, requests):
        return self.generate_until(requests)

    def generate_until(self, requests):
        replies = []
        for request in requests:
            context, gen_kwargs, _, doc_id, task, _ = request.args
            if not gen_kwargs.pop("visual_cot", False):
                replies += super().generate_until([request])
                continue
            image = drawn(GEN_PROMPT.search(context).group(1), self.visuals(request)[:1], self.seed)
            self.save(image, os.path.join(self.output_image_dir, f"{task}_{doc_id}_stage1.png"))
            replies.append("stage-2 answer")
        return replies


STAND_INS: dict[str, type[StandIn]] = {
    "ovis_u1": StandInOvisU1,
    "illume_plus": StandInIllume,
    "mmada": StandInMMaDA,
    "bagel_unig2u": StandInBagel,
}


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory of the test: empty, and the stand-ins' ``./logs`` defaults would land in it."""
    folder = tmp_path / "cwd"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cwd: Path) -> Path:
    """The stand-ins registered under the real names in lmms-eval's registry for this test; the folder the
    misbehaving ones save "outside" images in."""
    from lmms_eval.models import MODEL_REGISTRY_V2
    from lmms_eval.models.registry_v2 import ModelManifest

    for name, cls in STAND_INS.items():
        manifest = ModelManifest(model_id=name, simple_class_path=f"{__name__}.{cls.__name__}")
        monkeypatch.setitem(MODEL_REGISTRY_V2._manifests, name, manifest)
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.setattr(StandIn, "outside", outside)
    monkeypatch.setattr(sys, "path", list(sys.path))  # repo_path goes on sys.path: put it back afterwards
    return outside


def bridge(name: str, out: Path, **model_args: Any) -> Upstream:
    if name == "bagel_unig2u":
        model_args.setdefault("pretrained", str(out / "bagel_weights"))
    return Upstream(upstream=name, output_dir=str(out), resume=False, device="cpu", **model_args)


def files_under(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file() or path.is_symlink())


@pytest.mark.parametrize("name", sorted(STAND_INS))
def test_answers_come_back_as_each_upstream_gives_them(name: str, stand_ins: Path, tmp_path: Path) -> None:
    model = bridge(name, tmp_path / "out")
    assert isinstance(model.upstream, STAND_INS[name])
    red = Image.new("RGB", (10, 6), "red")
    reply = model.understand([red], "What colour?", max_new_tokens=7, seed=3, phase=None)
    takes_gen_kwargs = name in ("ovis_u1", "illume_plus")
    expected_name = {"ovis_u1": "ovis", "illume_plus": "illume"}.get(name, STAND_INS[name].__name__)
    assert (
        reply
        == f"{expected_name} read 1 image(s) [10x6] max_new_tokens={7 if takes_gen_kwargs else None}: What colour?"
    )
    if UPSTREAMS[name].mode:  # the bridge left the model in understanding mode for that call
        mode = UPSTREAMS[name].mode
        assert getattr(model.upstream, mode.attribute) == mode.understanding


@pytest.mark.parametrize("name", sorted(STAND_INS))
def test_images_are_read_from_where_each_upstream_puts_them(name: str, stand_ins: Path, tmp_path: Path) -> None:
    model = bridge(name, tmp_path / "out")
    image = model.generate_image("a red square", [], seed=7, phase=None)
    assert image.mode == "RGB" and image.size == (24, 16)
    if UPSTREAMS[name].seed_attribute:  # seeded through the attribute the upstream seeds from
        assert image.getpixel((0, 0)) == colour_of("a red square", 7)
    again = model.generate_image("a red square", [], seed=7, phase=None)
    other = model.generate_image("a red square", [], seed=8, phase=None)
    assert again.tobytes() == image.tobytes() and other.tobytes() != image.tobytes()  # per-sample seeds
    written = [path for path in files_under(model.outputs) if path.suffix == ".png"]
    assert len(written) == 3 and all(path.stat().st_size for path in written)


@pytest.mark.parametrize("name", sorted(STAND_INS))
def test_edits_follow_each_upstream_and_models_without_editing_draw_from_text(
    name: str, stand_ins: Path, tmp_path: Path
) -> None:
    model = bridge(name, tmp_path / "out")
    first, last = Image.new("RGB", (8, 8), (10, 20, 30)), Image.new("RGB", (6, 6), (200, 100, 0))
    image = model.generate_image("edit it", [first, last], seed=1, phase=None)
    if name == "mmada":  # no editing: drawn from the text, the input images are not given
        assert image.getpixel((0, 0)) == colour_of("edit it", 1)
    elif name == "illume_plus":  # edits with every input image
        assert model.upstream.inputs_seen == [2] and image.getpixel((0, 0)) == (245, 235, 225)
    else:  # one image: the last (the current state of a step loop)
        assert image.size == (6, 6) and image.getpixel((0, 0)) == (55, 155, 255)


@pytest.mark.parametrize("name", ["mmada", "bagel_unig2u"])
def test_single_image_understanding_refuses_other_image_counts(name: str, stand_ins: Path, tmp_path: Path) -> None:
    model = bridge(name, tmp_path / "out")
    assert model.max_input_images == 1  # a doc's inputs are cut to the first, as the upstream reads them
    image = Image.new("RGB", (4, 4))
    for images in ([], [image, image]):
        with pytest.raises(ValueError, match=rf"answers about exactly 1 image\(s\).*this request has {len(images)}"):
            model.understand(images, "What is it?", seed=0)


@pytest.mark.parametrize("name", sorted(STAND_INS))
def test_every_upstream_folder_is_in_the_media_folder_and_nothing_is_written_elsewhere(
    name: str, stand_ins: Path, tmp_path: Path, cwd: Path
) -> None:
    out = tmp_path / "out"
    model = bridge(name, out)
    for argument in UPSTREAMS[name].folder_arguments:
        assert Path(getattr(model.upstream, argument)) == model.outputs / argument
    checks = run_checks(model, 8)
    claimed = {check.protocol for check in checks}
    reads_one_image = UPSTREAMS[name].understanding_images == 1
    assert {check.protocol for check in checks if check.ok} == (
        SERVED_READING_ONE_IMAGE if reads_one_image else claimed
    )
    assert list(cwd.iterdir()) == [] and list(stand_ins.iterdir()) == []
    assert model.outputs.is_relative_to(model.media.root) and model.media.root.is_relative_to(out)
    assert not [path for path in files_under(out) if "upstream" in path.parts and "rank0" not in path.parts]


def test_check_adapter_passes_every_claimed_protocol(stand_ins: Path, tmp_path: Path) -> None:
    """The smoke test as ``lmms-eval-unify check-adapter`` runs it, on the models that answer about every image:
    built from a ``--model_args`` string once the declared check finds nothing missing, every claimed protocol ok."""
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "config.json").write_text("{}")
    checkout = tmp_path / "ILLUME_plus"
    (checkout / "ILLUME/generation_eval/models").mkdir(parents=True)
    (checkout / "ILLUME/generation_eval/models/inference_utils.py").write_text("")
    folders = json.dumps({"tokenizer_config_path": str(weights), "diffusion_decoder_path": str(weights)})
    for name, extra in (("ovis_u1", ""), ("illume_plus", f",repo_path={checkout},upstream_args='{folders}'")):
        model = build_model("upstream", f"upstream={name},pretrained={weights}{extra}", str(tmp_path / name))
        checks = run_checks(model, 8)
        assert len(checks) == 6 and all(check.ok for check in checks), checks
    assert model.upstream.arguments == {"tokenizer_config_path": str(weights), "diffusion_decoder_path": str(weights)}
    assert str(checkout / "ILLUME") == sys.path[0]  # repo_path: the import root goes first on sys.path


def test_check_adapter_on_mmada_needs_its_checkout_and_serves_the_one_image_protocols(
    stand_ins: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # showlab/magvitv2 would be downloaded when built
    weights, checkout = tmp_path / "weights", tmp_path / "MMaDA"
    for file in ("weights/config.json", "MMaDA/models/__init__.py", "MMaDA/training/prompting_utils.py"):
        (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / file).write_text("{}")
    args = f"upstream=mmada,pretrained={weights},repo_path={checkout}"
    missing = model_missing(Upstream, {"upstream": "mmada", "pretrained": str(weights), "repo_path": str(checkout)})
    assert [item.kind for item in missing] == ["code"] and "training.utils, generate" in missing[0].what
    (checkout / "training/utils.py").write_text("")
    (checkout / "generate.py").write_text("")
    model = build_model("upstream", args, str(tmp_path / "out"))
    assert not model.upstream.continual_mode  # its response cache would replay answers by made-up doc ids
    provenance = model.provenance()
    assert provenance["upstream_class"] == f"{__name__}.StandInMMaDA" and provenance["lmms_eval"] == "0.7.3"
    assert provenance["checkout"] == str(checkout.resolve()) and provenance["checkout_commit"] is None
    checks = {check.protocol: check for check in run_checks(model, 8)}
    assert {name for name, check in checks.items() if check.ok} == SERVED_READING_ONE_IMAGE
    assert "answers about exactly 1 image(s)" in checks["generate_then_answer"].summary


@pytest.mark.parametrize(
    ("name", "misbehaviour", "reason"),
    [
        ("mmada", "outside", "outside_roots"),
        ("mmada", "symlink", "outside_roots"),
        ("mmada", "not_an_image", "not a whole image"),
        ("mmada", "nothing", "no such file (missing)"),
        ("ovis_u1", "symlink", "outside_roots"),
        ("ovis_u1", "not_an_image", "not a whole image"),
        ("ovis_u1", "nothing", "wrote no image under"),
        ("bagel_unig2u", "symlink", "outside_roots"),  # its edit route: the doc image is given
    ],
)
def test_images_the_gate_refuses_are_failures_with_their_reason(
    name: str, misbehaviour: str, reason: str, stand_ins: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = bridge(name, tmp_path / "out")
    model.task_dict = {SAMPLE_TASK: {SAMPLE_SPLIT: {0: {"image": sample_image()}}}}
    monkeypatch.setattr(StandIn, "misbehaviour", misbehaviour)
    check = check_protocol(model, "image_only", 0, 8)
    assert not check.ok and check.summary.startswith("model_error: UpstreamOutputError") and reason in check.summary
    record = model.media.root / model.media.sample_dir(SAMPLE_TASK, 0) / "record.json"
    assert reason in parse_output(record.read_text()).record.error  # recorded for the sample


def test_a_placeholder_is_not_taken_for_a_generated_image(stand_ins: Path, tmp_path: Path) -> None:
    model = bridge("illume_plus", tmp_path / "out", upstream_args='{"enable_image_decoding": false}')
    with pytest.raises(RuntimeError, match=r"saved its placeholder \(flat \(200, 200, 200\)\)"):
        model.generate_image("a cat", [], seed=0)


def test_upstream_arguments_reach_the_constructor_and_bridge_owned_ones_are_refused(
    stand_ins: Path, tmp_path: Path
) -> None:
    model = bridge("ovis_u1", tmp_path / "out", upstream_args='{"stage1_guidance_scale": 4.5, "use_cache": false}')
    assert model.upstream.arguments == {
        "pretrained": "AIDC-AI/Ovis-U1-3B",
        "device": "cpu",  # ours, as the upstream takes one
        "fail_gracefully": False,
        "stage1_guidance_scale": 4.5,
        "use_cache": False,
    }
    assert model.upstream.stage2_max_new_tokens == 1
    assert model.describe()["upstream_args"] == {"stage1_guidance_scale": 4.5, "use_cache": False}
    for owned in ("output_dir", "fail_gracefully", "pretrained"):
        with pytest.raises(ModelArgumentError, match=f"upstream_args may not set {owned}"):
            bridge("ovis_u1", tmp_path / "out", upstream_args={owned: "x"})
    with pytest.raises(ModelArgumentError, match=r"upstream='janus' is not one of \['bagel_unig2u'"):
        model_missing(Upstream, {"upstream": "janus"})


def test_an_upstream_module_that_cannot_be_imported_is_named_not_raised(
    stand_ins: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from lmms_eval.models import MODEL_REGISTRY_V2
    from lmms_eval.models.registry_v2 import ModelManifest

    manifest = ModelManifest(model_id="ovis_u1", simple_class_path="no_such_upstream_module.OvisU1")
    monkeypatch.setitem(MODEL_REGISTRY_V2._manifests, "ovis_u1", manifest)
    found = model_missing(Upstream, {"upstream": "ovis_u1", "pretrained": str(tmp_path)})
    (missing,) = [item for item in found if item.kind == "code"]
    assert missing.kind == "code" and "'no_such_upstream_module', which is not installed" in missing.what
    with pytest.raises(UpstreamUnavailable, match="upstream=ovis_u1: lmms-eval cannot load its model class"):
        bridge("ovis_u1", tmp_path / "out")
    assert check_adapter_main(["upstream", "--model_args", "upstream=ovis_u1", "--output_dir", str(tmp_path)]) == 2
    assert "upstream: cannot build the model: ModelNotReady" in capsys.readouterr().out


def test_bagel_weights_must_be_a_local_folder(stand_ins: Path) -> None:
    found = model_missing(Upstream, {"upstream": "bagel_unig2u", "pretrained": "ByteDance-Seed/BAGEL-7B-MoT"})
    (weights,) = [item for item in found if item.kind == "weights"]
    assert "loads its weights from a local folder" in weights.what and "pass pretrained=<folder>" in weights.fix


def test_json_replies_give_their_text() -> None:
    assert reply_text(json.dumps({"text": "B", "images": ["/x.png"]})) == "B"
    assert reply_text('{"choice": 0}') == '{"choice": 0}'  # an answer that is JSON stays the answer
    assert reply_text("plain") == "plain"


def test_seeded_calls_reproduce_the_torch_draws_of_upstreams_without_a_seed_argument(
    stand_ins: Path, tmp_path: Path
) -> None:
    model = bridge("ovis_u1", tmp_path / "out")
    with seeded(11):
        salt = int(torch.randint(0, 2**31 - 1, (1,)).item())
    assert model.generate_image("sky", [], seed=11).getpixel((0, 0)) == colour_of("sky", salt)


# ---- the table against lmms-eval's own source files --------------------------------------------------------


def upstream_source(name: str) -> tuple[str, ast.ClassDef]:
    """The source of lmms-eval's module of ``name`` (read, not imported) and its class, via lmms-eval's registry."""
    from lmms_eval.models import AVAILABLE_SIMPLE_MODELS, MODEL_REGISTRY_V2

    module, _, class_name = MODEL_REGISTRY_V2.resolve(name, force_simple=True).class_path.rpartition(".")
    assert module == f"lmms_eval.models.simple.{name}" and class_name == AVAILABLE_SIMPLE_MODELS[name]
    source = Path(importlib.util.find_spec(module).origin).read_text()
    (cls,) = [
        node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef) and node.name == class_name
    ]
    return source, cls


def method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((node for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == name), None)


def parameters(function: ast.FunctionDef) -> dict[str, object]:
    """Parameter name -> literal default (``inspect.Parameter.empty`` when required)."""
    arguments = function.args.args[1:]
    defaults = [inspect.Parameter.empty] * (len(arguments) - len(function.args.defaults))
    defaults += [ast.literal_eval(default) for default in function.args.defaults]
    return dict(zip((argument.arg for argument in arguments), defaults, strict=True))


def assigned_from_parameter(function: ast.FunctionDef, attribute: str) -> bool:
    """Whether ``function`` does ``self.<attribute> = <attribute>``."""
    return any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Attribute) and t.attr == attribute for t in node.targets)
        and isinstance(node.value, ast.Name)
        and node.value.id == attribute
        for node in ast.walk(function)
    )


DRAWING_METHOD = {
    "ovis_u1": ("_stage1_generate_image", "original_image"),
    "illume_plus": ("_stage1_generate_image", "original_images"),
    "mmada": ("generate_text_and_image", None),
    "bagel_unig2u": ("generate_text_and_image", "image"),
}
"""The method that draws in each upstream class, and its input-image parameter (``None``: text only)."""


@pytest.mark.parametrize("name", sorted(UPSTREAMS))
def test_the_table_matches_lmms_evals_source(name: str) -> None:
    row = UPSTREAMS[name]
    source, cls = upstream_source(name)
    init = method(cls, "__init__")
    params = parameters(init)
    generate_until = ast.get_source_segment(source, method(cls, "generate_until"))
    # weights
    assert params["pretrained"] == (row.pretrained.default or inspect.Parameter.empty)
    for weights in row.extra_weights:
        assert weights.argument in params if weights.argument else f'"{weights.default}"' in source
    # every folder the class takes points into the media folder; each defaults to one under ./logs
    folders = {param for param in params if param.endswith(("_dir", "_folder"))}
    assert set(row.folder_arguments) == folders and all(params[folder] is None for folder in folders)
    assert '"./logs/' in source
    # the fixed arguments are exactly those of FIXED_WHY the class takes
    assert row.fixed_arguments.keys() == FIXED_WHY.keys() & params.keys()
    assert set(row.default_arguments) <= params.keys()
    # the mode switch and the seed are attributes set from the constructor argument of that name
    for attribute in [row.mode.attribute] if row.mode else []:
        assert attribute in params and assigned_from_parameter(init, attribute)
        assert f"self.{attribute}" in generate_until
    assert row.seed_attribute is None or assigned_from_parameter(init, row.seed_attribute)
    # image routes: the method, its gen_kwargs, the GtA tags, where the image comes back
    for route in {id(r): r for r in (row.text_to_image, row.edit) if r}.values():
        assert method(cls, route.method) is not None
        assert all(f'"{key}"' in generate_until for key in route.gen_kwargs)
        assert not route.tagged or r"\[GEN_PROMPT\]" in source
        assert (route.reply == "json") == ("self.format_output(" in generate_until and not route.tagged)
    drawing, image_parameter = DRAWING_METHOD[name]
    assert (image_parameter in parameters(method(cls, drawing))) if row.edit else image_parameter is None
    # understanding reads the first visual only where the table says so
    assert ("visuals[0]" in generate_until) == (row.understanding_images == 1)
    # the checkout: where lmms-eval looks, and what it imports from there
    if row.checkout:
        imported = {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
        assert set(row.checkout.modules) <= imported
        assert f'"{Path(row.checkout.folder).name}"' in source
        assert not row.checkout.import_root or f'"{row.checkout.import_root}"' in source
    for fill in row.placeholder_fills:
        assert f"color={fill}" in source
