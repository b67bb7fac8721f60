"""What a run records about the software that made it.

A run stamps :func:`run_provenance` into its results file under :data:`PROVENANCE_KEY`: the version of
lmms-eval-unify and the commit of the git checkout it runs from; ``lmms-eval-unify leaderboard`` writes the same
of itself into every ``manifest.json``, beside each row's full recipe.
"""

from __future__ import annotations

from functools import cache
from importlib import metadata
from pathlib import Path

from lmms_eval_unify.metrics.switches import tiny_metrics_on

PACKAGE = "lmms-eval-unify"
PROVENANCE_KEY = "lmms_eval_unify"
"""The results-file key under which a run records :func:`run_provenance`."""


def run_provenance() -> dict[str, object]:
    """``{"version", "commit", "tiny_metrics"}``: the running lmms-eval-unify (the commit is the git checkout's
    HEAD it runs from, '' for an installed wheel) and whether the tiny-metrics switch is on."""
    return {**software(), "tiny_metrics": tiny_metrics_on()}


@cache
def software() -> dict[str, str]:
    """``{"version", "commit"}`` of the running lmms-eval-unify."""
    try:
        version = metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        version = ""
    return {"version": version, "commit": checkout_commit(Path(__file__).resolve().parents[2] / ".git")}


def checkout_commit(git_dir: Path) -> str:
    """The commit HEAD names in a git directory, read from its files (no git process); '' when unreadable."""
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref: "):
            return head
        ref = head.removeprefix("ref: ")
        loose = git_dir / ref
        if loose.is_file():
            return loose.read_text(encoding="utf-8").strip()
        for line in (git_dir / "packed-refs").read_text(encoding="utf-8").splitlines():
            commit, _, name = line.partition(" ")
            if name == ref:
                return commit
    except (OSError, UnicodeDecodeError):
        pass
    return ""
