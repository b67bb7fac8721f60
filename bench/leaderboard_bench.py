"""Measure `lmms-eval-unify leaderboard --benchmark all` over many synthetic full-size runs, figures included:
CPU time, peak RSS, how many figures it wrote and the largest one's pixels (targets at 500 runs: < 2 min CPU,
< 2 GB peak RSS, < 1.2 GB for the leaderboard and its Gap fit child together).

Usage: python bench/leaderboard_bench.py [--runs 500] [--repeat 1] [--split-half] [--no-plots] [--gap-variant V]
       [--blas-threads 1] [--max-rss-mb N] [--json]

Six runs are base VLMs (understanding only: image-output tasks unsupported), the others unified models paired
with them; every run holds all four benchmarks at the papers' sizes (~10,000 sample rows). Generating the runs
is not timed. Each timed run is a fresh process (`python -m lmms_eval_unify.reports.leaderboard`), so imports,
reading, scoring, bootstrap (1000 replicates), the Gap Score fit (in its own child process), rendering and
plotting are all included. CPU is user + system time of the leaderboard process and its Gap fit child, with
BLAS/OpenMP pinned to `--blas-threads` threads (idle BLAS threads spin and would be counted). Memory: the
leaderboard's own peak RSS (its VmHWM, exact), the Gap fit child's (its VmHWM as last read while it ran) and the
process tree's (the largest sum of the RSS of the leaderboard and its children read at the same moment): both
sampled every `SAMPLE_S` from /proc. (The child's ru_maxrss is no measure: a child spawned by vfork and exec
starts it at the leaderboard's peak RSS so far.) With `--max-rss-mb` the leaderboard process is killed as soon
as its RSS passes the bound (the run then fails), so a regression cannot take the machine's memory; `--json`
prints the last run's numbers as one JSON line.
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from PIL import Image

from lmms_eval_unify.benchmarks import BENCHMARKS
from lmms_eval_unify.testing.synthetic import benchmark_rows, write_run

N_BASES = 6
RUN_CODE = (
    "import sys; from lmms_eval_unify.reports.leaderboard import main; code = main(sys.argv[1:]); "
    "own = next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM:')); "
    "print(f'BENCH_RSS_KB {own}', file=sys.stderr); sys.exit(code)"
)
"""The timed process: the leaderboard, then its own peak RSS in KiB on stderr (VmHWM: ru_maxrss would count
the pages of the bench it was forked from)."""
SAMPLE_S = 0.02
"""How often the process tree's RSS is read."""


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


def process_kb(pid: int, field: str = "VmRSS") -> int:
    """A memory field of a process's /proc status in KiB (VmRSS: resident now, VmHWM: its peak), 0 once gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith(f"{field}:")), 0)


def children(pid: int) -> list[int]:
    """The children of a process (of each of its threads), [] once it is gone."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found = []
    for task in tasks:
        try:
            found += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            continue
    return found


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, their children, ...)."""
    below = children(pid)
    return below + [d for child in below for d in descendants(child)]


def command_line(pid: int) -> bytes:
    """A process's command line, b"" once it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def own_memory(pid: int, parent_command: bytes) -> bool:
    """Whether a child has its own memory: a child spawned by vfork shares its parent's (and shows its parent's
    RSS and command line) until it calls exec."""
    return command_line(pid) not in (parent_command, b"")


@dataclass
class TreeMemory:
    """What the sampler saw (KiB): the largest sum of RSS over the tree, the largest VmHWM of a child, and the
    leaderboard's RSS when it passed the bound (0: it did not)."""

    tree_peak: int = 0
    child_peak: int = 0
    exceeded: int = 0


def watch_memory(process: subprocess.Popen, max_rss_kb: int | None, seen: TreeMemory) -> None:
    """Sample the RSS of `process` and its descendants every `SAMPLE_S` into `seen`; kill `process` (its process
    group) when its own RSS passes `max_rss_kb`."""
    parent_command = command_line(process.pid)
    while process.poll() is None:
        below = [pid for pid in descendants(process.pid) if own_memory(pid, parent_command)]
        own = process_kb(process.pid)
        seen.tree_peak = max(seen.tree_peak, own + sum(process_kb(pid) for pid in below))
        seen.child_peak = max([seen.child_peak, *(process_kb(pid, "VmHWM") for pid in below)])
        if max_rss_kb and own > max_rss_kb:
            seen.exceeded = own
            os.killpg(process.pid, signal.SIGKILL)
            return
        time.sleep(SAMPLE_S)


def largest_png(folder: Path) -> tuple[int, int]:
    """(width, height) in pixels of the largest PNG (by area) in `folder`, (0, 0) if none."""
    sizes = []
    for path in folder.glob("*.png"):
        with Image.open(path) as image:
            sizes.append(image.size)
    return max(sizes, key=lambda s: s[0] * s[1], default=(0, 0))


def run_once(argv: list[str], out: Path, blas_threads: int, max_rss_mb: int | None) -> dict:
    """One timed leaderboard process; its CPU, the peak RSS of it, of its Gap fit child and of both together,
    and its figures."""
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
    seen = TreeMemory()
    sampler = threading.Thread(target=watch_memory, args=(process, max_rss_mb and max_rss_mb * 1024, seen))
    sampler.start()
    _, err = process.communicate()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    sampler.join()
    if seen.exceeded:
        raise SystemExit(f"leaderboard killed: RSS {seen.exceeded / 1024:.0f} MB passed --max-rss-mb {max_rss_mb}")
    if process.returncode != 0:
        raise SystemExit(f"leaderboard failed (exit {process.returncode}):\n{err[-3000:]}")
    own = int(next(line for line in err.splitlines() if line.startswith("BENCH_RSS_KB ")).split()[1])
    width, height = largest_png(out)
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
        "peak_rss_mb": round(own / 1024),
        "child_peak_rss_mb": round(seen.child_peak / 1024),
        "tree_peak_rss_mb": round(seen.tree_peak / 1024),
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
            f"wall {r['wall_s']} s, peak RSS {r['peak_rss_mb']} MB (Gap fit child {r['child_peak_rss_mb']} MB, "
            f"both together {r['tree_peak_rss_mb']} MB), "
            f"{r['figures']} figures, largest PNG {r['largest_png_px'][0]}x{r['largest_png_px'][1]} px"
        )
    print(f"{os.cpu_count()} CPUs, load average before {load:.2f}")
    if args.json:
        print(json.dumps({"runs": args.runs, **results[-1]}))


if __name__ == "__main__":
    main_bench()
