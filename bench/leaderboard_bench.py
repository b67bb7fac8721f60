"""Time `lmms-eval-unify leaderboard --benchmark all` over 30 synthetic full-size runs (target: < 10 s).

Usage: python bench/leaderboard_bench.py [--runs 30] [--repeat 3] [--split-half] [--no-plots]
Six runs are base VLMs (understanding only: image-output tasks unsupported), the others unified
models paired with them. Generating the runs is not timed. Each timed run is a fresh process
(`python -m lmms_eval_unify.reports.leaderboard`), so imports (torch/pyro for the Gap Score fit,
matplotlib), reading, scoring, bootstrap (1000 replicates), the MIRT fit, rendering and plotting
are all included.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from lmms_eval_unify.benchmarks import BENCHMARKS
from lmms_eval_unify.testing.synthetic import benchmark_rows, write_run

N_BASES = 6


def make_runs(root: Path, runs: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    pairs = {}
    for i in range(runs):
        is_base = i < N_BASES
        model = f"base-{i}" if is_base else f"unified-{i}"
        if not is_base:
            pairs[model] = f"base-{i % N_BASES}"
        tasks = {}
        for benchmark in BENCHMARKS:
            tasks |= benchmark_rows(benchmark, rng.uniform(0.2, 0.8), rng, generates_images=not is_base)
        write_run(root / "runs", model, tasks)
    pairs_file = root / "pairs.yaml"
    pairs_file.write_text(yaml.safe_dump({"pairs": pairs}), encoding="utf-8")
    return pairs_file


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--split-half", action="store_true")
    parser.add_argument("--no-plots", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pairs = make_runs(root, args.runs)
        argv = [str(root / "runs"), "--benchmark", "all", "--pairs", str(pairs), "-o", str(root / "board")]
        argv += ["--split-half"] * args.split_half + ["--no-plots"] * args.no_plots
        load = os.getloadavg()[0]
        times, cpu = [], []
        for _ in range(args.repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "lmms_eval_unify.reports.leaderboard", *argv],
                check=True,
                capture_output=True,
            )
            times.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    print(
        f"leaderboard over {args.runs} runs (all benchmarks): wall best {min(times):.2f} s "
        f"{[round(t, 2) for t in times]}, CPU (incl. the Gap Score child) {[round(c, 2) for c in cpu]} s, "
        f"{os.cpu_count()} CPUs, load average before {load:.2f}"
    )


if __name__ == "__main__":
    main_bench()
