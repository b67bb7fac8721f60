"""Bad model output through the real lmms-eval evaluator: every kind scores 0 with a reason; the run ends."""

import pytest
from conftest import make_request
from PIL import Image

from lmms_eval_unify.adapter import UNDERSTAND_AND_GENERATE, UnifiedModel
from lmms_eval_unify.integration.plugin import install_task_index
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.puzzles.dataset import write_puzzles
from lmms_eval_unify.puzzles.scoring import METRICS

EXPECTED_REASONS = {
    0: "model_error",
    1: "malformed_record",
    2: "missing_image",
    3: "corrupt_image",
    4: "unsafe_path",
    5: "wrong_image_count_is_not_invalid",
    6: "",
}


class FaultyAdapter(UnifiedModel):
    """Emits one kind of broken output per document."""

    model_id = "faulty"
    capabilities = UNDERSTAND_AND_GENERATE

    def understand(self, images, prompt, **decoding):
        if self.request.doc_id == 0:
            raise RuntimeError("CUDA out of memory (simulated)")
        return "I refuse to use the answer format."

    def generate_image(self, prompt, images, **decoding):
        return Image.new("RGB", (32, 32), "white")

    def generate_until(self, requests):
        served = UnifiedModel.generate_until
        return [self.broken_output(r.args[3]) or served(self, [r])[0] for r in requests]

    def broken_output(self, doc_id):
        if doc_id == 1:
            return '{"schema": "lmms_eval_unify/output@1", "text": '
        if doc_id in (2, 3, 4, 5):
            store = self.media
            path = store.save_image("uni_mmmu_maze", doc_id, "step_01", Image.new("RGB", (8, 8)))
            if doc_id == 2:
                (store.root / path).unlink()
            if doc_id == 3:
                (store.root / path).write_bytes(b"\x89PNG truncated")
            images = {4: ["../../../../etc/hostname"], 5: [path]}.get(doc_id, [path])
            text = '<ANSWER_JSON>["up"]</ANSWER_JSON>'
            return UnifiedOutput("image_sequence_then_answer", text=text, images=images, root=str(store.root)).to_json()
        return None


@pytest.mark.slow
def test_every_malformed_output_scores_zero_with_a_reason(tmp_path, monkeypatch):
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    write_puzzles(tmp_path / "data" / "uni_mmmu", 7, 1, seed=3)
    monkeypatch.setenv("LMMS_EVAL_UNIFY_DATA_DIR", str(tmp_path / "data"))
    install_task_index()
    model = FaultyAdapter(output_dir=str(tmp_path / "media"))
    out = simple_evaluate(
        model=model, tasks=["uni_mmmu_maze"], task_manager=TaskManager("WARNING"), log_samples=True, limit=7
    )
    samples = {s["doc_id"]: s for s in out["samples"]["uni_mmmu_maze"]}
    assert len(samples) == 7
    for doc_id, reason in EXPECTED_REASONS.items():
        sample = samples[doc_id]
        if reason.endswith("_is_not_invalid"):
            assert sample["invalid_outputs"] == ""  # one image for a longer path is a wrong answer, not bad output
        else:
            assert sample["invalid_outputs"] == reason, (doc_id, sample["details"])
        if doc_id != 5:
            assert all(sample[m] == 0.0 for m in METRICS), doc_id
    assert out["results"]["uni_mmmu_maze"]["invalid_outputs,none"] == 5


def _adapter_classes() -> list[type[UnifiedModel]]:
    import importlib

    from lmms_eval_unify.integration.plugin import MODELS

    classes = []
    for path in MODELS.values():
        module, _, name = path.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        if issubclass(cls, UnifiedModel):
            classes.append(cls)
    return classes


@pytest.mark.parametrize("cls", _adapter_classes(), ids=lambda cls: cls.model_id)
def test_every_adapter_has_typed_settings_that_describe_derives_from(cls):
    """Resume signatures and media folders hash describe(): every settings field that is not run-only is in
    it, run-only fields are not, and every field type converts from a --model_args string."""
    import dataclasses

    import torch

    from lmms_eval_unify.generation.settings import RUN_ONLY, ModelSettings

    settings_class = cls.settings_class
    assert dataclasses.is_dataclass(settings_class) and issubclass(settings_class, ModelSettings)
    fields = dataclasses.fields(settings_class)
    required = {f.name: "x" for f in fields if f.default is f.default_factory is dataclasses.MISSING}
    model = object.__new__(cls)
    model.settings, model.dtype = settings_class.from_model_args(cls.model_id, required), torch.float32
    described = set(model.describe())
    run_only = {f.name for f in fields if f.metadata.get(RUN_ONLY)}
    assert {f.name for f in fields} - run_only <= described
    assert not run_only & described
    assert {"model", "seed", "dtype"} <= described
    for f in fields:  # each default survives a round trip through its string form
        default = getattr(model.settings, f.name)
        if isinstance(default, str | int | float | bool):
            again = settings_class.from_model_args(cls.model_id, {**required, f.name: str(default)})
            assert getattr(again, f.name) == default, f.name


def test_describe_and_the_media_folder_are_the_same_as_before_typed_settings():
    """The media folder of a default configuration keeps its name (outputs of earlier runs resume)."""
    import torch
    from lmms_eval_unify.model_adapters.janus_pro import JanusPro

    from lmms_eval_unify.generation.media import configuration_folder

    model = object.__new__(JanusPro)
    model.settings, model.dtype = JanusPro.settings_class.from_model_args("janus_pro", {}), torch.float32
    assert model.describe() == {
        "model": "janus_pro",
        "seed": 0,
        "dtype": "float32",
        "pretrained": "deepseek-community/Janus-Pro-7B",
        "guidance_scale": 5.0,
        "image_temperature": 1.0,
        "max_new_tokens": None,
    }
    assert configuration_folder("janus_pro", model.describe()) == "janus_pro-156a63ac88"  # the name HEAD~ gave it


def test_unknown_model_argument_is_rejected_with_the_valid_ones(tmp_path):
    from lmms_eval_unify.model_adapters.baselines import UnifyRandom

    with pytest.raises(TypeError, match=r"unknown model arguments \['sede'\]; valid: .*'seed'"):
        UnifyRandom(output_dir=str(tmp_path), sede=3)
    # lmms-eval adds max_batch_size (and batch_size, device) itself: accepted, typed from strings.
    model = UnifyRandom(output_dir=str(tmp_path), seed="3", max_batch_size="8", batch_size="2", device="cpu")
    assert (model.seed, model.batch_size, model.describe()["dtype"]) == (3, 2, "float32")
    assert UnifyRandom(output_dir=str(tmp_path), batch_size="auto", resume="no").batch_size == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"seed": "abc"}, r"seed='abc': expected int \(invalid literal"),
        ({"seed": "1.5"}, r"seed='1.5': expected int"),
        ({"resume": "maybe"}, r"resume='maybe': expected bool \(expected one of"),
        ({"seed": True}, r"seed=True: expected int \(a boolean is not an integer\)"),
    ],
)
def test_a_model_argument_of_the_wrong_type_names_the_argument_and_the_type(tmp_path, args, message):
    from lmms_eval_unify.model_adapters.baselines import UnifyRandom

    from lmms_eval_unify.generation.settings import ModelArgumentError

    with pytest.raises(ModelArgumentError, match=rf"^unify_random: model argument {message}"):
        UnifyRandom(output_dir=str(tmp_path), **args)


def test_settings_convert_strings_and_lmms_eval_values_to_the_field_types():
    from lmms_eval_unify.model_adapters.composed import ComposedSettings
    from lmms_eval_unify.model_adapters.janus_pro import JanusProSettings

    from lmms_eval_unify.generation.settings import ModelArgumentError

    parsed = JanusProSettings.from_model_args(
        "janus_pro",
        {"guidance_scale": 3, "max_new_tokens": "None", "pretrained": 7, "image_temperature": "0.5"},
    )
    assert (parsed.guidance_scale, parsed.max_new_tokens, parsed.pretrained) == (3.0, None, "7")
    assert isinstance(parsed.guidance_scale, float) and parsed.image_temperature == 0.5
    assert JanusProSettings.from_model_args("janus_pro", {"max_new_tokens": 8.0}).max_new_tokens == 8
    with pytest.raises(ModelArgumentError, match=r"max_new_tokens='many': expected int \| None"):
        JanusProSettings.from_model_args("janus_pro", {"max_new_tokens": "many"})
    composed = ComposedSettings.from_model_args("composed", {"und": "a", "gen": "b", "gen_args": '"k=1,s=x"'})
    assert composed.gen_args == {"k": 1, "s": "x"} and composed.und_args == {}
    with pytest.raises(ModelArgumentError, match=r"composed: missing model arguments \['gen'\]"):
        ComposedSettings.from_model_args("composed", {"und": "a"})


def test_provenance_is_recorded_beside_describe_and_a_failing_provenance_never_fails_the_run(scripted):
    """``model.json`` is ``describe()`` plus the provenance list; other ranks write it only when absent (rank 0's
    provenance is never overwritten); an adapter whose provenance raises is recorded with the error."""
    import json

    model = scripted(["a"])
    model.provenance = lambda: {"server": "s1"}
    model.generate_until([make_request("q", {})])
    path = model.media.root / "model.json"
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved.pop("provenance") == [{"server": "s1"}] and saved == json.loads(json.dumps(model.describe()))
    other = scripted(["b"])
    other._rank = 1
    other.record_provenance()
    assert json.loads(path.read_text(encoding="utf-8"))["provenance"] == [{"server": "s1"}]

    def broken():
        raise RuntimeError("server gone")

    failing = scripted(["c"])
    failing.provenance = broken
    (response,) = failing.generate_until([make_request("q", {}, doc_id=1)])
    assert json.loads(response)["text"] == "c"
    entries = json.loads(path.read_text(encoding="utf-8"))["provenance"]
    assert entries == [{"server": "s1"}, {"error": "RuntimeError: server gone"}]


def test_planted_symlinks_in_the_media_folder_are_refused_and_never_fail_the_run(scripted, tmp_path):
    """A symlink at a sample's ``record.json``, at an image's name or at ``model.json`` is not written through: the
    victims keep their bytes, the image's sample records the refusal, the record-less sample is still answered."""
    import json

    victim = tmp_path / "victim.txt"
    victim.write_text("untouched", encoding="utf-8")
    model = scripted(["a", "b", "c"])
    root = model.media.root
    for folder in ("toy/0", "toy/1"):
        (root / folder).mkdir(parents=True)
    (root / "toy/0/record.json").symlink_to(victim)
    (root / "toy/1/image_00.png").symlink_to(victim)
    (root / "model.json").unlink()
    (root / "model.json").symlink_to(victim)
    answered, drawn = model.generate_until(
        [make_request("q", {}), make_request("draw", {"protocol": "image_only"}, doc_id=1)]
    )
    assert json.loads(answered)["text"] == "a"
    assert "symlink" in json.loads(drawn)["error"] and victim.read_text(encoding="utf-8") == "untouched"
    assert (root / "toy/0/record.json").is_symlink() and (root / "model.json").is_symlink()
