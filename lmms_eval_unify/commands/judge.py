"""``lmms-eval-unify judge``: ``serve`` the reference judges on loopback (generated offline data only, NOT a real
judge), or ``estimate`` the judge calls and tokens of a run before anything is sent (docs/judges.md)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from lmms_eval_unify.judges import estimate, reference
from lmms_eval_unify.judges.estimate import TaskEstimate, task_estimate


def judged_tasks(names: Sequence[str]) -> tuple[list[Any], list[str]]:
    """The judged leaf tasks among ``names`` (tasks or groups of this plugin, expanded in order), built without
    their judge check, and the names of the leaf tasks that are not judged. ``ValueError`` names unknown tasks."""
    from lmms_eval.tasks import TaskManager

    from lmms_eval_unify.integration.preflight import leaf_task_configs
    from lmms_eval_unify.integration.task import judge_check_skipped
    from lmms_eval_unify.run.paths import tasks_path

    manager = TaskManager("WARNING", include_path=str(tasks_path()), include_defaults=False)
    unknown = [name for name in names if name not in manager.all_tasks]
    if unknown:
        raise ValueError(f"unknown tasks or groups {unknown}; `lmms-eval-unify tasks` lists them")
    configs = leaf_task_configs(manager, names)
    judged = [name for name, config in configs.items() if (config.get("metadata") or {}).get("judged")]
    with judge_check_skipped():
        tasks = manager.load_task_or_group(judged) if judged else {}
    return [tasks[name] for name in judged], [name for name in configs if name not in judged]


def estimate_tasks(names: Sequence[str], limit: float | None = None) -> tuple[list[TaskEstimate], list[str]]:
    """The estimate of every judged leaf task among ``names`` (in their order) and the leaf tasks without a judge."""
    tasks, not_judged = judged_tasks(names)
    return [task_estimate(task, limit) for task in tasks], not_judged


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lmms-eval-unify judge", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="start the reference judges and print what to export")
    serve.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    planned = commands.add_parser(
        "estimate", help="judge calls and estimated tokens per task of a run, computed before any request is sent"
    )
    planned.add_argument("--tasks", required=True, help="comma-separated tasks or groups, as lmms-eval's --tasks")
    planned.add_argument(
        "--limit", type=float, default=None, help="as lmms-eval's --limit: samples per task, or a fraction below 1"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``judge serve`` or ``judge estimate``; ``estimate`` prints its table to stdout."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        return reference.serve_until_interrupted(args.port)
    try:
        estimates, not_judged = estimate_tasks([n for n in args.tasks.split(",") if n], args.limit)
    except ValueError as exc:
        parser.error(str(exc))
    print(estimate.report(estimates, not_judged))
    return 0
