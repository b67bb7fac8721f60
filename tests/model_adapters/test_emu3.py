"""Emu3 adapter on a tiny random checkpoint of the real transformers classes (CPU, offline)."""

import pytest
import torch
from lmms_eval_unify.model_adapters.emu3 import EOL_TOKEN, Emu3, VisualTokenConstraint
from PIL import Image

from lmms_eval_unify.output.record import parse_output


@pytest.fixture(scope="module")
def emu3(tiny_emu3, tmp_path_factory):
    media = str(tmp_path_factory.mktemp("media"))
    return Emu3(pretrained=str(tiny_emu3), pretrained_gen=str(tiny_emu3), image_area=256, output_dir=media)


def test_one_checkpoint_path_is_loaded_once(emu3):
    assert emu3.gen_model is emu3.model and emu3.model_args["pretrained_gen"] == emu3.settings.pretrained


def test_understanding_batched_and_alone_agree(emu3):
    batch = [
        ([Image.new("RGB", (40, 30), "red")], "what is it"),
        ([], "a maze"),
        ([Image.new("RGB", (16, 16))] * 2, "two"),
    ]
    batched = emu3.understand_batch(batch, max_new_tokens=4)
    assert all(batched) and batched == [emu3.understand(images, prompt, max_new_tokens=4) for images, prompt in batch]


def test_generation_is_a_reproducible_image_of_the_requested_area(emu3):
    first, again = emu3.generate_image("a maze", [], seed=1), emu3.generate_image("a maze", [], seed=1)
    assert first.size == (16, 16) and first.mode == "RGB"  # 256 px area, 1:1 -> 2x2 latents x 8
    assert first.tobytes() == again.tobytes() != emu3.generate_image("a maze", [], seed=2).tobytes()


def test_constraint_emits_rows_then_the_closing_tokens(emu3):
    tokenizer = emu3.processor.tokenizer
    visual = emu3.model.vocabulary_mapping.image_tokens
    constraint = VisualTokenConstraint(tokenizer, visual, height=2, width=3)
    prompt = [1, 5, tokenizer.image_wrapper_token_id]
    allowed = []
    for _ in range(2 * 4 + 4):
        options = constraint(0, torch.tensor(prompt))
        allowed.append(options)
        prompt.append(options[0])
    eol = tokenizer.convert_tokens_to_ids(EOL_TOKEN)
    assert [a == [eol] for a in allowed[:8]] == [False, False, False, True] * 2
    assert allowed[8:] == [[tokenizer.eof_token_id], [tokenizer.eoi_token_id], [tokenizer.eos_token_id], [0]]
    assert allowed[0] == visual


@pytest.mark.slow
def test_real_cli_runs_puzzle_direct_and_generate_then_answer_tasks(
    tiny_emu3, puzzle_data, tmp_path, run_cli, check_steps
):
    args = f"pretrained={tiny_emu3},pretrained_gen={tiny_emu3},image_area=256,max_new_tokens=8"
    tasks = "uni_mmmu_sliding,unig2u_chartqa,unig2u_chartqa_gta"
    run = run_cli("emu3", args, tasks, puzzle_data, tmp_path, extra=("--batch_size", "2"))
    for sample in run["samples"]["uni_mmmu_sliding"]:
        check_steps(sample, "emu3")
    for task, protocol, n_images in (
        ("unig2u_chartqa", "direct", 0),
        ("unig2u_chartqa_gta", "generate_then_answer", 1),
    ):
        assert len(run["samples"][task]) == 2
        for sample in run["samples"][task]:
            response = sample["filtered_resps"]
            parsed = parse_output(response[0] if isinstance(response, list) else response)
            assert parsed.failure is None and parsed.record.protocol == protocol and parsed.record.text
            assert len(parsed.load_images(expected=n_images)) == n_images
    assert all(run["results"][task]["invalid_outputs,none"] == 0 for task in tasks.split(","))


def test_batched_generation_equals_one_by_one_with_per_sample_seeds(emu3):
    batch = [("a maze", [], {"seed": 1}), ("a much longer prompt about a red square", [], {"seed": 2}),
             ("a maze", [], {"seed": 3})]  # fmt: skip
    batched = emu3.generate_image_batch(batch)
    alone = [emu3.generate_image(prompt, images, **decoding) for prompt, images, decoding in batch]
    assert [b.tobytes() for b in batched] == [a.tobytes() for a in alone]
    assert batched[0].tobytes() != batched[2].tobytes()


def test_seeded_sampler_draws_what_transformers_draws_alone(emu3):
    """One image through transformers' own sampling from the global generator, seeded as before."""
    from lmms_eval_unify.model_adapters.emu3 import NEGATIVE_PROMPT, POSITIVE_SUFFIX
    from lmms_eval_unify.model_adapters.hf_common import signed_pixels_to_pil

    from lmms_eval_unify.adapter import seeded

    processor, model = emu3.gen_processor, emu3.gen_model
    inputs, negative = emu3.generation_inputs(["a maze" + POSITIVE_SUFFIX]), emu3.generation_inputs([NEGATIVE_PROMPT])
    height, width = (int(v) for v in inputs.pop("image_sizes")[0])
    negative.pop("image_sizes")
    constraint = VisualTokenConstraint(processor.tokenizer, model.vocabulary_mapping.image_tokens, height, width)
    with torch.inference_mode(), seeded(1, emu3.device):
        output = model.generate(**inputs, max_new_tokens=(width + 1) * height + 3, do_sample=True,
                                prefix_allowed_tokens_fn=constraint, guidance_scale=emu3.settings.guidance_scale,
                                negative_prompt_ids=negative["input_ids"],
                                negative_prompt_attention_mask=negative["attention_mask"])  # fmt: skip
        pixels = model.decode_image_tokens(
            image_tokens=output[:, inputs["input_ids"].shape[1] :], height=height, width=width
        )
    expected = signed_pixels_to_pil(pixels[0], channels_first=True)
    assert emu3.generate_image("a maze", [], seed=1).tobytes() == expected.tobytes()
