"""``lmms-eval-unify``: data generation, the offline demo, task listing and leaderboards."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from lmms_eval_unify import env_vars
from lmms_eval_unify.benchmarks import BENCHMARKS, DEMO_BENCHMARK, has_part, part
from lmms_eval_unify.console import tolerate_any_locale
from lmms_eval_unify.run.paths import tasks_path
from lmms_eval_unify.writes import EXIT_REFUSED, WriteRefused

DEMO_MODELS = ("unify_oracle", "unify_random")
Main = Callable[[list[str]], int]
"""A subcommand's own ``main(argv)``: it parses its arguments and returns the exit status."""


def _leaderboard() -> Main:
    from lmms_eval_unify.reports import leaderboard

    return leaderboard.main


def _score() -> Main:
    from lmms_eval_unify.commands import score

    return score.main


def _gallery() -> Main:
    from lmms_eval_unify.reports import gallery

    return gallery.main


def _exports() -> Main:
    from lmms_eval_unify.reports import exports

    return exports.main


def _check_adapter() -> Main:
    from lmms_eval_unify.commands import check_adapter

    return check_adapter.main


def _judges() -> Main:
    from lmms_eval_unify.commands import judge

    return judge.main


def _environments() -> Main:
    from lmms_eval_unify.generation import environments

    return environments.main


def _doctor() -> Main:
    from lmms_eval_unify.integration import doctor

    return doctor.main


DELEGATED: dict[str, tuple[Callable[[], Main], str]] = {
    "leaderboard": (_leaderboard, "rebuild the papers' tables from saved runs"),
    "score": (_score, "score saved runs again without the model"),
    "gallery": (_gallery, "HTML gallery of runs' samples"),
    "export": (_exports, "write runs in a benchmark's released exchange format"),
    "check-adapter": (_check_adapter, "smoke-test an adapter: one sample of each protocol it claims"),
    "judge": (
        _judges,
        "`judge serve`: the reference judges on loopback, for offline trials; `judge estimate`: a run's judge calls",
    ),
    "env": (
        _environments,
        "`env create MODEL`: the environment a model's official code runs in (show_o2, bagel, omnigen2)",
    ),
    "doctor": (_doctor, "check that lmms-eval can load every model plugin, ours included; name the broken ones"),
}
"""Subcommands with their own argument parser: (a function returning its ``main``, its help)."""


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


def _benchmark_data(name: str) -> ModuleType:
    if name not in BENCHMARKS:
        raise SystemExit(f"unknown benchmark {name!r}; choose from {', '.join(BENCHMARKS)}")
    if not has_part(name, "offline.data"):
        raise SystemExit(f"{name} has no data tools yet")
    return part(name, "offline.data")


def _cmd_data_generate(args: argparse.Namespace) -> int:
    """One line per benchmark: a progress bar while it is written (when stderr is a terminal), then a summary.
    Every file goes through the write gate, confined to ``<out>/<benchmark>``; a refusal stops with exit 2."""
    import datasets
    from tqdm import tqdm

    from lmms_eval_unify.run.provenance import generated_source, mark_local_data

    out = Path(args.out).resolve()
    modules = {name: _benchmark_data(name) for name in args.benchmarks or [DEMO_BENCHMARK]}
    library_bars = not datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()  # one bar per parquet file otherwise
    try:
        for name, module in modules.items():
            started = time.perf_counter()
            with tqdm(desc=name, unit=" files", leave=False, disable=None) as bar:
                try:
                    paths = module.generate(out, args.n, args.seed, on_file=lambda path: bar.update())
                    mark_local_data(paths, generated_source(args.seed, args.n), out / name)
                except WriteRefused as refused:  # a symlink or special file planted in the data folder
                    print(f"error: {name}: {refused}", file=sys.stderr)
                    return EXIT_REFUSED
            seconds = time.perf_counter() - started
            print(f"{name}: {len(paths)} files, {args.n} items per subtask, in {out / name} ({seconds:.1f} s)")
    finally:
        if library_bars:
            datasets.enable_progress_bars()
    print(f"use it with: export LMMS_EVAL_UNIFY_DATA_DIR={out}")
    return 0


def _cmd_data_prepare(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        raise SystemExit(f"usage: lmms-eval-unify data prepare {{{','.join(BENCHMARKS)}}} ...")
    if argv[0] not in BENCHMARKS:
        raise SystemExit(f"unknown benchmark {argv[0]!r}; choose from {', '.join(BENCHMARKS)}")
    if not has_part(argv[0], "offline.prepare"):
        raise SystemExit(f"{argv[0]} has no published data to prepare")
    return part(argv[0], "offline.prepare").prepare_main(argv[1:])


def _positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _cmd_demo(args: argparse.Namespace) -> int:
    demo = part(DEMO_BENCHMARK, "demo")
    return demo.run(Path(args.out), args.n, args.seed, args.models.split(","), args.random_seeds)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lmms-eval-unify", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("tasks-path", help="print the folder of our task YAMLs (for --include_path)")
    commands.add_parser("tasks", help="list the tasks and groups this plugin defines")
    data = commands.add_parser("data", help="dataset tools").add_subparsers(dest="data_command", required=True)
    generate = data.add_parser("generate", help="write offline sets in the local-data layout")
    generate.add_argument("benchmarks", nargs="*", help=f"any of {', '.join(BENCHMARKS)} (default {DEMO_BENCHMARK})")
    generate.add_argument("--out", required=True, help="data folder (then set LMMS_EVAL_UNIFY_DATA_DIR to it)")
    generate.add_argument("--n", type=_positive_int, default=100, help="items per subtask (default %(default)s)")
    generate.add_argument("--seed", type=int, default=0)
    data.add_parser("prepare", help="convert a benchmark's published data (see --help of each)", add_help=False)
    demo = commands.add_parser("demo", help="offline end-to-end run: generated data, real lmms-eval, baselines")
    demo.add_argument("--out", default="out/demo")
    demo.add_argument("--n", type=int, default=30, help="items per task")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--models", default=",".join(DEMO_MODELS))
    demo.add_argument(
        "--random-seeds",
        type=_positive_int,
        default=5,
        help="unify_random runs with seeds 0..K-1 (K >= 1), averaged: one run on a few dozen items is a noisy draw",
    )
    for name, (_, help_text) in DELEGATED.items():
        commands.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run a subcommand. Output that the terminal's encoding cannot show is escaped (``console``); a malformed
    ``LMMS_EVAL_UNIFY_*`` variable stops every subcommand before it starts (``env_vars``, exit 2)."""
    tolerate_any_locale()
    malformed = env_vars.malformed()
    if malformed:
        print(env_vars.render(malformed), file=sys.stderr)
        return env_vars.EXIT_MALFORMED
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in DELEGATED:
        return DELEGATED[argv[0]][0]()(argv[1:])
    if argv[:2] == ["data", "prepare"]:
        return _cmd_data_prepare(argv[2:])
    args = build_parser().parse_args(argv)
    handlers = {"tasks-path": _cmd_tasks_path, "tasks": _cmd_tasks, "demo": _cmd_demo}
    if args.command == "data":
        return _cmd_data_generate(args)
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
