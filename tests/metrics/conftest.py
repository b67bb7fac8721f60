"""Fixtures: tiny randomly initialised backbones selected through the normal MetricConfig path; no network."""

from __future__ import annotations

import os

import pytest
import torch

from lmms_eval_unify.metrics.config import ENV_PREFIX
from lmms_eval_unify.metrics.tiny import tiny_configs, write_tiny_dreamsim_checkpoint


@pytest.fixture(autouse=True)
def hermetic_metric_env(monkeypatch):
    """No LMMS_EVAL_UNIFY_* variable from the developer's shell leaks into a test."""
    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)


@pytest.fixture
def make_images():
    """Deterministic random uint8 images [3, H, W]."""

    def make(count: int, height: int = 32, width: int = 32, seed: int = 0) -> list[torch.Tensor]:
        generator = torch.Generator().manual_seed(seed)
        return [torch.randint(0, 256, (3, height, width), dtype=torch.uint8, generator=generator) for _ in range(count)]

    return make


@pytest.fixture(scope="session")
def tiny_dreamsim_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("dreamsim")
    write_tiny_dreamsim_checkpoint(directory)
    return directory


TEST_DEVICE = os.environ.get("METRICS_TEST_DEVICE", "cpu")
"""Device of the tiny backbones; `METRICS_TEST_DEVICE=cuda` runs these tests on a GPU (its default dtypes)."""


@pytest.fixture(scope="session")
def tiny(tiny_dreamsim_dir):
    """The tiny config of every metric family, built exactly as the benchmark builds them."""
    return tiny_configs(tiny_dreamsim_dir, device=TEST_DEVICE)


@pytest.fixture
def tiny_clip_config(tiny):
    return tiny["clip_choice"]


@pytest.fixture
def random_lpips_config(tiny):
    return tiny["lpips"]


@pytest.fixture
def tiny_dreamsim_config(tiny):
    return tiny["dreamsim"]


@pytest.fixture
def tiny_fid_config(tiny):
    return tiny["fid"]


@pytest.fixture
def tiny_fvd_config(tiny):
    return tiny["fvd"]
