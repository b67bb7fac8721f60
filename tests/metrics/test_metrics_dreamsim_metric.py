"""DreamSim from a tiny saved checkpoint + LoRA adapter, and Uni-MMMU's jigsaw image score.

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

from lmms_eval_unify.metrics import dreamsim_distance, jigsaw_dreamsim_score
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


def test_official_jigsaw_item_distance_is_the_released_one_bit_for_bit(tiny_dreamsim_config, released, image_forms):
    images = list(image_forms.values())
    generated = [images[k : k + 2] for k in range(0, len(images) - 1, 2)]
    references = [(images[-1 - k], images[-2 - k]) for k in range(0, len(images) - 1, 2)]
    expected = [
        (_released_distance(released, g0, r0) + _released_distance(released, g1, r1)) / 2.0
        for (g0, g1), (r0, r1) in zip(generated, references, strict=True)
    ]
    assert list(jigsaw_dreamsim_score(generated, references, tiny_dreamsim_config).distances) == expected


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
    assert result.distances[1] == pytest.approx(0.0, abs=FLOAT32_COSINE_ROUNDING)
    assert result.distances[2:] == (1.0, 1.0, 1.0, 1.0)
    assert result.penalised == (False, False, True, True, True, True)
    assert result.score == pytest.approx(1.0 - (d0 + 4.0) / 6.0, abs=1e-9)


def test_jigsaw_all_correct_scores_one(tiny_dreamsim_config, make_images):
    refs = make_images(2, 64, 64)
    assert jigsaw_dreamsim_score([refs, refs], [tuple(refs)] * 2, tiny_dreamsim_config).score == pytest.approx(
        1.0, abs=FLOAT32_COSINE_ROUNDING
    )
