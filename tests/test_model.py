"""Bad model output through the real lmms-eval evaluator: every kind scores 0 with a reason; the run ends."""

import pytest
from PIL import Image

from lmms_eval_unify.model import UNDERSTAND_AND_GENERATE, UnifiedModel
from lmms_eval_unify.plugin import install_task_index
from lmms_eval_unify.puzzles.dataset import write_uni_mmmu_puzzles
from lmms_eval_unify.puzzles.scoring import METRICS
from lmms_eval_unify.record import UnifiedOutput

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
            return UnifiedOutput(
                "image_sequence_then_answer", text=text, images=images, root=str(store.root)
            ).to_json()
        return None


@pytest.mark.slow
def test_every_malformed_output_scores_zero_with_a_reason(tmp_path, monkeypatch):
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    write_uni_mmmu_puzzles(tmp_path / "data", 7, 1, seed=3)
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
            assert (
                sample["invalid_outputs"] == ""
            )  # one image for a longer path is a wrong answer, not bad output
        else:
            assert sample["invalid_outputs"] == reason, (doc_id, sample["details"])
        if doc_id != 5:
            assert all(sample[m] == 0.0 for m in METRICS), doc_id
    assert out["results"]["uni_mmmu_maze"]["invalid_outputs,none"] == 5


def _adapter_classes() -> list[type[UnifiedModel]]:
    import importlib

    from lmms_eval_unify.plugin import MODELS

    classes = []
    for path in MODELS.values():
        module, _, name = path.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        if issubclass(cls, UnifiedModel):
            classes.append(cls)
    return classes


@pytest.mark.parametrize("cls", _adapter_classes(), ids=lambda cls: cls.model_id)
def test_describe_names_every_argument_that_changes_outputs(cls):
    """Resume signatures hash describe(): an argument missing from it lets runs of different
    configurations reuse each other's outputs (show_o2 once omitted vae_path)."""
    import torch

    from lmms_eval_unify.model import valid_model_args

    model = object.__new__(cls)
    arguments = set(valid_model_args(cls)) - {"kwargs"}
    for name in arguments:
        setattr(model, name, f"<{name}>")
    model.seed, model.dtype = 0, torch.float32
    described = set(model.describe())
    assert arguments - cls.run_only_args <= described, sorted(arguments - cls.run_only_args - described)
    assert {"model", "seed", "dtype"} <= described


def test_unknown_model_argument_is_rejected_with_the_valid_ones(tmp_path):
    from lmms_eval_unify.model_adapters.baselines import UnifyRandom

    with pytest.raises(TypeError, match=r"unknown model arguments \['sede'\]; valid: .*'seed'"):
        UnifyRandom(output_dir=str(tmp_path), sede=3)
    # lmms-eval adds max_batch_size (and batch_size, device) itself: accepted, typed from strings.
    model = UnifyRandom(output_dir=str(tmp_path), seed="3", max_batch_size="8", batch_size="2", device="cpu")
    assert (model.seed, model.batch_size, model.describe()["dtype"]) == (3, 2, "float32")
