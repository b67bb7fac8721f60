"""``lmms-eval-unify judge``: ``serve`` the reference judges on loopback (generated offline data only, NOT a real
judge), or ``estimate`` the judge calls and tokens of a run before anything is sent (docs/judges.md)."""

from __future__ import annotations

import argparse

from lmms_eval_unify.judges import estimate, reference


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
        estimates, not_judged = estimate.estimate_tasks([n for n in args.tasks.split(",") if n], args.limit)
    except ValueError as exc:
        parser.error(str(exc))
    print(estimate.report(estimates, not_judged))
    return 0
