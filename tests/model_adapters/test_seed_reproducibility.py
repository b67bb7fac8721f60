"""Every adapter with a local backend draws the same output for the same per-sample seed, whatever state
torch's global generator was left in (backends that sample from it must run under ``seeded``)."""

import pytest
import torch
from lmms_eval_unify.model_adapters.emu3 import Emu3
from lmms_eval_unify.model_adapters.janus_pro import JanusPro
from lmms_eval_unify.model_adapters.qwen_image_edit import QwenImageEdit
from PIL import Image

BUILDERS = {
    "janus_pro": lambda paths, media: JanusPro(pretrained=str(paths["tiny_janus"]), output_dir=media),
    "emu3": lambda paths, media: Emu3(
        pretrained=str(paths["tiny_emu3"]), pretrained_gen=str(paths["tiny_emu3"]), image_area=256,
        output_dir=media,
    ),
    "qwen_image_edit": lambda paths, media: QwenImageEdit(
        pretrained=str(paths["tiny_qwen_edit"]), num_inference_steps=1, height=32, width=32, output_dir=media
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def adapters(tiny_janus, tiny_emu3, tiny_qwen_edit, tmp_path_factory):
    paths = {"tiny_janus": tiny_janus, "tiny_emu3": tiny_emu3, "tiny_qwen_edit": tiny_qwen_edit}
    built = {}

    def get(name):
        if name not in built:
            built[name] = BUILDERS[name](paths, str(tmp_path_factory.mktemp("media")))
        return built[name]

    return get


def _under_two_global_states(call) -> list:
    outputs = []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)
        outputs.append(call())
    return outputs


@pytest.mark.parametrize("name", ["janus_pro", "emu3", "qwen_image_edit"])
def test_generated_images_depend_only_on_the_per_sample_seed(adapters, name):
    adapter, inputs = adapters(name), [Image.new("RGB", (40, 40), "red")]
    first, second = _under_two_global_states(
        lambda: [adapter.generate_image("move the dot up", inputs, seed=s).tobytes() for s in (3, 4)]
    )
    assert first == second


@pytest.mark.parametrize("name", ["janus_pro", "emu3"])
def test_sampled_answers_depend_only_on_the_per_sample_seed(adapters, name):
    adapter, image = adapters(name), [Image.new("RGB", (20, 20), "blue")]
    first, second = _under_two_global_states(
        lambda: [adapter.understand(image, "what is it", seed=s, temperature=1.0, max_new_tokens=6) for s in (3, 4)]
    )
    assert first == second
