"""The leaderboard's Gap fit child (`gap_fit`): its report, and what the child interpreter imports."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from lmms_eval_unify.benchmarks.gapeval import paper as ge
from lmms_eval_unify.benchmarks.gapeval.gap_fit import GAP_FIT_CODE, GapFit, fit_gap_report

NOT_FOR_THE_FIT = (
    "lmms_eval",
    "transformers",
    "diffusers",
    "matplotlib",
    "PIL",
    "pandas",
    "pyarrow",
    "httpx",
    "yaml",
    "lmms_eval_unify.reports",
    "lmms_eval_unify.judges",
    "lmms_eval_unify.integration",
    "lmms_eval_unify.metrics",
)
"""Packages (and their submodules) the Gap fit needs none of: the child imported the reports, the judges' HTTP
client, PIL and yaml through the leaderboard module (docs/benchmarks.md, "The Gap fit child")."""
NOT_FOR_THE_FIT_PARTS = tuple(f"{name}." for name in NOT_FOR_THE_FIT)
JOINT = {"m": {c: (0.3, 0.3, 0.1, 0.3) for c in ge.CATEGORIES}, "n": {c: (0.5, 0.2, 0.2, 0.1) for c in ge.CATEGORIES}}


def imported_modules(importtime: str) -> set[str]:
    """The modules named by ``python -X importtime``'s lines (every module the interpreter imported)."""
    return set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)$", importtime, re.MULTILINE))


@pytest.mark.heavy  # one official and one stable fit of one model
def test_the_fit_report_says_why_a_fit_did_not_converge_and_how_far_the_stable_fit_lies():
    joint = {"m": JOINT["m"]}
    official = GapFit(**fit_gap_report(joint, "official"))
    (why,) = official.not_converged.values()
    assert why.startswith("Gap fit not converged: official fit did not converge after its fixed 2000 AdamW steps")
    assert "converged = full Newton step < 1e-05 in every parameter" in why
    assert "the converged stable fit differs by up to " in why
    assert {official.values["m"][f"{c} {ge.GAP_CONVERGED}"] for c in ge.CATEGORIES} == {0.0}
    stable = GapFit(**fit_gap_report(joint, "stable"))
    assert stable.not_converged == {} and stable.values["m"][f"reasoning {ge.GAP_CONVERGED}"] == 1.0


@pytest.mark.heavy  # a child importing torch, and the same fit in this process
@pytest.mark.subprocess
def test_the_child_imports_only_the_fit_and_answers_what_the_fit_gives_here():
    child = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", GAP_FIT_CODE, "official"],
        input=json.dumps(JOINT),
        capture_output=True,
        text=True,
        check=True,
    )
    modules = imported_modules(child.stderr)
    assert {"torch", "pyro", "lmms_eval_unify.benchmarks.gapeval.gap_score"} <= modules
    assert {m for m in modules if m in NOT_FOR_THE_FIT or m.startswith(NOT_FOR_THE_FIT_PARTS)} == set()
    assert json.loads(child.stdout) == json.loads(json.dumps(fit_gap_report(JOINT, "official")))  # bit for bit
