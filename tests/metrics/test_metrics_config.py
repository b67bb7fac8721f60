"""MetricConfig resolution (explicit > env > task metadata > defaults) and the missing-weights error."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from lmms_eval_unify.metrics import MetricConfig, MissingWeightsError, resolve_config
from lmms_eval_unify.metrics.clip import get_clip
from lmms_eval_unify.metrics.dreamsim_metric import dreamsim_distance
from lmms_eval_unify.metrics.fid_fvd import fid, fvd
from lmms_eval_unify.metrics.lpips_metric import lpips_distance
from lmms_eval_unify.metrics.registry import clear_backbones


def test_defaults_are_the_papers_checkpoints():
    assert resolve_config("clip_score").backbone == "ViT-L-14-quickgelu"
    assert resolve_config("clip_score").weights == "openai"
    assert resolve_config("clip_choice").backbone == "ViT-B-32-quickgelu"
    assert resolve_config("lpips").backbone == "alex"
    assert resolve_config("dreamsim").backbone == "ensemble"
    assert (resolve_config("fid").backbone, resolve_config("fvd").backbone) == ("inception_v3", "resnet50")
    assert resolve_config("fid").variant == "official"


def test_standard_variant_defaults_to_textbook_feature_networks():
    assert resolve_config("fid", variant="standard").backbone == "tf_inception_v3"
    assert resolve_config("fvd", variant="standard").backbone == "i3d"
    assert resolve_config("clip_score", variant="standard").backbone == "ViT-L-14-quickgelu"


def test_precedence_explicit_over_env_over_metadata_over_default(monkeypatch):
    metadata = {"batch_size": 8, "variant": "standard", "backbone": "vgg", "unrelated_key": 1}
    assert resolve_config("lpips", metadata).batch_size == 8
    assert resolve_config("lpips", metadata).backbone == "vgg"
    monkeypatch.setenv("LMMS_EVAL_UNIFY_METRIC_BATCH_SIZE", "4")
    monkeypatch.setenv("LMMS_EVAL_UNIFY_METRIC_VARIANT", "official")
    monkeypatch.setenv("LMMS_EVAL_UNIFY_LPIPS_BACKBONE", "alex")
    config = resolve_config("lpips", metadata)
    assert (config.batch_size, config.variant, config.backbone) == (4, "official", "alex")
    assert resolve_config("lpips", metadata, batch_size=2, variant="standard").batch_size == 2
    assert resolve_config("lpips", metadata, variant="standard").variant == "standard"


def test_device_and_dtype_resolution(monkeypatch):
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_config("clip_score").device == expected
    assert resolve_config("clip_score", device="cpu").dtype == "fp32"
    assert resolve_config("clip_score", device="cuda").dtype == "bf16"
    assert resolve_config("fid", device="cuda").dtype == "fp32"  # features for Fréchet maths stay fp32
    assert resolve_config("dreamsim", device="cuda").dtype == "fp32"  # bf16 drifts past tolerance
    assert resolve_config("dreamsim", device="cuda", dtype="bf16").dtype == "bf16"  # still opt-in
    monkeypatch.setenv("LMMS_EVAL_UNIFY_DEVICE", "cpu")
    assert resolve_config("clip_score").device == "cpu"


@pytest.mark.parametrize(
    "overrides, error",
    [({"variant": "textbook"}, ValueError), ({"dtype": "int8"}, ValueError), ({"batch_size": 0}, ValueError),
     ({"colour": "red"}, TypeError)],
)  # fmt: skip
def test_invalid_settings_are_rejected(overrides, error):
    with pytest.raises(error):
        resolve_config("clip_score", **overrides)


def test_unknown_family_is_rejected():
    with pytest.raises(ValueError, match="unknown metric family"):
        resolve_config("psnr")


def test_config_is_hashable_and_frozen():
    config = resolve_config("lpips", device="cpu")
    assert {config: 1}[resolve_config("lpips", device="cpu")] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.device = "cuda"  # type: ignore[misc]


@pytest.fixture
def empty_caches(tmp_path, monkeypatch):
    """Point torch.hub and the HF hub at empty folders so no cached real weight can be found, and drop the
    backbones earlier tests of this process loaded (a loaded backbone is served without looking for weights)."""
    clear_backbones()
    previous = torch.hub.get_dir()
    torch.hub.set_dir(str(tmp_path / "torch_hub"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hf"))
    yield tmp_path
    torch.hub.set_dir(previous)


@pytest.mark.parametrize(
    "family, call, backbone, env_var, looked_in",
    [
        (
            "clip_score",
            lambda c, x: get_clip(c),
            "ViT-L-14-quickgelu",
            "LMMS_EVAL_UNIFY_CLIP_L14_CKPT",
            "models--timm--vit_large_patch14_clip_224.openai",
        ),
        (
            "clip_choice",
            lambda c, x: get_clip(c),
            "ViT-B-32-quickgelu",
            "LMMS_EVAL_UNIFY_CLIP_B32_CKPT",
            "models--timm--vit_base_patch32_clip_224.openai",
        ),
        (
            "lpips",
            lambda c, x: lpips_distance(x, x, config=c),
            "alex",
            "LMMS_EVAL_UNIFY_ALEXNET_CKPT",
            "alexnet-owt-7be5be79.pth",
        ),
        (
            "dreamsim",
            lambda c, x: dreamsim_distance(x, x, c),
            "dreamsim:ensemble",
            "LMMS_EVAL_UNIFY_DREAMSIM_DIR",
            "ensemble_lora/adapter_config.json",
        ),
        (
            "fid",
            lambda c, x: fid(x, x, config=c),
            "inception_v3",
            "LMMS_EVAL_UNIFY_INCEPTION_V3_CKPT",
            "inception_v3_google-0cc3c7bd.pth",
        ),
        (
            "fvd",
            lambda c, x: fvd([x], [x], config=c),
            "resnet50",
            "LMMS_EVAL_UNIFY_RESNET50_CKPT",
            "resnet50-0676ba61.pth",
        ),
    ],
)
def test_missing_real_weights_raise_a_clear_error(
    empty_caches, make_images, family, call, backbone, env_var, looked_in
):
    config = resolve_config(family, device="cpu")
    with pytest.raises(MissingWeightsError) as info:
        call(config, make_images(1))
    message = str(info.value)
    assert repr(backbone) in message and env_var in message and looked_in in message
    assert info.value.env_var == env_var


def test_standard_fid_missing_tf_inception_names_torch_fidelity_file(empty_caches, make_images):
    config = resolve_config("fid", variant="standard", device="cpu")
    with pytest.raises(MissingWeightsError, match="weights-inception-2015-12-05-6726825d.pth"):
        fid(make_images(2), make_images(2), config=config)


def test_env_var_pointing_at_a_missing_file_is_reported(empty_caches, monkeypatch):
    monkeypatch.setenv("LMMS_EVAL_UNIFY_CLIP_L14_CKPT", str(empty_caches / "nope.safetensors"))
    with pytest.raises(MissingWeightsError, match="nope.safetensors"):
        get_clip(resolve_config("clip_score", device="cpu"))


def test_tiny_backbones_require_explicit_random_weights():
    with pytest.raises(ValueError, match="weights='random'"):
        get_clip(MetricConfig(family="clip_score", backbone="tiny"))
    with pytest.raises(ValueError, match="weights='random'"):
        fid([], [], config=MetricConfig(family="fid", backbone="tiny"))
