"""DreamSim from a tiny saved checkpoint + LoRA adapter.

The reference is dreamsim's own entry point, ``dreamsim.dreamsim()``, on the same tiny files (its model and
its ``preprocess``), called the way the released Uni-MMMU script calls it: ``Image.open`` (for files),
``.convert("RGB")``, ``preprocess``, ``model(a, b)``, ``float(...)``.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
import torch
from dreamsim.model import PerceptualModel
from PIL import Image

from lmms_eval_unify.metrics import dreamsim_distance
from lmms_eval_unify.metrics.dreamsim_metric import load_dreamsim, preserved_torch_hub_dir
from lmms_eval_unify.metrics.encoders import EmbeddingCache
from lmms_eval_unify.metrics.images import ImageInput
from lmms_eval_unify.metrics.registry import get_backbone
from lmms_eval_unify.testing.released_dreamsim import released_dreamsim

FLOAT32_COSINE_ROUNDING = 2.5e-7
"""How far from 0 the official (float32, as released) distance of two identical images may land."""


@pytest.fixture(scope="module")
def released(tiny_dreamsim_dir):
    """(model, preprocess) of ``dreamsim.dreamsim(pretrained=True)`` on the tiny checkpoint."""
    return released_dreamsim(tiny_dreamsim_dir)


def _noise(height: int, width: int, seed: int, channels: int = 3) -> np.ndarray:
    shape = (height, width, channels) if channels > 1 else (height, width)
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


@pytest.fixture(scope="module")
def image_forms(tmp_path_factory) -> dict[str, ImageInput]:
    """Inputs of several sizes (up- and downscaled, square or not), PIL modes and file formats."""
    folder = tmp_path_factory.mktemp("forms")
    rgb = {size: Image.fromarray(_noise(*size, seed=i)) for i, size in enumerate([(64, 64), (150, 260), (300, 200)])}
    palette = Image.fromarray(_noise(130, 100, 7)).quantize(64)
    palette.info["transparency"] = 3
    sixteen_bit = Image.fromarray(np.random.default_rng(8).integers(0, 512, (90, 110), dtype=np.uint16))
    forms: dict[str, ImageInput] = {
        "RGB 64x64": rgb[(64, 64)],
        "RGB 260x150": rgb[(150, 260)],
        "RGB 200x300": rgb[(300, 200)],
        "RGB 224x224": Image.fromarray(_noise(224, 224, 3)),
        "RGB 1024x768": Image.fromarray(_noise(768, 1024, 4)),
        "RGBA 90x120": Image.fromarray(_noise(120, 90, 5, channels=4), "RGBA"),
        "L 140x100": Image.fromarray(_noise(100, 140, 6, channels=1), "L"),
        "P 100x130 with transparency": palette,
        "LA 70x50": Image.fromarray(_noise(50, 70, 9, channels=2), "LA"),
        "CMYK 80x60": Image.fromarray(_noise(60, 80, 10)).convert("CMYK"),
    }
    files = {
        "RGBA.png": forms["RGBA 90x120"],
        "P.png": palette,
        "L.png": forms["L 140x100"],
        "I16.png": sixteen_bit,  # 16-bit PNG: torchvision decodes uint16, PIL clips to 8 bit
        "q30.jpg": rgb[(150, 260)],
        "q90.jpg": rgb[(300, 200)],
        "L.jpg": forms["L 140x100"],
    }
    for name, image in files.items():
        path = folder / name
        image.save(path, quality=30 if name == "q30.jpg" else 90) if name.endswith(".jpg") else image.save(path)
        forms[f"file {name}"] = str(path)
    return forms


def _opened(image: ImageInput) -> Image.Image:
    return Image.open(image) if isinstance(image, str | os.PathLike) else image


def _released_distance(released, a: ImageInput, b: ImageInput) -> float:
    """One DreamSim distance exactly as the released Uni-MMMU jigsaw evaluator computes it."""
    model, preprocess = released
    with torch.no_grad():
        return float(model(preprocess(_opened(a).convert("RGB")), preprocess(_opened(b).convert("RGB"))).item())


def _model_input(config, image: ImageInput) -> torch.Tensor:
    """The batch our pipeline hands DreamSim's forward for one image (embedding cache bypassed, no forward)."""
    encoder = get_backbone(config, load_dreamsim)
    seen = []

    def spy(batch: torch.Tensor) -> torch.Tensor:
        seen.append(batch.clone())
        return torch.zeros(len(batch), 1)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(encoder, "forward", spy)
        patch.setattr(encoder, "cache", EmbeddingCache())
        encoder.embed([image])
    (batch,) = seen
    return batch


def test_official_preprocessing_is_dreamsims_own_bit_for_bit(tiny_dreamsim_config, released, image_forms):
    _, preprocess = released
    for name, image in image_forms.items():
        expected = preprocess(_opened(image).convert("RGB"))
        assert torch.equal(_model_input(tiny_dreamsim_config, image), expected), name


def test_official_distance_is_the_released_distance_bit_for_bit(tiny_dreamsim_config, released, image_forms):
    images = list(image_forms.values())
    others = images[1:] + images[:1]  # every form against the next one
    expected = [_released_distance(released, a, b) for a, b in zip(images, others, strict=True)]
    assert dreamsim_distance(images, others, tiny_dreamsim_config).tolist() == expected


def test_standard_variant_is_batched_and_stays_close(tiny_dreamsim_config, released, image_forms):
    """``standard`` resizes tensors in batches: close to the released distances, not equal on resized inputs."""
    standard = dataclasses.replace(tiny_dreamsim_config, variant="standard")
    images = list(image_forms.values())
    others = images[1:] + images[:1]
    expected = torch.tensor([_released_distance(released, a, b) for a, b in zip(images, others, strict=True)])
    got = dreamsim_distance(images, others, standard)
    torch.testing.assert_close(got, expected.double(), rtol=0, atol=5e-3)
    assert (got - expected).abs().max() > 0


@pytest.mark.parametrize(("variant", "tolerance"), [("standard", 1e-12), ("official", FLOAT32_COSINE_ROUNDING)])
def test_identical_images_have_zero_distance(tiny_dreamsim_config, make_images, variant, tolerance):
    config = dataclasses.replace(tiny_dreamsim_config, variant=variant)
    images = make_images(3, 100, 120)
    assert dreamsim_distance(images, [x.clone() for x in images], config).abs().max() <= tolerance


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
