"""Float64 feature statistics and the Fréchet distance."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist

from lmms_eval_unify.metrics.distributed import is_distributed


@dataclass(frozen=True)
class FeatureStatistics:
    """Streaming sufficient statistics of a feature set: count, sum and sum of outer products (float64).

    Sums merge exactly across batches and processes, so sharded runs need no padding and no feature gathering.
    """

    count: int
    total: torch.Tensor
    outer: torch.Tensor

    @classmethod
    def from_features(cls, features: torch.Tensor) -> FeatureStatistics:
        x = features.detach().double().cpu()
        return cls(x.shape[0], x.sum(dim=0), x.T @ x)

    def merged(self, other: FeatureStatistics) -> FeatureStatistics:
        return FeatureStatistics(self.count + other.count, self.total + other.total, self.outer + other.outer)

    def all_reduce(self) -> FeatureStatistics:
        """Sum the statistics over all torch.distributed ranks (no-op when not distributed)."""
        if not is_distributed():
            return self
        device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else "cpu"
        packed = torch.cat([torch.tensor([float(self.count)], dtype=torch.float64), self.total, self.outer.flatten()])
        packed = packed.to(device)
        dist.all_reduce(packed)
        packed = packed.cpu()
        d = self.total.numel()
        return FeatureStatistics(int(packed[0].item()), packed[1 : 1 + d], packed[1 + d :].view(d, d))

    @property
    def mean(self) -> torch.Tensor:
        return self.total / self.count

    @property
    def covariance(self) -> torch.Tensor:
        """Unbiased sample covariance (needs count >= 2)."""
        if self.count < 2:
            raise ValueError(f"a covariance needs at least 2 samples, got {self.count}")
        mean = self.mean
        return (self.outer - self.count * torch.outer(mean, mean)) / (self.count - 1)


def frechet_distance(mean_a: torch.Tensor, cov_a: torch.Tensor, mean_b: torch.Tensor, cov_b: torch.Tensor) -> float:
    """||mu_a - mu_b||^2 + tr(S_a) + tr(S_b) - 2 tr((S_a S_b)^{1/2}) in float64.

    tr((S_a S_b)^{1/2}) is the sum of square roots of the eigenvalues of S_a S_b (real and >= 0 in exact
    arithmetic; tiny negative or imaginary parts from rounding are dropped).
    """
    mean_a, mean_b, cov_a, cov_b = (t.double() for t in (mean_a, mean_b, cov_a, cov_b))
    eigenvalues = torch.linalg.eigvals(cov_a @ cov_b).real.clamp(min=0.0)
    trace_sqrt = eigenvalues.sqrt().sum()
    return float((mean_a - mean_b).square().sum() + cov_a.trace() + cov_b.trace() - 2.0 * trace_sqrt)


def frechet_distance_between(stats_a: FeatureStatistics, stats_b: FeatureStatistics) -> float:
    return frechet_distance(stats_a.mean, stats_a.covariance, stats_b.mean, stats_b.covariance)
