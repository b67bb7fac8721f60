"""Measure `lmms-eval-unify leaderboard --benchmark all` over many synthetic full-size runs, figures included:
CPU time, peak RSS, how many figures it wrote and the largest one's pixels (target at 500 runs: < 2 min CPU,
< 2 GB peak RSS).

Usage: python bench/leaderboard_bench.py [--runs 500] [--repeat 1] [--split-half] [--no-plots] [--gap-variant V]
       [--blas-threads 1] [--max-rss-mb N] [--json]

Six runs are base VLMs (understanding only: image-output tasks unsupported), the others unified models paired
with them; every run holds all four benchmarks at the papers' sizes (~10,000 sample rows). Generating the runs
is not timed. Each timed run is a fresh process (`python -m lmms_eval_unify.reports.leaderboard`), so imports,
reading, scoring, bootstrap (1000 replicates), the Gap Score fit (in its own child process), rendering and
plotting are all included. CPU is user + system time of the leaderboard process and its Gap fit child, with
BLAS/OpenMP pinned to `--blas-threads` threads (idle BLAS threads spin and would be counted). Peak RSS is
given per process: the leaderboard's own, and the largest child's (the Gap fit: torch). With `--max-rss-mb`
the leaderboard process is killed as soon as its RSS passes the bound (the run then fails), so a regression
cannot take the machine's memory; `--json` prints the last run's numbers as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import yaml
from PIL import Image

from lmms_eval_unify.benchmarks import BENCHMARKS
from lmms_eval_unify.testing.synthetic import benchmark_rows, write_run

N_BASES = 6
RUN_CODE = (
    "import json, resource, sys; from lmms_eval_unify.reports.leaderboard import main; code = main(sys.argv[1:]); "
    "own = next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM:')); "
    "child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss; "
    "print('BENCH_RSS_KB ' + json.dumps({'own': own, 'child': child}), file=sys.stderr); sys.exit(code)"
)
"""The timed process: the leaderboard, then its own peak RSS (VmHWM: ru_maxrss would count the pages of the
bench it was forked from) and its largest child's (ru_maxrss: at least the leaderboard's RSS when it forked
the child) in KiB on stderr."""


def make_runs(root: Path, runs: int, seed: int = 0) -> Path:
    """`root/runs` with `runs` synthetic runs of every benchmark, and `root/pairs.yaml` pairing them."""
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


def process_rss_kb(pid: int) -> int:
    """Current resident set size of a process (KiB), 0 once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)


def watch_rss(process: subprocess.Popen, max_rss_kb: int, exceeded: list[int]) -> None:
    """Kill `process` (its process group) when its RSS passes `max_rss_kb`; records the RSS seen."""
    while process.poll() is None:
        rss = process_rss_kb(process.pid)
        if rss > max_rss_kb:
            exceeded.append(rss)
            os.killpg(process.pid, signal.SIGKILL)
            return
        time.sleep(0.05)


def largest_png(folder: Path) -> tuple[int, int]:
    """(width, height) in pixels of the largest PNG (by area) in `folder`, (0, 0) if none."""
    sizes = []
    for path in folder.glob("*.png"):
        with Image.open(path) as image:
            sizes.append(image.size)
    return max(sizes, key=lambda s: s[0] * s[1], default=(0, 0))


def run_once(argv: list[str], out: Path, blas_threads: int, max_rss_mb: int | None) -> dict:
    """One timed leaderboard process; its CPU, peak RSS of it and of its Gap fit child, and its figures."""
    env = os.environ.copy()
    if blas_threads:
        env |= dict.fromkeys(("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"), str(blas_threads))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", RUN_CODE, *argv, "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    exceeded: list[int] = []
    if max_rss_mb:
        threading.Thread(target=watch_rss, args=(process, max_rss_mb * 1024, exceeded), daemon=True).start()
    _, err = process.communicate()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if exceeded:
        raise SystemExit(f"leaderboard killed: RSS {exceeded[0] / 1024:.0f} MB passed --max-rss-mb {max_rss_mb}")
    if process.returncode != 0:
        raise SystemExit(f"leaderboard failed (exit {process.returncode}):\n{err[-3000:]}")
    peak = json.loads(next(line for line in err.splitlines() if line.startswith("BENCH_RSS_KB "))[13:])
    width, height = largest_png(out)
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
        "peak_rss_mb": round(peak["own"] / 1024),
        "child_peak_rss_mb": round(peak["child"] / 1024),
        "figures": len(list(out.glob("figure_*.png"))),
        "largest_png_px": [width, height],
    }


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--split-half", action="store_true")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--gap-variant", choices=["official", "stable"], default="official")
    parser.add_argument("--blas-threads", type=int, default=1, help="0 = leave BLAS/OpenMP threads unset")
    parser.add_argument("--max-rss-mb", type=int, default=None, help="kill the leaderboard past this RSS")
    parser.add_argument("--json", action="store_true", help="print the last run's numbers as one JSON line")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pairs = make_runs(root, args.runs)
        argv = [str(root / "runs"), "--benchmark", "all", "--pairs", str(pairs), "--gap-variant", args.gap_variant]
        argv += ["--split-half"] * args.split_half + ["--no-plots"] * args.no_plots
        load = os.getloadavg()[0]
        results = [run_once(argv, root / f"board{i}", args.blas_threads, args.max_rss_mb) for i in range(args.repeat)]
    for r in results:
        print(
            f"leaderboard over {args.runs} runs (all benchmarks{', no plots' if args.no_plots else ''}): "
            f"CPU {r['cpu_s']} s (incl. the Gap fit child, BLAS threads {args.blas_threads or 'unset'}), "
            f"wall {r['wall_s']} s, peak RSS {r['peak_rss_mb']} MB (Gap fit child {r['child_peak_rss_mb']} MB), "
            f"{r['figures']} figures, largest PNG {r['largest_png_px'][0]}x{r['largest_png_px'][1]} px"
        )
    print(f"{os.cpu_count()} CPUs, load average before {load:.2f}")
    if args.json:
        print(json.dumps({"runs": args.runs, **results[-1]}))


if __name__ == "__main__":
    main_bench()
