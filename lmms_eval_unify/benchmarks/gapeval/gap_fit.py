"""The leaderboard's Gap fit child: joint proportions in, the Gap values and the fit's caveats out (JSON).

``lmms-eval-unify leaderboard`` runs :data:`GAP_FIT_CODE` in a fresh interpreter, so torch is imported there and
never in the leaderboard process (which imports this module for its names: the fit, ``gap_score``, is imported
when a fit runs). The child imports only this module, GapEval's names (``paper``) and the fit (torch, pyro,
numpy): nothing of the reports, the judges or lmms-eval (a test reads the child's imports).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, NamedTuple

from lmms_eval_unify.benchmarks.gapeval import paper

if TYPE_CHECKING:  # the fit (torch) is imported only when a fit runs: in the child interpreter
    from lmms_eval_unify.benchmarks.gapeval.gap_score import GapScoreResult, ModelGap

GAP_FIT_CODE = (
    "import os, sys; from lmms_eval_unify.benchmarks.gapeval.gap_fit import write_report; "
    "write_report(sys.stdin, sys.stdout, sys.argv[1]); sys.stdout.flush(); sys.stderr.flush(); os._exit(0)"
)
"""The child interpreter's program: :func:`write_report` of the variant (argv), then ``os._exit``: the teardown of
an interpreter that imported torch raises its RSS by ~0.1 GB (its peak) and has nothing to release."""
NOT_CONVERGED = "Gap fit not converged"
"""How the caveat of a Gap cell whose fit did not converge begins."""


class GapFit(NamedTuple):
    """What the child's fit returns: per model the Gap values (`fit_gaps`) and, for each model whose fit did not
    converge, why (the caveat its Gap cells carry)."""

    values: dict[str, dict[str, float]]
    not_converged: dict[str, str]


def _fit(joint: Mapping[str, Mapping[str, Sequence[float]]], variant: str) -> GapScoreResult:
    """`fit_gap_scores` with its non-convergence warning silenced: the leaderboard reports it per cell."""
    from lmms_eval_unify.benchmarks.gapeval.gap_score import fit_gap_scores

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_gap_scores(joint, variant=variant)  # type: ignore[arg-type]


def gap_values(result: GapScoreResult) -> dict[str, dict[str, float]]:
    """Gap Scores (0-100, lower is better) per model and category, the overall Gap, and per cell whether its fit
    converged (`<category> Gap converged`: 1.0 or 0.0)."""
    return {
        label: {
            **{f"{c} {paper.GAP}": cell.gap for c, cell in fit.categories.items()},
            **{f"{c} {paper.GAP_CONVERGED}": float(cell.converged) for c, cell in fit.categories.items()},
            paper.OVERALL_GAP: fit.overall,
        }
        for label, fit in result.models.items()
    }


def fit_gaps(
    joint: Mapping[str, Mapping[str, tuple[float, ...]]], variant: str = "official"
) -> dict[str, dict[str, float]]:
    """:func:`gap_values` of the MIRT fit in `gap_score` (`variant`)."""
    return gap_values(_fit(joint, variant))


def not_converged_caveat(fit: ModelGap, stable: ModelGap | None) -> str:
    """The caveat of a model's Gap cells when its fit did not converge: the variant, its steps and the test
    (`FitStatus.describe`), and how far `stable`, the converged fit of the same rows, lies from it."""
    line = f"{NOT_CONVERGED}: {fit.fit.describe()}"
    if stable is None:
        return f"{line} (docs/gap_score.md)"
    apart = max(abs(cell.gap - stable.categories[c].gap) for c, cell in fit.categories.items())
    state = "the converged stable fit" if stable.converged else "the stable fit, which did not converge either,"
    return f"{line}; {state} differs by up to {apart:.1f} points on these cells (docs/gap_score.md)"


def fit_gap_report(joint: Mapping[str, Mapping[str, Sequence[float]]], variant: str = "official") -> dict:
    """The child's answer (JSON-ready `GapFit`): :func:`gap_values` and, per model whose fit did not converge,
    :func:`not_converged_caveat`; for `official` such models are also fitted with `stable` to say how far off
    they are."""
    result = _fit(joint, variant)
    failed = result.not_converged()
    stable = _fit({m: joint[m] for m in failed}, "stable").models if failed and variant == "official" else {}
    caveats = {m: not_converged_caveat(result.models[m], stable.get(m)) for m in failed}
    return GapFit(gap_values(result), caveats)._asdict()


def write_report(inputs: IO[str], out: IO[str], variant: str) -> None:
    """:func:`fit_gap_report` of the joint proportions read from `inputs` (JSON), written to `out` (JSON)."""
    json.dump(fit_gap_report(json.load(inputs), variant), out)
