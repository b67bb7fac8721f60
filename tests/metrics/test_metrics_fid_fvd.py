"""FID/FVD official (per-pair squared L2) and standard (Fréchet over sets) on tiny feature networks."""

from __future__ import annotations

import dataclasses

import pytest
import scipy.linalg
import torch
import torchvision
from torch import nn

from lmms_eval_unify.metrics import fid, fvd, resolve_config
from lmms_eval_unify.metrics.config import seeded_random_init
from lmms_eval_unify.metrics.encoders import EmbeddingCache
from lmms_eval_unify.metrics.fid_fvd import (
    _i3d_features,
    _inception_pool_features,
    _tiny_feature_net,
    load_image_features,
)
from lmms_eval_unify.metrics.registry import get_backbone

MEAN = torch.tensor([0.485, 0.456, 0.406])[:, None, None]
STD = torch.tensor([0.229, 0.224, 0.225])[:, None, None]


def _direct_features(images):
    """The tiny net applied by hand to 32x32 images (no resize needed)."""
    net = _tiny_feature_net().eval()
    with torch.no_grad():
        return net(torch.stack([(x.float() / 255 - MEAN) / STD for x in images])).double()


def _closed_form_frechet(a, b):
    cov_a, cov_b = torch.cov(a.T).numpy(), torch.cov(b.T).numpy()
    mean_term = ((a.mean(0) - b.mean(0)) ** 2).sum().item()
    return mean_term + float(cov_a.trace() + cov_b.trace() - 2 * scipy.linalg.sqrtm(cov_a @ cov_b).real.trace())


def test_official_fid_is_per_pair_squared_l2(tiny_fid_config, make_images):
    real, generated = make_images(4), make_images(4, seed=1)
    result = fid(real, generated, config=tiny_fid_config)
    expected = ((_direct_features(real) - _direct_features(generated)) ** 2).sum(-1)
    torch.testing.assert_close(result.per_sample, expected, rtol=1e-5, atol=1e-9)
    assert result.value == pytest.approx(expected.mean().item(), rel=1e-5)
    assert (result.variant, result.backbone, result.num_real) == ("official", "tiny", 4)


def test_standard_fid_is_frechet_distance_of_the_sets(tiny_fid_config, make_images):
    real, generated = make_images(40), make_images(30, seed=1)
    result = fid(real, generated, variant="standard", config=tiny_fid_config)
    expected = _closed_form_frechet(_direct_features(real), _direct_features(generated))
    assert result.value == pytest.approx(expected, rel=1e-3)
    assert (result.variant, result.per_sample, result.num_real, result.num_generated) == (
        "standard",
        None,
        40,
        30,
    )


def test_identical_sets_give_zero(tiny_fid_config, make_images):
    images = make_images(20)
    assert fid(images, images, config=tiny_fid_config).value == 0.0
    assert fid(images, images, variant="standard", config=tiny_fid_config).value == pytest.approx(0.0, abs=1e-6)


def test_official_needs_pairs(tiny_fid_config, make_images):
    with pytest.raises(ValueError, match="pairs"):
        fid(make_images(2), make_images(3), config=tiny_fid_config)


def test_inception_features_are_torchvisions_pooled_mixed_7c():
    config = resolve_config("fid", weights="random", device="cpu")
    ours = _inception_pool_features(config).eval()
    with seeded_random_init():
        reference = torchvision.models.inception_v3(weights=None, aux_logits=True, init_weights=False)
    reference.fc = nn.Identity()
    x = torch.randn(2, 3, 96, 96, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(ours(x), reference.eval()(x))
    assert ours(x).shape == (2, 2048)


def test_official_fvd_compares_the_frame_means_of_every_frame_given(tiny_fvd_config, make_images):
    real = [make_images(5, seed=1), make_images(4, seed=2)]
    generated = [make_images(3, seed=3), make_images(4, seed=4)]
    result = fvd([torch.stack(real[0]), real[1]], generated, config=tiny_fvd_config)
    expected = [
        ((_direct_features(r).mean(0) - _direct_features(g).mean(0)) ** 2).sum()
        for r, g in zip(real, generated, strict=True)
    ]
    torch.testing.assert_close(result.per_sample, torch.stack(expected), rtol=1e-5, atol=1e-9)


def test_standard_fvd_on_frame_means_is_frechet(tiny_fvd_config, make_images):
    real = [make_images(3, seed=i) for i in range(6)]
    generated = [make_images(2, seed=10 + i) for i in range(5)]
    config = dataclasses.replace(tiny_fvd_config, variant="standard")
    result = fvd(real, generated, config=config)
    real_features = torch.stack([_direct_features(v).mean(0) for v in real])
    generated_features = torch.stack([_direct_features(v).mean(0) for v in generated])
    assert result.value == pytest.approx(_closed_form_frechet(real_features, generated_features), rel=1e-3)


class _ShapeReportingI3D(nn.Module):
    """Stand-in for StyleGAN-V's I3D torchscript: same call signature; reports what it was fed."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor, rescale: bool, resize: bool, return_features: bool) -> torch.Tensor:
        flags = torch.tensor([float(rescale), float(resize), float(return_features)])
        info = torch.tensor([float(x.shape[1]), float(x.shape[2]), float(x.shape[3]), float(x.shape[4])])
        stats = torch.stack([x.min(), x.max()])
        per_video = [torch.cat([self.proj(x[i].mean(dim=(1, 2, 3))), flags, info, stats]) for i in range(x.shape[0])]
        return torch.stack(per_video)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")
def test_standard_fvd_runs_the_i3d_torchscript_on_224_clips(tmp_path, monkeypatch, make_images):
    path = tmp_path / "i3d_torchscript.pt"
    with seeded_random_init():
        torch.jit.script(_ShapeReportingI3D()).save(str(path))
    monkeypatch.setenv("LMMS_EVAL_UNIFY_I3D_CKPT", str(path))
    config = resolve_config("fvd", variant="standard", device="cpu")
    assert config.backbone == "i3d"
    real = [make_images(4, 40, 60, seed=i) for i in range(3)]
    generated = [make_images(4, 40, 60, seed=10 + i) for i in range(3)]
    result = fvd(real, generated, config=config)
    assert result.backbone == "i3d" and result.num_real == 3
    assert result.value > 0.0
    assert fvd(real, real, config=config).value == pytest.approx(0.0, abs=1e-6)
    features = _i3d_features(config, real)
    assert features[:, 3:6].tolist() == [[0.0, 0.0, 1.0]] * 3  # rescale=False, resize=False, features
    assert features[:, 6:10].tolist() == [[3.0, 4.0, 224.0, 224.0]] * 3  # [B, 3, T, 224, 224]
    assert features[:, 10].min() >= -1.0 and features[:, 11].max() <= 1.0


@pytest.mark.heavy
def test_standard_fid_feeds_uint8_images_to_tf_inception_without_antialias(tmp_path, monkeypatch, make_images):
    """torch-fidelity's TF-Inception with seeded random weights (its weight file is replaced by an empty one,
    the only part bypassed): our features equal the extractor's own output on the uint8 images."""
    fidelity = pytest.importorskip("torch_fidelity.feature_extractor_inceptionv3")  # optional dependency
    from torchmetrics.image.fid import NoTrainInceptionV3

    monkeypatch.setattr(fidelity.FeatureExtractorInceptionV3, "load_state_dict", lambda self, state, strict=True: None)
    path = tmp_path / "weights-inception-2015-12-05-6726825d.pth"
    torch.save({}, path)
    monkeypatch.setenv("LMMS_EVAL_UNIFY_FID_INCEPTION_CKPT", str(path))
    config = resolve_config("fid", variant="standard", device="cpu")
    assert config.backbone == "tf_inception_v3"
    images = make_images(3, 64, 48) + make_images(2, 80, 80, seed=1)
    features = get_backbone(config, load_image_features).embed(images)
    with seeded_random_init():
        reference = NoTrainInceptionV3("inception-v3-compat", ["2048"], str(path), antialias=False)
    with torch.no_grad():
        expected = torch.cat([reference(torch.stack(images[:3])), reference(torch.stack(images[3:]))])
    torch.testing.assert_close(features, expected, rtol=1e-5, atol=1e-5)


def test_convolutional_feature_nets_run_in_channels_last(tiny_fid_config, make_images, monkeypatch):
    """Channels-last is the faster conv layout (CPU oneDNN, CUDA cuDNN); the features stay those of the
    contiguous reference network (the per-pair test above)."""
    encoder = get_backbone(tiny_fid_config, load_image_features)
    monkeypatch.setattr(encoder, "cache", EmbeddingCache())  # other tests embedded these images already
    convolutions = [m for m in encoder.forward.modules() if isinstance(m, nn.Conv2d)]
    assert encoder.channels_last and convolutions
    assert all(m.weight.is_contiguous(memory_format=torch.channels_last) for m in convolutions)
    seen = []
    hook = convolutions[0].register_forward_pre_hook(lambda module, inputs: seen.append(inputs[0]))
    try:
        fid(make_images(2), make_images(2, seed=1), config=tiny_fid_config)
    finally:
        hook.remove()
    assert seen and all(x.is_contiguous(memory_format=torch.channels_last) for x in seen)
