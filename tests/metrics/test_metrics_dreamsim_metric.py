"""DreamSim from a tiny saved checkpoint + LoRA adapter, and Uni-MMMU's jigsaw image score."""

from __future__ import annotations

import json

import pytest
import torch
from dreamsim.model import PerceptualModel
from peft import LoraConfig, PeftModel, get_peft_model
from PIL import Image
from torchvision import transforms

from lmms_eval_unify.metrics import dreamsim_distance, jigsaw_dreamsim_score
from lmms_eval_unify.metrics.dreamsim_metric import preserved_torch_hub_dir

# The reference builder repeats dreamsim's double peft wrapping, which warns by design.
pytestmark = pytest.mark.filterwarnings("ignore:Already found a `peft_config`:UserWarning")


def _reference_model(directory):
    """DreamSim built the way dreamsim.dreamsim(pretrained=True) builds it, independently of our loader."""
    model = PerceptualModel(
        model_type="clip_vitl14", feat_type="embedding", stride="14", lora=True,
        load_dir=str(directory), device="cpu", normalize_embeds=True,
    )  # fmt: skip
    adapter = json.loads((directory / "clip_vitl14_single_lora" / "adapter_config.json").read_text())
    model = get_peft_model(
        model,
        LoraConfig(**{k: adapter[k] for k in ("r", "lora_alpha", "lora_dropout", "bias", "target_modules")}),
    )
    return PeftModel.from_pretrained(model.base_model.model, str(directory / "clip_vitl14_single_lora")).eval()


def _dreamsim_preprocess(image: torch.Tensor) -> torch.Tensor:
    pil = Image.fromarray(image.permute(1, 2, 0).numpy())
    return transforms.Compose(
        [
            transforms.Resize((224, 224), interpolation=transforms.InterpolationMode.BICUBIC),
            transforms.ToTensor(),
        ]
    )(pil)


def test_distance_matches_dreamsim_reference(tiny_dreamsim_config, tiny_dreamsim_dir, make_images):
    a, b = make_images(2, 224, 224), make_images(2, 224, 224, seed=1)
    reference = _reference_model(tiny_dreamsim_dir)
    with torch.no_grad():
        expected = reference(
            torch.stack([_dreamsim_preprocess(x) for x in a]),
            torch.stack([_dreamsim_preprocess(x) for x in b]),
        )
    torch.testing.assert_close(dreamsim_distance(a, b, tiny_dreamsim_config), expected.double(), rtol=1e-4, atol=1e-5)


def test_resized_inputs_stay_within_one_uint8_step_of_pil(tiny_dreamsim_config, tiny_dreamsim_dir, make_images):
    a, b = make_images(2, 150, 260), make_images(2, 300, 200, seed=1)
    reference = _reference_model(tiny_dreamsim_dir)
    with torch.no_grad():
        expected = reference(
            torch.stack([_dreamsim_preprocess(x) for x in a]),
            torch.stack([_dreamsim_preprocess(x) for x in b]),
        )
    torch.testing.assert_close(dreamsim_distance(a, b, tiny_dreamsim_config), expected.double(), rtol=0, atol=5e-3)


def test_identical_images_have_zero_distance(tiny_dreamsim_config, make_images):
    images = make_images(3, 100, 120)
    assert dreamsim_distance(images, [x.clone() for x in images], tiny_dreamsim_config).abs().max() < 1e-9


def test_lora_adapter_is_applied(tiny_dreamsim_config, tiny_dreamsim_dir, make_images):
    a, b = make_images(2, 224, 224), make_images(2, 224, 224, seed=1)
    base = PerceptualModel(
        model_type="clip_vitl14", feat_type="embedding", stride="14", lora=True,
        load_dir=str(tiny_dreamsim_dir), device="cpu", normalize_embeds=True,
    ).eval()  # fmt: skip
    with torch.no_grad():
        without_lora = base(
            torch.stack([x.float() / 255 for x in a]), torch.stack([x.float() / 255 for x in b])
        ).double()
    assert (dreamsim_distance(a, b, tiny_dreamsim_config) - without_lora).abs().max() > 1e-3


def test_torch_hub_dir_is_restored_after_dreamsim_redirects_it(tmp_path):
    before = torch.hub.get_dir()
    with preserved_torch_hub_dir():
        torch.hub.set_dir(str(tmp_path))  # what dreamsim's ViTExtractor does for DINO backbones
    assert torch.hub.get_dir() == before
    with pytest.raises(RuntimeError), preserved_torch_hub_dir():
        torch.hub.set_dir(str(tmp_path))
        raise RuntimeError("loading failed")
    assert torch.hub.get_dir() == before


def test_jigsaw_score_penalises_wrong_counts_and_unreadable_images(tiny_dreamsim_config, make_images, tmp_path):
    gen = make_images(2, 64, 64, seed=1)
    refs = make_images(2, 64, 64, seed=2)
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not an image")
    items = [
        gen,
        [refs[0].clone(), refs[1].clone()],
        gen[:1],
        None,
        [gen[0], str(broken)],
        [gen[0], str(tmp_path / "missing.png")],
    ]
    result = jigsaw_dreamsim_score(items, [tuple(refs)] * len(items), tiny_dreamsim_config)
    d0 = dreamsim_distance(gen, refs, tiny_dreamsim_config).mean().item()
    assert result.distances[0] == pytest.approx(d0, abs=1e-9)
    assert result.distances[1] == pytest.approx(0.0, abs=1e-9)
    assert result.distances[2:] == (1.0, 1.0, 1.0, 1.0)
    assert result.penalised == (False, False, True, True, True, True)
    assert result.score == pytest.approx(1.0 - (d0 + 4.0) / 6.0, abs=1e-9)


def test_jigsaw_all_correct_scores_one(tiny_dreamsim_config, make_images):
    refs = make_images(2, 64, 64)
    assert jigsaw_dreamsim_score([refs, refs], [tuple(refs)] * 2, tiny_dreamsim_config).score == pytest.approx(
        1.0, abs=1e-9
    )
