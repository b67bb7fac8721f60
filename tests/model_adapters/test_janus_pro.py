"""Janus-Pro adapter on a tiny random checkpoint of the real transformers classes (CPU, offline)."""

import pytest
import torch
from conftest import make_request
from lmms_eval_unify.model_adapters.janus_pro import JanusPro
from PIL import Image

from lmms_eval_unify.output.record import parse_output


@pytest.fixture(scope="module")
def janus(tiny_janus, tmp_path_factory):
    model = JanusPro(pretrained=str(tiny_janus), max_new_tokens=6, output_dir=str(tmp_path_factory.mktemp("media")))
    model.task_dict = {"toy": {"test": {i: {} for i in range(10)}}}
    return model


def test_loads_on_the_default_device_and_precision_and_describes_its_arguments(janus, tiny_janus):
    expected = torch.bfloat16 if torch.cuda.is_available() else torch.float32
    assert janus.device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert next(janus.model.parameters()).dtype == janus.dtype == expected
    assert janus.model_args["pretrained"] == str(tiny_janus) and janus.model_args["guidance_scale"] == 5.0


def test_understanding_returns_text_and_honours_the_token_cap(janus):
    text = janus.understand([Image.new("RGB", (30, 24), "red")], "what is the image", max_new_tokens=100, seed=1)
    assert isinstance(text, str) and len(text.split()) <= 6


def test_generation_is_reproducible_per_seed(janus):
    first = janus.generate_image("a blue maze", [], seed=3)
    again = janus.generate_image("a blue maze", [], seed=3)
    other = janus.generate_image("a blue maze", [], seed=4)
    assert first.size == (8, 8) and first.mode == "RGB"
    assert first.tobytes() == again.tobytes() != other.tobytes()


def test_batched_understanding_matches_one_by_one(janus):
    batch = [([Image.new("RGB", (20, 20), c)], f"the {c} image") for c in ("red", "blue")] + [([], "a maze")]
    batched = janus.understand_batch(batch, max_new_tokens=4)
    assert all(batched) and batched == [janus.understand(i, p, max_new_tokens=4) for i, p in batch]


def test_generate_then_answer_through_the_core(janus):
    request = make_request(
        "[GEN_PROMPT]draw the maze[/GEN_PROMPT][QUESTION]which way?[/QUESTION]", {"visual_cot": True}
    )
    out = parse_output(janus.generate_until([request])[0])
    assert out.failure is None and out.record.protocol == "generate_then_answer"
    (image,) = out.load_images()
    assert image.size == (8, 8)


@pytest.mark.slow
def test_real_cli_runs_the_maze_data_parallel_on_two_cpu_processes(
    tiny_janus, puzzle_data, tmp_path, run_cli, check_steps
):
    args = f"pretrained={tiny_janus},max_new_tokens=8"
    run = run_cli("janus_pro", args, "uni_mmmu_maze", puzzle_data, tmp_path, processes=2)
    assert "janus_pro: process 0 of 2" in run["log"] and "janus_pro: process 1 of 2" in run["log"]
    samples = run["samples"]["uni_mmmu_maze"]
    assert sorted(s["doc_id"] for s in samples) == [0, 1]  # gathered from both ranks
    for sample in samples:
        check_steps(sample, "janus_pro")
    assert run["results"]["uni_mmmu_maze"]["invalid_outputs,none"] == 0
    assert 0 <= run["results"]["uni_mmmu_maze"]["text_step_acc,none"] <= 1
    assert "generates images from text only" in run["log"]


def test_batched_generation_equals_one_by_one_with_per_sample_seeds(janus):
    batch = [("a blue maze", [], {"seed": 3}), ("a red square on a long white background", [], {"seed": 4}),
             ("a blue maze", [], {"seed": 5})]  # fmt: skip
    batched = janus.generate_image_batch(batch)
    alone = [janus.generate_image(prompt, images, **decoding) for prompt, images, decoding in batch]
    assert [b.tobytes() for b in batched] == [a.tobytes() for a in alone]
    assert batched[0].tobytes() != batched[2].tobytes()  # same prompt, other seed


def test_seeded_sampler_draws_what_transformers_draws_alone(janus):
    """One image through transformers' own CFG processor and global generator, seeded as our adapter was."""
    from lmms_eval_unify.adapter import seeded

    inputs = janus._inputs([janus._prompt([], "a blue maze")], None, "image")
    with torch.inference_mode(), seeded(3, janus.device):
        tokens = janus.model.generate(
            **inputs,
            generation_mode="image",
            do_sample=True,
            temperature=janus.settings.image_temperature,
            guidance_scale=janus.settings.guidance_scale,
        )
        native = janus.model.decode_image_tokens(tokens)
    from lmms_eval_unify.model_adapters.hf_common import signed_pixels_to_pil

    expected = signed_pixels_to_pil(native[0], channels_first=False)
    assert janus.generate_image("a blue maze", [], seed=3).tobytes() == expected.tobytes()


def test_check_adapter_passes_every_protocol_janus_claims(tiny_janus, tmp_path, capsys):
    from lmms_eval_unify.commands import check_adapter

    args = [
        "janus_pro",
        "--model_args",
        f"pretrained={tiny_janus},max_new_tokens=4",
        "--output_dir",
        str(tmp_path),
    ]
    assert check_adapter.main(args) == 0
    out = capsys.readouterr().out
    assert "all 6 claimed protocols work" in out and "video" not in out.split("protocol", 1)[1]
    assert "1 image(s) 8x8" in out  # the tiny checkpoint draws 8x8 images
