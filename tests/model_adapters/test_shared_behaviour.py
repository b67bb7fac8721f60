"""Behaviour every adapter inherits from UnifiedModel: device/dtype, seeding, batched understanding."""

import pytest
import torch
from conftest import ScriptedAdapter, make_request
from PIL import Image

from lmms_eval_unify.model import decoding_options, resolve_device, resolve_dtype, seeded
from lmms_eval_unify.record import parse_output


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
    assert (
        resolve_device("cuda:0", local_index=1) == torch.device("cuda", 0)
        and resolve_device("cpu", 1).type == "cpu"
    )
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
    assert sorted(model.batches) == [1, 1, 2]  # q0+q1, q2 alone, and "long" (other decoding parameters) alone
    assert all(o.record.signature for o in out)
    again = _model(tmp_path, batch_size=2)
    assert [parse_output(o).record.text for o in again.generate_until(requests)] == [
        o.record.text for o in out
    ]
    assert again.batches == []  # every sample resumed from disk


def test_a_failing_batch_falls_back_to_single_requests_and_records_the_failure(tmp_path):
    model = _model(tmp_path, batch_size=4, fail_on="q1")
    out = [
        parse_output(o) for o in model.generate_until([make_request(f"q{i}", {}, doc_id=i) for i in range(3)])
    ]
    assert [o.record.text for o in out] == ["q0:1", "", "q2:1"]
    assert out[1].failure.reason == "model_error" and "out of memory" in out[1].record.error


def test_batch_size_one_never_calls_the_batch_primitive(tmp_path):
    model = _model(tmp_path)
    model.generate_until([make_request("q", {}, doc_id=0)])
    assert model.batches == []


def test_default_session_replays_the_transcript_through_the_primitives(scripted):
    model = scripted(["Next, move up."])
    session = model.session()
    session.add(Image.new("RGB", (8, 8)), "Solve the maze.")
    assert session.gen_text(seed=1) == "Next, move up."
    image = session.gen_image(seed=1)
    understand, generate = model.calls
    assert understand[1:3] == ("Solve the maze.", 1)
    assert generate[1:3] == ("Next, move up.", 1)
    assert session.parts[-1] is image and len(session.parts) == 4
