"""Time the GapEval MIRT fit on the CPU: both variants at one model count, the ``stable`` fit's scaling with the
number of models, and the check that a ``stable`` fit is the same alone as in the batch.

Usage: ``python bench/gap_score_bench.py [--models 50] [--repeats 3] [--scaling 50,100,200,400] [--alone 200]``.
Inputs are synthetic joint counts (seeded Dirichlet-multinomial draws over GapEval's four categories); the first
call of each variant in the process is reported separately ("cold": includes the one-off TorchScript trace).
CPU time (``time.process_time``, the fit runs torch on one thread) is printed next to wall time because the wall
time inflates when other processes share the cores.  ``--scaling ''`` or ``--alone 0`` skip those parts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch

from lmms_eval_unify.benchmarks.gapeval.gap_score import GAPEVAL_CATEGORIES, VARIANTS, GapScoreResult, fit_gap_scores

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


def timed_fit(joint: dict, variant: str) -> tuple[float, float, GapScoreResult]:
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


def scaling(counts: list[int], repeats: int) -> list[str]:
    """``stable`` CPU medians per model count, with the iterations the fit ran (its cost: one derivative
    evaluation per model and iteration)."""
    lines = ["stable scaling: models | CPU median | CPU per model | iterations (sum, max) | converged"]
    for n_models in counts:
        joint = synthetic_joint_counts(n_models)
        cpus, result = [], None
        for _ in range(repeats):
            _, cpu, result = timed_fit(joint, "stable")
            cpus.append(cpu)
        assert result is not None
        steps = [m.steps_run for m in result.models.values()]
        converged = sum(m.converged for m in result.models.values())
        cpu = statistics.median(cpus)
        lines.append(
            f"  {n_models:5d} | {cpu:.3f} s | {1000 * cpu / n_models:.2f} ms | {sum(steps)}, {max(steps)} "
            f"| {converged}/{n_models}"
        )
    return lines


def alone_vs_batched(n_models: int) -> str:
    """Fit ``n_models`` in one batch and each alone; count the models whose converged flag, iteration count, J
    and θ are bitwise equal, and the largest gap difference."""
    joint = synthetic_joint_counts(n_models)
    batch = fit_gap_scores(joint, variant="stable")
    equal, gap_diff = 0, 0.0
    for name, cells in joint.items():
        alone, batched = fit_gap_scores({name: cells}, variant="stable").models[name], batch.models[name]
        fields = (alone.converged, alone.steps_run, alone.objective) == (
            batched.converged,
            batched.steps_run,
            batched.objective,
        )
        thetas = all(
            (alone.categories[c].theta_text, alone.categories[c].theta_image)
            == (batched.categories[c].theta_text, batched.categories[c].theta_image)
            for c in batch.categories
        )
        equal += fields and thetas
        gap_diff = max(gap_diff, *(abs(alone.categories[c].gap - batched.categories[c].gap) for c in batch.categories))
    return (
        f"stable alone vs batched ({n_models} models): converged flag, iterations, J and θ bitwise equal for "
        f"{equal}/{n_models}; max |gap difference| {gap_diff:.1e} points"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scaling", default="50,100,200,400", help="comma-separated model counts for `stable`")
    parser.add_argument("--alone", type=int, default=200, help="models for the alone-vs-batched check (0: skip)")
    args = parser.parse_args()
    joint = synthetic_joint_counts(args.models)
    load = os.getloadavg()[0]
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, load average {load:.2f}; {args.models} models × 4")
    for variant in VARIANTS:
        print(report(joint, variant, args.repeats))
    if args.scaling:
        print("\n".join(scaling([int(n) for n in args.scaling.split(",")], args.repeats)))
    if args.alone:
        print(alone_vs_batched(args.alone))


if __name__ == "__main__":
    main()
