"""GapEval: our export fed unchanged to the released ``evaluate.py``, per model and category, against the Gap
Score our leaderboard reports (``official`` fit).

Usage: ``python bench/gapeval_export_parity.py [--released PATH/evaluate.py] [--models 6] [--seed 0]`` where
PATH/evaluate.py is the Gap Score script of Lucky-Wang-Chenlong/GapEval (not part of this repo).

The bench writes lmms-eval runs of ``--models`` models over both directions of the four categories (the paper's
150 questions each; skills from near 0 to near 1, understanding and generation apart, some judge failures, which
count as wrong), exports them with ``lmms-eval-unify export`` and fits our Gap Score as the leaderboard does
(``score_models`` -> ``gap_inputs`` -> ``fit_gaps``, official variant). Without ``--released`` that is all (our
side: the export read back, its rows checked to sum to 1, our gaps printed). With ``--released`` the released
script's own ``main`` runs on the exported ``gapeval_joint.json`` (as ``python evaluate.py FILE`` does) and its
gaps (0-1, six decimals) are compared with ours (0-100) per model and category. Results: docs/fidelity/gapeval.md.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from lmms_eval_unify.benchmarks.gapeval import export as gapeval_export
from lmms_eval_unify.benchmarks.gapeval import paper as ge
from lmms_eval_unify.benchmarks.gapeval.gap_fit import fit_gaps
from lmms_eval_unify.benchmarks.gapeval.leaderboard import gap_inputs, score_models
from lmms_eval_unify.reports.boards import Options
from lmms_eval_unify.reports.exports import export
from lmms_eval_unify.reports.results_io import load_results
from lmms_eval_unify.testing.synthetic import bits, write_run

QUESTIONS = 150
TOLERANCES = (1e-3, 0.1, 1.0)
"""Differences (points, 0-100) counted: the script rounds its gaps (0-1) to six decimals; its AdamW fit is
unstable on cells with a small gap (docs/gap_score.md: float-order noise moves them by points)."""


def model_rows(rng: np.random.Generator) -> dict[str, list[dict]]:
    """Both directions of every category, each with its own success rate, and a few judge failures (wrong)."""
    tasks = {}
    for category in ge.CATEGORIES:
        for task in ge.task_names(category):
            rows = [{"correct": float(c)} for c in bits(rng, float(rng.uniform(0.02, 0.98)), QUESTIONS)]
            for k in rng.choice(QUESTIONS, size=int(rng.integers(0, 6)), replace=False):
                rows[k] = {"correct": 0.0, "invalid_outputs": "judge_failed"}
            tasks[task] = rows
    return tasks


def our_gaps(runs: Path) -> dict[str, dict[str, float]]:
    """model -> category -> Gap Score (0-100), as the leaderboard fits it."""
    scored = score_models(load_results([runs]), Options(replicates=0))
    fitted = fit_gaps(gap_inputs(scored), variant="official")
    return {model: {c: cells[f"{c} {ge.GAP}"] for c in ge.CATEGORIES} for model, cells in fitted.items()}


def released_gaps(script: Path, joint: Path) -> dict[str, list[float]]:
    """``python evaluate.py JOINT``: its ``main`` on the exported file; model -> gaps (0-1) in row order."""
    spec = importlib.util.spec_from_file_location("released_gapeval_evaluate", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    argv = sys.argv
    sys.argv = [str(script), str(joint)]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            module.main()
    finally:
        sys.argv = argv
    results = json.loads(joint.with_name(f"{joint.stem}_gapres.json").read_text())["results"]
    return {model: result["gaps"] for model, result in results.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--released", type=Path, help="the released evaluate.py (omit: our side only)")
    parser.add_argument("--models", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for m in range(args.models):
            write_run(work / "runs", f"model{m}", model_rows(rng))
        report = export([work / "runs"], "gapeval", work / "export", None)
        joint = work / "export" / "gapeval" / "gapeval_joint.json"
        rows = gapeval_export.read(joint.parent)
        order = json.loads((joint.parent / "gapeval_joint_rows.json").read_text())["row_order"]
        assert order == list(ge.CATEGORIES) and all(abs(sum(r) - 1) < 5e-3 for rs in rows.values() for r in rs)
        print(f"export: {len(rows)} models, {sum(report.failures.values())} failed samples (judge failures)")
        ours = our_gaps(work / "runs")
        on_export = fit_gaps({m: dict(zip(order, r, strict=True)) for m, r in rows.items()}, variant="official")
        same_input = all(on_export[m][f"{c} {ge.GAP}"] == ours[m][c] for m in ours for c in ge.CATEGORIES)
        print(f"our fit on the exported rows = the leaderboard's gaps: {same_input}")
        theirs = released_gaps(args.released, joint) if args.released else {}
        differences = []
        for model in sorted(ours):
            line = f"{model}: ours " + ", ".join(f"{c} {ours[model][c]:.4f}" for c in ge.CATEGORIES)
            if theirs:
                released = dict(zip(order, (100 * g for g in theirs[model]), strict=True))
                differences += [abs(ours[model][c] - released[c]) for c in ge.CATEGORIES]
                line += "; released " + ", ".join(f"{c} {released[c]:.4f}" for c in ge.CATEGORIES)
            print(line, flush=True)
        if theirs:
            within = ", ".join(f"{sum(d <= t for d in differences)} within {t}" for t in TOLERANCES)
            print(
                f"gapeval: {len(differences)} model-category gaps, {within} points; median difference "
                f"{np.median(differences):.4f}, largest {max(differences):.4f} (our official fit vs the released "
                "evaluate.py on our export)"
            )


if __name__ == "__main__":
    main()
