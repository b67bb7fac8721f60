"""``lmms-eval-unify``: data generation, the offline demo, task listing and leaderboards."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from lmms_eval_unify.benchmarks import BENCHMARKS
from lmms_eval_unify.integration.plugin import tasks_path

DEMO_MODELS = ("unify_oracle", "unify_random")
DEMO_TASKS = {"uni_mmmu_maze": "maze", "uni_mmmu_sliding": "sliding"}
DELEGATED = {
    "leaderboard": ("lmms_eval_unify.reports.leaderboard", "rebuild the papers' tables from saved runs"),
    "score": ("lmms_eval_unify.integration.rescore", "score saved runs again without the model"),
    "gallery": ("lmms_eval_unify.reports.gallery", "HTML gallery of runs' samples"),
    "export": ("lmms_eval_unify.reports.exports", "write runs in a benchmark's released exchange format"),
    "check-adapter": (
        "lmms_eval_unify.generation.check_adapter",
        "smoke-test an adapter: one sample of each protocol it claims",
    ),
}
"""Subcommands with their own argument parser: ``module.main(argv)``."""
DEMO_BAND_DRAWS = 1000
"""Simulated draws behind the demo's 95% band of the random baseline."""
PUZZLE_METRICS = ("text_sample_acc", "text_step_acc", "img_sample_acc", "img_step_acc")


def _cmd_tasks_path(args: argparse.Namespace) -> int:
    print(tasks_path())
    return 0


def _cmd_tasks(args: argparse.Namespace) -> int:
    from lmms_eval.tasks import TaskManager

    manager = TaskManager("WARNING", include_path=str(tasks_path()), include_defaults=False)
    for name in manager.all_tasks:
        kind = manager.task_index[name]["type"]
        print(f"{name}\t{'group' if kind == 'group' else 'task'}")
    return 0


def _benchmark_data(name: str):
    if name not in BENCHMARKS:
        raise SystemExit(f"unknown benchmark {name!r}; choose from {', '.join(BENCHMARKS)}")
    try:
        return importlib.import_module(f"lmms_eval_unify.benchmarks.{name}.offline.data")
    except ModuleNotFoundError as exc:
        raise SystemExit(f"{name} has no data tools yet ({exc})") from exc


def _cmd_data_generate(args: argparse.Namespace) -> int:
    for name in args.benchmarks or ["uni_mmmu"]:
        for path in _benchmark_data(name).generate(args.out, args.n, args.seed):
            print(path)
    print(f"use it with: export LMMS_EVAL_UNIFY_DATA_DIR={Path(args.out).resolve()}")
    return 0


def _cmd_data_prepare(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        raise SystemExit(f"usage: lmms-eval-unify data prepare {{{','.join(BENCHMARKS)}}} ...")
    module = _benchmark_data(argv[0])
    if not hasattr(module, "prepare_main"):
        raise SystemExit(f"{argv[0]} has no published data to prepare")
    return module.prepare_main(argv[1:])


def run_lmms_eval(model: str, tasks: str, output_path: Path, data_dir: Path, extra: list[str] = ()) -> Path:
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


def _percent_cell(value: float | tuple[float, float] | str) -> str:
    """A score as a percentage, a (low, high) band as ``low–high``."""
    if isinstance(value, tuple):
        return "–".join(f"{100 * v:.1f}" for v in value)
    return f"{100 * value:.1f}" if isinstance(value, float) else str(value)


def _cmd_demo(args: argparse.Namespace) -> int:
    from lmms_eval_unify.puzzles import DOMAINS
    from lmms_eval_unify.puzzles.dataset import (
        random_baseline_band,
        random_baseline_expectation,
        write_uni_mmmu_puzzles,
    )

    out = Path(args.out).resolve()
    data_dir = out / "data"
    write_uni_mmmu_puzzles(data_dir, args.n, args.n, args.seed)
    random_seeds = range(args.random_seeds)
    rows = []
    for model in args.models.split(","):
        seeds = random_seeds if model == "unify_random" else [None]
        per_seed, started = [], time.perf_counter()
        for seed in seeds:
            folder = out / "runs" / (model if seed is None else f"{model}-seed{seed}")
            extra = [] if seed is None else ["--model_args", f"seed={seed}"]
            results = json.loads(
                run_lmms_eval(model, ",".join(DEMO_TASKS), folder, data_dir, extra).read_text()
            )["results"]
            per_seed.append(results)
        wall = (time.perf_counter() - started) / len(seeds)
        label = model if len(seeds) == 1 else f"{model} (mean of seeds {seeds[0]}–{seeds[-1]})"
        for task in DEMO_TASKS:
            values = [statistics.fmean(r[task][f"{m},none"] for r in per_seed) for m in PUZZLE_METRICS]
            invalid = sum(r[task]["invalid_outputs,none"] for r in per_seed)
            rows.append((label, task, values, invalid, wall))
    for task, domain in DEMO_TASKS.items():
        parquet = data_dir / "uni_mmmu" / domain / "test.parquet"
        expected = random_baseline_expectation(DOMAINS[domain], parquet)
        rows.append(("random (analytic)", task, [expected[m] for m in PUZZLE_METRICS], "", None))
        band = random_baseline_band(DOMAINS[domain], parquet, DEMO_BAND_DRAWS, runs=max(1, len(random_seeds)))
        rows.append(("random 95% band of that mean", task, [band[m] for m in PUZZLE_METRICS], "", None))
    print("\n| model | task | " + " | ".join(PUZZLE_METRICS) + " | invalid | wall s per run |")
    print("|---|---|" + "---:|" * (len(PUZZLE_METRICS) + 2))
    for model, task, values, invalid, wall in rows:
        cells = " | ".join(_percent_cell(v) for v in values)
        print(f"| {model} | {task} | {cells} | {invalid} | {'' if wall is None else f'{wall:.0f}'} |")
    print(
        f"\nscores are percentages; the band is where {DEMO_BAND_DRAWS} simulated means of "
        f"{len(random_seeds)} unify_random runs fall (95%); outputs and images under {out}"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lmms-eval-unify", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("tasks-path", help="print the folder of our task YAMLs (for --include_path)")
    commands.add_parser("tasks", help="list the tasks and groups this plugin defines")
    data = commands.add_parser("data", help="dataset tools").add_subparsers(
        dest="data_command", required=True
    )
    generate = data.add_parser("generate", help="write offline sets in the local-data layout")
    generate.add_argument("benchmarks", nargs="*", help=f"any of {', '.join(BENCHMARKS)} (default uni_mmmu)")
    generate.add_argument(
        "--out", required=True, help="data folder (then set LMMS_EVAL_UNIFY_DATA_DIR to it)"
    )
    generate.add_argument("--n", type=int, default=100, help="items per subtask")
    generate.add_argument("--seed", type=int, default=0)
    data.add_parser(
        "prepare", help="convert a benchmark's published data (see --help of each)", add_help=False
    )
    demo = commands.add_parser(
        "demo", help="offline end-to-end run: generated data, real lmms-eval, baselines"
    )
    demo.add_argument("--out", default="out/demo")
    demo.add_argument("--n", type=int, default=30, help="items per task")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--models", default=",".join(DEMO_MODELS))
    demo.add_argument(
        "--random-seeds",
        type=int,
        default=5,
        help="unify_random runs with seeds 0..K-1, averaged: one run on a few dozen items is a noisy draw",
    )
    for name, (_, help_text) in DELEGATED.items():
        commands.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in DELEGATED:
        return importlib.import_module(DELEGATED[argv[0]][0]).main(argv[1:])
    if argv[:2] == ["data", "prepare"]:
        return _cmd_data_prepare(argv[2:])
    args = build_parser().parse_args(argv)
    handlers = {"tasks-path": _cmd_tasks_path, "tasks": _cmd_tasks, "demo": _cmd_demo}
    if args.command == "data":
        return _cmd_data_generate(args)
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
