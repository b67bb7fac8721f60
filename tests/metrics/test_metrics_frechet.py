"""Fréchet distance on known Gaussians and streaming statistics."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

from lmms_eval_unify.metrics import FeatureStatistics, frechet_distance


def test_diagonal_gaussians_match_the_closed_form():
    mean_a, mean_b = torch.tensor([0.0, 1.0, 2.0]), torch.tensor([1.0, -1.0, 2.5])
    var_a, var_b = torch.tensor([1.0, 4.0, 0.25]), torch.tensor([9.0, 1.0, 0.25])
    expected = ((mean_a - mean_b) ** 2).sum() + ((var_a.sqrt() - var_b.sqrt()) ** 2).sum()
    assert frechet_distance(mean_a, torch.diag(var_a), mean_b, torch.diag(var_b)) == pytest.approx(
        float(expected), abs=1e-12
    )


def test_general_covariances_match_scipy_sqrtm():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(6, 6)), rng.normal(size=(6, 6))
    cov_a, cov_b = a @ a.T + 0.1 * np.eye(6), b @ b.T + 0.1 * np.eye(6)
    mean_a, mean_b = rng.normal(size=6), rng.normal(size=6)
    expected = ((mean_a - mean_b) ** 2).sum() + np.trace(cov_a + cov_b - 2 * scipy.linalg.sqrtm(cov_a @ cov_b).real)
    got = frechet_distance(*(torch.from_numpy(x) for x in (mean_a, cov_a, mean_b, cov_b)))
    assert got == pytest.approx(expected, rel=1e-9)


def test_identical_distributions_have_zero_distance():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 5))
    cov = torch.from_numpy(x @ x.T)
    assert frechet_distance(torch.zeros(5), cov, torch.zeros(5), cov) == pytest.approx(0.0, abs=1e-9)


def test_statistics_match_torch_mean_and_cov_and_merge_exactly():
    features = torch.randn(50, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    full = FeatureStatistics.from_features(features)
    torch.testing.assert_close(full.mean, features.mean(0))
    torch.testing.assert_close(full.covariance, torch.cov(features.T))
    merged = FeatureStatistics.from_features(features[:17]).merged(FeatureStatistics.from_features(features[17:]))
    assert merged.count == 50
    torch.testing.assert_close(merged.covariance, full.covariance)
    assert full.all_reduce() is full  # not distributed: unchanged


def test_covariance_needs_two_samples():
    with pytest.raises(ValueError, match="at least 2"):
        _ = FeatureStatistics.from_features(torch.ones(1, 3)).covariance
