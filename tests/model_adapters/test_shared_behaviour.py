"""Behaviour every adapter inherits from UnifiedModel: device/dtype, seeding, batched understanding."""

import pytest
import torch
from conftest import ScriptedAdapter, make_request
from PIL import Image

from lmms_eval_unify.adapter import decoding_options, resolve_device, resolve_dtype, seeded
from lmms_eval_unify.output.record import parse_output


class BatchingAdapter(ScriptedAdapter):
    """Answers each prompt with its length; records the size of every backend batch."""

    model_id = "batching"

    def __init__(self, fail_on=None, **kwargs):
        super().__init__([], **kwargs)
        self.batches, self.fail_on = [], fail_on

    def understand(self, images, prompt, **decoding):
        if prompt == self.fail_on:
            raise RuntimeError("CUDA out of memory (simulated)")
        return f"{prompt}:{len(images)}"

    def understand_batch(self, batch, **decoding):
        self.batches.append(len(batch))
        return [self.understand(images, prompt, **decoding) for images, prompt in batch]


def _model(tmp_path, **kwargs):
    model = BatchingAdapter(output_dir=str(tmp_path), **kwargs)
    model.task_dict = {"toy": {"test": {i: {} for i in range(10)}}}
    return model


def test_cpu_runs_in_float32_and_dtype_can_be_named():
    device = resolve_device(None)
    assert resolve_dtype(None, torch.device("cuda", 0)) is torch.bfloat16
    assert resolve_dtype(None, torch.device("cpu")) is torch.float32 and device.type in ("cpu", "cuda")
    assert resolve_dtype("float16", device) is torch.float16
    assert resolve_device("cuda", local_index=1) == torch.device("cuda", 1)  # each rank its own GPU
    assert resolve_device("cuda:0", local_index=1) == torch.device("cuda", 0) and resolve_device("cpu", 1).type == "cpu"
    with pytest.raises(ValueError, match="dtype must be one of"):
        resolve_dtype("fp8", device)


def test_seeded_is_reproducible_and_restores_the_global_generator():
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    with seeded(7):
        first = torch.rand(3)
    assert torch.equal(torch.rand(1), expected_next)
    with seeded(7):
        assert torch.equal(torch.rand(3), first)


def test_decoding_options_map_task_parameters_and_cap_length():
    assert decoding_options({"max_new_tokens": 1024, "temperature": 0}, cap=8) == {
        "max_new_tokens": 8,
        "do_sample": False,
    }
    sampled = decoding_options({"temperature": 0.7, "top_p": 0.9})
    assert sampled == {"max_new_tokens": 512, "do_sample": True, "temperature": 0.7, "top_p": 0.9}


def test_direct_requests_are_batched_in_order_and_others_run_alone(tmp_path):
    model = _model(tmp_path, batch_size=2)
    requests = [make_request(f"q{i}", {"max_new_tokens": 4}, doc_id=i) for i in range(3)]
    requests.insert(1, make_request("draw", {"protocol": "image_only"}, doc_id=5))
    requests.append(make_request("long", {"max_new_tokens": 9}, doc_id=6))
    out = [parse_output(o) for o in model.generate_until(requests)]
    assert [o.record.text for o in out] == ["q0:1", "", "q1:1", "q2:1", "long:1"]
    assert out[1].record.protocol == "image_only" and len(out[1].record.images) == 1
    # windows of batch_size requests in order: [q0, draw] (q0 alone), [q1, q2] (one batch), [long] (alone)
    assert model.batches == [2]
    assert all(o.record.signature for o in out)
    again = _model(tmp_path, batch_size=2)
    assert [parse_output(o).record.text for o in again.generate_until(requests)] == [o.record.text for o in out]
    assert again.batches == []  # every sample resumed from disk


def test_a_failing_batch_falls_back_to_single_requests_and_records_the_failure(tmp_path):
    model = _model(tmp_path, batch_size=4, fail_on="q1")
    out = [parse_output(o) for o in model.generate_until([make_request(f"q{i}", {}, doc_id=i) for i in range(3)])]
    assert [o.record.text for o in out] == ["q0:1", "", "q2:1"]
    assert out[1].failure.reason == "model_error" and "out of memory" in out[1].record.error


def test_batch_size_one_never_calls_the_batch_primitive(tmp_path):
    model = _model(tmp_path)
    model.generate_until([make_request("q", {}, doc_id=0)])
    assert model.batches == []


class GeneratingAdapter(BatchingAdapter):
    """Also generates images in batches; each image encodes its prompt and seed, so results are comparable."""

    model_id = "generating"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.image_batches = []

    def generate_image(self, prompt, images, **decoding):
        return Image.new("RGB", (4, 4), (len(prompt) % 256, decoding["seed"] % 256, len(images)))

    def generate_image_batch(self, batch):
        self.image_batches.append([(d["phase"].name, d["phase"].step, len(images)) for _, images, d in batch])
        return [self.generate_image(prompt, images, **decoding) for prompt, images, decoding in batch]


def _gta_requests(n):
    prompt = "[GEN_PROMPT]draw {i}[/GEN_PROMPT][QUESTION]question {i}[/QUESTION]"
    return [make_request(prompt.format(i=i), {"protocol": "generate_then_answer"}, doc_id=i) for i in range(n)]


def _images_and_texts(model, requests):
    out = [parse_output(o) for o in model.generate_until(requests)]
    return [(o.record.text, [image.tobytes() for image in o.load_images()]) for o in out]


def test_generate_then_answer_runs_each_phase_as_one_batch_and_equals_one_by_one(tmp_path):
    batched = GeneratingAdapter(output_dir=str(tmp_path / "b"), batch_size=4)
    single = GeneratingAdapter(output_dir=str(tmp_path / "s"), batch_size=1)
    for model in (batched, single):
        model.task_dict = {"toy": {"test": {i: {} for i in range(10)}}}
    requests = _gta_requests(6)
    assert _images_and_texts(batched, requests) == _images_and_texts(single, requests)
    # window 1: four stage-1 images together, then their four answers together; window 2: two of each
    assert batched.image_batches == [[("generate", 1, 1)] * 4, [("generate", 1, 1)] * 2]
    assert batched.batches == [4, 2]
    assert single.image_batches == [] and single.batches == []


def test_visual_chain_batches_step_k_across_samples_and_a_failure_stays_in_its_request(tmp_path):
    model = GeneratingAdapter(output_dir=str(tmp_path), batch_size=3, fail_on=None)
    model.task_dict = {"toy": {"test": {i: {} for i in range(10)}}}
    options = {"protocol": "visual_cot_steps", "max_steps": 2, "stop_words": ["never"]}
    requests = [make_request(f"chain {i}", options, doc_id=i) for i in range(3)]
    model.fail_on = requests[1].args[0] + "\n\nStep 1: state your next action, or say Done."
    out = [parse_output(o) for o in model.generate_until(requests)]
    assert [len(o.record.steps) for o in (out[0], out[2])] == [2, 2]
    assert out[1].failure.reason == "model_error" and "out of memory" in out[1].record.error
    # step k of the two healthy chains renders together (the failing one dropped out after its plan call)
    assert model.image_batches == [[("render", 1, 1)] * 2, [("render", 2, 2)] * 2]
