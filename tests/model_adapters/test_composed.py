"""Composed adapter: lmms-eval's own qwen2_5_vl understands, our adapters draw (tiny models, CPU)."""

import pytest
from conftest import make_request
from lmms_eval_unify.model_adapters.composed import Composed, load_generator, parse_nested_args
from PIL import Image

from lmms_eval_unify.adapter import GENERATE_IMAGE, UnifiedModel
from lmms_eval_unify.output.record import parse_output


def test_nested_arguments_in_every_accepted_spelling():
    expected = {"pretrained": "x/y", "steps": 2, "flag": True}
    assert parse_nested_args('"pretrained=x/y,steps=2,flag=true"') == expected
    assert parse_nested_args("pretrained=x/y;steps=2;flag=true") == expected
    assert parse_nested_args('{"pretrained": "x/y", "steps": 2, "flag": true}') == expected
    assert parse_nested_args("") == {}


class SolidColour(UnifiedModel):
    """An out-of-tree image generator: registered below, never listed in our plugin's ``MODELS``."""

    model_id = "solid_colour_test"
    capabilities = frozenset({GENERATE_IMAGE})

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding) -> Image.Image:
        return Image.new("RGB", (8, 8), (len(prompt) % 256, 0, 0))


def test_generator_must_be_a_registered_image_generating_adapter(tiny_qwen_vl, tmp_path):
    und_args = f"pretrained={tiny_qwen_vl};device=cpu;device_map=cpu"
    with pytest.raises(ValueError, match="not a registered model"):
        Composed(und="qwen2_5_vl", und_args=und_args, gen="dalle", output_dir=str(tmp_path))
    for not_an_adapter in ("composed", "qwen2_5_vl"):
        with pytest.raises(ValueError, match="not a unified-model adapter"):
            Composed(und="qwen2_5_vl", und_args=und_args, gen=not_an_adapter, output_dir=str(tmp_path))


def test_out_of_tree_adapter_is_accepted_as_generator(tmp_path):
    from lmms_eval.models import MODEL_REGISTRY_V2
    from lmms_eval.models.registry_v2 import ModelManifest

    path = f"{__name__}.SolidColour"
    MODEL_REGISTRY_V2.register_manifest(
        ModelManifest(model_id=SolidColour.model_id, simple_class_path=path), overwrite=True
    )
    generator = load_generator(SolidColour.model_id, {"seed": "3"}, str(tmp_path))
    assert isinstance(generator, SolidColour) and generator.seed == 3
    assert generator.generate_image("abc", []).getpixel((0, 0)) == (3, 0, 0)


def test_builtin_understanding_and_qwen_edit_answer_generate_then_answer(tiny_qwen_vl, tiny_qwen_edit, tmp_path):
    model = Composed(
        und="qwen2_5_vl",
        und_args=f'"pretrained={tiny_qwen_vl},device=cpu,device_map=cpu"',
        gen="qwen_image_edit",
        gen_args=f'"pretrained={tiny_qwen_edit},num_inference_steps=1,height=32,width=32"',
        output_dir=str(tmp_path),
        batch_size=2,
    )
    assert type(model.und_model).__module__ == "lmms_eval.models.simple.qwen2_5_vl"
    model.task_dict = {"toy": {"test": {i: {} for i in range(10)}}}
    prompt = "[GEN_PROMPT]draw the dot one cell up[/GEN_PROMPT][QUESTION]where is the dot?[/QUESTION]"
    requests = [make_request(prompt, {"visual_cot": True, "max_new_tokens": 4}, doc_id=0)]
    requests += [make_request(f"question {i}", {"max_new_tokens": 4}, doc_id=i) for i in (1, 2)]
    gta, *direct = (parse_output(o) for o in model.generate_until(requests))
    assert gta.failure is None and gta.record.protocol == "generate_then_answer"
    (image,) = gta.load_images()
    assert image.size == (32, 32) and isinstance(gta.record.text, str)
    assert [d.record.protocol for d in direct] == ["direct", "direct"] and all(d.failure is None for d in direct)
    alone = model.understand([Image.new("RGB", (8, 8), "blue")], "question 1", max_new_tokens=4)
    assert direct[0].record.text == alone  # the batched path answers like a single request


@pytest.mark.slow
def test_real_cli_composed_builtin_vlm_with_janus_generator(
    tiny_qwen_vl, tiny_janus, puzzle_data, tmp_path, run_cli, check_steps
):
    args = (
        f'und=qwen2_5_vl,und_args="pretrained={tiny_qwen_vl},device=cpu,device_map=cpu,min_pixels=3136,max_pixels=3136",'
        f'gen=janus_pro,gen_args="pretrained={tiny_janus}",max_new_tokens=8'
    )
    run = run_cli("composed", args, "uni_mmmu_maze", puzzle_data, tmp_path, limit=1)
    (sample,) = run["samples"]["uni_mmmu_maze"]
    check_steps(sample, "composed")
    assert run["results"]["uni_mmmu_maze"]["invalid_outputs,none"] == 0
