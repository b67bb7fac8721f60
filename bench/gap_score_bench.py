"""Time the GapEval MIRT fit for 50 models × 4 categories (both variants) on the CPU.

Usage: ``python bench/gap_score_bench.py [--models 50] [--repeats 3]``.  Inputs are synthetic joint
counts (seeded Dirichlet-multinomial draws over GapEval's four categories); the first call of each
variant in the process is reported separately ("cold": includes the one-off TorchScript trace).
CPU time is printed next to wall time because the wall time inflates when other processes share the cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch

from lmms_eval_unify.benchmarks.gapeval.gap_score import GAPEVAL_CATEGORIES, VARIANTS, fit_gap_scores

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


def timed_fit(joint: dict, variant: str):
    """(wall seconds, process CPU seconds, result) of one fit."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fit_gap_scores(joint, variant=variant)
    return time.perf_counter() - wall, time.process_time() - cpu, result


def report(joint: dict, variant: str, repeats: int) -> str:
    """One line: the cold call, then wall / CPU medians of ``repeats`` warm calls, and convergence."""
    cold, _, result = timed_fit(joint, variant)
    warm = [timed_fit(joint, variant)[:2] for _ in range(repeats)]
    walls, cpus = [w for w, _ in warm], [c for _, c in warm]
    converged = sum(m.converged for m in result.models.values())
    return (
        f"{variant:9s} cold {cold:.3f} s | warm wall median {statistics.median(walls):.3f} s "
        f"(min {min(walls):.3f}, max {max(walls):.3f}), CPU median {statistics.median(cpus):.3f} s "
        f"| converged {converged}/{len(result.models)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    joint = synthetic_joint_counts(args.models)
    load = os.getloadavg()[0]
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, load average {load:.2f}; {args.models} models × 4")
    for variant in VARIANTS:
        print(report(joint, variant, args.repeats))


if __name__ == "__main__":
    main()
