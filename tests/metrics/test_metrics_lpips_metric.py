"""LPIPS official/standard variants against direct calls of the lpips model."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F
import torchvision

from lmms_eval_unify.metrics import lpips_distance, resolve_config
from lmms_eval_unify.metrics.lpips_metric import load_lpips
from lmms_eval_unify.metrics.registry import get_backbone


def _unit(images):
    return torch.stack(images).float() / 255.0


def _direct(config, a, b):
    model = get_backbone(config, load_lpips).model
    with torch.no_grad():
        return model(a, b).flatten().double()


def test_identical_images_have_zero_distance(random_lpips_config, make_images):
    images = make_images(3, 64, 64)
    for variant in ("official", "standard"):
        assert lpips_distance(images, images, variant=variant, config=random_lpips_config).abs().max() < 1e-7


def test_official_feeds_unit_range_and_standard_feeds_minus_one_to_one(random_lpips_config, make_images):
    a, b = make_images(3, 64, 64), make_images(3, 64, 64, seed=1)
    official = lpips_distance(a, b, variant="official", config=random_lpips_config)
    standard = lpips_distance(a, b, variant="standard", config=random_lpips_config)
    torch.testing.assert_close(official, _direct(random_lpips_config, _unit(a), _unit(b)), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(
        standard, _direct(random_lpips_config, 2 * _unit(a) - 1, 2 * _unit(b) - 1), rtol=1e-5, atol=1e-6
    )
    assert not torch.allclose(official, standard)


def test_variant_defaults_to_the_configs(random_lpips_config, make_images):
    a, b = make_images(2, 64, 64), make_images(2, 64, 64, seed=1)
    standard_config = dataclasses.replace(random_lpips_config, variant="standard")
    torch.testing.assert_close(
        lpips_distance(a, b, config=standard_config),
        lpips_distance(a, b, variant="standard", config=random_lpips_config),
    )


def test_mismatched_pair_is_resized_to_the_smaller_height_and_width(random_lpips_config, make_images):
    (a,), (b,) = make_images(1, 80, 64), make_images(1, 64, 96, seed=1)

    def resize(x):
        return F.interpolate(x[None].float() / 255, size=(64, 64), mode="bilinear", align_corners=False)

    expected = _direct(random_lpips_config, resize(a), resize(b))
    torch.testing.assert_close(lpips_distance([a], [b], config=random_lpips_config), expected, rtol=1e-5, atol=1e-6)


def test_batched_equals_pair_by_pair(random_lpips_config, make_images):
    a = make_images(3, 64, 64) + make_images(2, 72, 64, seed=2)
    b = make_images(3, 64, 64, seed=1) + make_images(2, 72, 64, seed=3)
    batched = lpips_distance(a, b, config=dataclasses.replace(random_lpips_config, batch_size=2))
    singles = torch.cat([lpips_distance([x], [y], config=random_lpips_config) for x, y in zip(a, b, strict=True)])
    torch.testing.assert_close(batched, singles, rtol=1e-5, atol=1e-6)


@pytest.mark.heavy
def test_trunk_checkpoint_from_env_var_is_loaded_into_every_slice(tmp_path, monkeypatch, make_images):
    torch.manual_seed(123)
    alexnet = torchvision.models.alexnet()
    path = tmp_path / "alexnet.pth"
    torch.save(alexnet.state_dict(), path)
    monkeypatch.setenv("LMMS_EVAL_UNIFY_ALEXNET_CKPT", str(path))
    model = load_lpips(resolve_config("lpips", device="cpu")).model
    loaded = 0
    for slice_index in range(1, model.net.N_slices + 1):
        for name, layer in getattr(model.net, f"slice{slice_index}").named_children():
            for key, value in layer.state_dict().items():
                assert torch.equal(value, alexnet.features[int(name)].state_dict()[key])
                loaded += 1
    assert loaded == 10  # five conv layers, weight and bias each


def test_unsupported_backbone_is_rejected(make_images):
    with pytest.raises(ValueError, match="unsupported LPIPS backbone"):
        lpips_distance(make_images(1), make_images(1), config={"backbone": "squeeze", "weights": "random"})


def test_lpips_trunk_runs_in_channels_last(random_lpips_config, make_images):
    model = get_backbone(random_lpips_config, load_lpips).model
    convolutions = [m for m in model.net.modules() if isinstance(m, torch.nn.Conv2d)]
    assert convolutions
    assert all(m.weight.is_contiguous(memory_format=torch.channels_last) for m in convolutions)
    seen = []
    hook = convolutions[0].register_forward_pre_hook(lambda module, inputs: seen.append(inputs[0]))
    try:
        lpips_distance(make_images(2, 64, 64), make_images(2, 64, 64, seed=1), config=random_lpips_config)
    finally:
        hook.remove()
    assert seen and all(x.is_contiguous(memory_format=torch.channels_last) for x in seen)


@pytest.mark.parametrize("backbone", ["alex", pytest.param("vgg", marks=pytest.mark.heavy)])
def test_min_side_is_the_smallest_pair_the_trunk_takes(backbone):
    """``MIN_SIDE`` is measured, not guessed: the trunk takes a pair of that side and raises one pixel below."""
    from lmms_eval_unify.metrics.lpips_metric import MIN_SIDE

    model = load_lpips(resolve_config("lpips", {"backbone": backbone, "weights": "random"})).model
    side = MIN_SIDE[backbone]
    with torch.no_grad():
        model(torch.rand(1, 3, side, side), torch.rand(1, 3, side, side))
        with pytest.raises(RuntimeError):
            model(torch.rand(1, 3, side - 1, side + 40), torch.rand(1, 3, side - 1, side + 40))


def test_a_pair_too_small_raises_a_typed_error_naming_it(random_lpips_config, make_images):
    from lmms_eval_unify.metrics.lpips_metric import ImageTooSmallError, lpips_min_side

    assert lpips_min_side(random_lpips_config) == 31
    large, small = make_images(2, 64, 64), make_images(1, 64, 30)
    with pytest.raises(ImageTooSmallError) as raised:
        lpips_distance(large, [large[0], small[0]], config=random_lpips_config)  # the pair is resized to 64x30
    assert raised.value.indices == [1] and "31x31" in str(raised.value)
