"""``lmms-eval-unify demo``: generated Uni-MMMU mazes and sliding puzzles, the baselines through the real
``lmms-eval`` CLI, and the random player's analytic chance level and seed-to-seed band."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.dataset import random_baseline_band, random_baseline_expectation, write_puzzles
from lmms_eval_unify.puzzles.scoring import METRICS
from lmms_eval_unify.run.provenance import generated_source, mark_local_data

DEMO_TASKS = {"uni_mmmu_maze": "maze", "uni_mmmu_sliding": "sliding"}
"""Task -> puzzle of the demo."""
DEMO_BAND_DRAWS = 1000
"""Simulated draws behind the demo's 95% band of the random baseline."""
RANDOM_PLAYER = "unify_random"
"""The baseline run once per seed and compared with its band."""
OUTSIDE_BAND = "†"
"""Marks a mean of the random player that lies outside the band printed for it."""

Band = tuple[float, float]


@dataclass
class DemoRow:
    """One table row: a model (or the random baseline's analytic mean or band) on a task, its value per metric
    (a band per metric on the band row), its invalid outputs and wall time per run, and whether its values are
    means of the random player, which the table checks against the band."""

    model: str
    task: str
    values: Sequence[float | Band]
    invalid: int | str = ""
    wall: float | None = None
    random_mean: bool = False


def run_lmms_eval(model: str, tasks: str, output_path: Path, data_dir: Path, extra: Sequence[str] = ()) -> Path:
    """Run the real ``lmms-eval`` CLI in a subprocess and return its results JSON."""
    env = {
        **os.environ,
        "LMMS_EVAL_UNIFY_DATA_DIR": str(data_dir),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    command = [sys.executable, "-m", "lmms_eval", "--model", model, "--tasks", tasks]
    command += ["--output_path", str(output_path), "--log_samples", "--verbosity", "WARNING", *extra]
    subprocess.run(command, env=env, check=True)
    results = sorted(output_path.rglob("*_results.json"), key=lambda p: p.stat().st_mtime)
    if not results:
        raise FileNotFoundError(f"lmms-eval wrote no results JSON under {output_path}")
    return results[-1]


def _percent_cell(value: float | Band | str) -> str:
    """A score as a percentage, a (low, high) band as ``low–high``."""
    if isinstance(value, tuple):
        return "–".join(f"{100 * v:.1f}" for v in value)
    return f"{100 * value:.1f}" if isinstance(value, float) else str(value)


def table(rows: Sequence[DemoRow], bands: Mapping[str, Mapping[str, Band]], runs: int, out: Path) -> list[str]:
    """The demo's Markdown table and the notes under it (`out`: where the outputs are). A random-player mean
    outside its task's band (the band of the mean of `runs` seeded runs) is marked :data:`OUTSIDE_BAND`, and a
    note says what that means."""
    lines = ["", "| model | task | " + " | ".join(METRICS) + " | invalid | wall s per run |"]
    lines.append("|---|---|" + "---:|" * (len(METRICS) + 2))
    marked = False
    for row in rows:
        cells = []
        for metric, value in zip(METRICS, row.values, strict=True):
            low, high = bands[row.task][metric]
            outside = row.random_mean and isinstance(value, float) and not low <= value <= high
            marked |= outside
            cells.append(_percent_cell(value) + (OUTSIDE_BAND if outside else ""))
        wall = "" if row.wall is None else f"{row.wall:.0f}"
        lines.append(f"| {row.model} | {row.task} | {' | '.join(cells)} | {row.invalid} | {wall} |")
    lines.append(
        f"\nscores are percentages; the band is where {DEMO_BAND_DRAWS} simulated means of "
        f"{runs} {RANDOM_PLAYER} runs fall (95%); outputs and images under {out}"
    )
    if marked:
        lines.append(
            f"{OUTSIDE_BAND} = a random-player mean outside the band printed for it: a measured mean there is a "
            "draw in the band's 5% tails; the analytic mean there says the simulated means are too lumpy (few "
            f"items or seeds: most draws score the same few values) for a 95% band to hold it; raise --n or "
            "--random-seeds"
        )
    return lines


def run(out: Path, n: int, seed: int, models: Sequence[str], random_seeds: int) -> int:
    """Generate ``n`` items per puzzle under ``out/data``, run each model (``unify_random`` once per seed
    0..``random_seeds``-1, at least one, averaged) and print the table with the random baseline's chance
    level and band."""
    if random_seeds < 1:
        raise ValueError(f"random_seeds must be at least 1, got {random_seeds}")
    out = out.resolve()
    data_dir = out / "data"
    mark_local_data(write_puzzles(data_dir / "uni_mmmu", n, n, seed), generated_source(seed, n), data_dir / "uni_mmmu")
    rows = []
    for model in models:
        seeds = range(random_seeds) if model == RANDOM_PLAYER else [None]
        per_seed, started = [], time.perf_counter()
        for model_seed in seeds:
            folder = out / "runs" / (model if model_seed is None else f"{model}-seed{model_seed}")
            extra = [] if model_seed is None else ["--model_args", f"seed={model_seed}"]
            results_file = run_lmms_eval(model, ",".join(DEMO_TASKS), folder, data_dir, extra)
            results = json.loads(results_file.read_text(encoding="utf-8"))["results"]
            per_seed.append(results)
        wall = (time.perf_counter() - started) / len(seeds)
        label = model if len(seeds) == 1 else f"{model} (mean of seeds {seeds[0]}–{seeds[-1]})"
        for task in DEMO_TASKS:
            values = [statistics.fmean(r[task][f"{m},none"] for r in per_seed) for m in METRICS]
            invalid = sum(r[task]["invalid_outputs,none"] for r in per_seed)
            rows.append(DemoRow(label, task, values, invalid, wall, random_mean=model == RANDOM_PLAYER))
    bands = {}
    for task, domain in DEMO_TASKS.items():
        parquet = data_dir / "uni_mmmu" / domain / "test.parquet"
        expected = random_baseline_expectation(DOMAINS[domain], parquet)
        bands[task] = random_baseline_band(DOMAINS[domain], parquet, DEMO_BAND_DRAWS, runs=random_seeds)
        rows.append(DemoRow("random (analytic)", task, [expected[m] for m in METRICS], random_mean=True))
        rows.append(DemoRow("random 95% band of that mean", task, [bands[task][m] for m in METRICS]))
    print("\n".join(table(rows, bands, random_seeds, out)))
    return 0
