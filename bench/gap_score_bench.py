"""Time the GapEval MIRT fit for 50 models × 4 categories (both variants) on the CPU.

Usage: ``python bench/gap_score_bench.py [--models 50] [--repeats 3]``.  Inputs are synthetic joint
counts (seeded Dirichlet-multinomial draws over GapEval's four categories); the first call of each
variant in the process is reported separately ("cold": includes the one-off TorchScript trace).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from lmms_eval_unify.scoring.gap_score import GAPEVAL_CATEGORIES, VARIANTS, fit_gap_scores

CATEGORY_SIZES = (147, 100, 94, 305)  # GapEval's 646 questions, sizes inferred in the spec


def synthetic_joint_counts(n_models: int, seed: int = 0) -> dict[str, dict[str, tuple[int, int, int, int]]]:
    """Seeded joint (n11, n10, n01, n00) counts with varied accuracy levels and imbalance."""
    rng = np.random.default_rng(seed)
    joint = {}
    for m in range(n_models):
        cells = {}
        for category, size in zip(GAPEVAL_CATEGORIES, CATEGORY_SIZES, strict=True):
            probs = rng.dirichlet(rng.uniform(0.3, 3.0, size=4))
            cells[category] = tuple(int(x) for x in rng.multinomial(size, probs))
        joint[f"model_{m:02d}"] = cells
    return joint


def time_variant(joint: dict, variant: str, repeats: int) -> tuple[float, list[float], int]:
    """Wall-clock seconds of the cold call and of ``repeats`` warm calls; number of converged models."""
    start = time.perf_counter()
    result = fit_gap_scores(joint, variant=variant)
    cold = time.perf_counter() - start
    warm = []
    for _ in range(repeats):
        start = time.perf_counter()
        fit_gap_scores(joint, variant=variant)
        warm.append(time.perf_counter() - start)
    return cold, warm, sum(m.converged for m in result.models.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    joint = synthetic_joint_counts(args.models)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads available; {args.models} models × 4")
    for variant in VARIANTS:
        cold, warm, converged = time_variant(joint, variant, args.repeats)
        print(
            f"{variant:9s} cold {cold:.3f} s | warm median {statistics.median(warm):.3f} s "
            f"(min {min(warm):.3f}, max {max(warm):.3f}) | converged {converged}/{args.models}"
        )


if __name__ == "__main__":
    main()
