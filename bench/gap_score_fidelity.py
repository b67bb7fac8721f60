"""GapEval Gap Score fidelity: our ``official`` fit against the authors' ``evaluate.py``, and both under 1e-6 input
noise, as distributions over many cells rather than single figures.

Usage: ``python bench/gap_score_fidelity.py [--released PATH] [--tables 100] [--generator dirichlet|independent]
[--draws 3] [--table2-draws 20] [--sd 1e-6] [--seed 0] [--json]`` where PATH is ``evaluate.py`` of
Lucky-Wang-Chenlong/GapEval, or its folder (not part of this repo).

Two input sets: ``--tables`` random tables (one model's four category rows each) and the paper's Table 2 (11
models, joint proportions from Succ./Und./Gen. as in docs/gap_score.md). The random tables come from
``--generator``: ``dirichlet``, the seeded Dirichlet-multinomial counts of ``bench/gap_score_bench.py`` over
GapEval's category sizes (any joint shape), or ``independent``, 150 questions per category answered in each
direction independently at its own success rate drawn from U(0.02, 0.98), as ``bench/gapeval_export_parity.py``
draws its models. Per cell (model × category, 0–100 points) it measures

* ``|official − authors|`` on the clean input (only with ``--released``);
* ``|official − stable|``;
* the change under noise of ``official``, ``stable`` and (with ``--released``) the authors' script: each of
  ``--draws`` draws adds N(0, sd²) to every proportion (clipped at 0, renormalised); a cell's change is the largest
  ``|gap(noisy) − gap(clean)|`` over the draws, all three fits seeing the same noisy rows.

Each line gives the median, 90th percentile and maximum over the cells, and how many cells exceed 1 and 10
points; then how many fits converged. The authors' script runs model by model through its own
``evaluate_model`` with the defaults of its ``main`` (1000 pseudo-counts, 2000 AdamW steps, lr 0.05, seed 42,
CPU, one thread), about 1.5 s of CPU per model. Without ``--released`` its lines are not printed and the run
says what was not measured. Results: docs/gap_score.md ("Fidelity to the authors' script").
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType

import numpy as np
import torch
from gap_score_bench import synthetic_joint_counts

from lmms_eval_unify.benchmarks.gapeval.gap_score import GAPEVAL_CATEGORIES, Variant, fit_gap_scores

Joint = dict[str, dict[str, tuple[float, ...]]]
"""model -> category -> (p11, p10, p01, p00)."""
Gaps = dict[str, dict[str, float]]
"""model -> category -> gap (0-100)."""
TABLE2 = Path(__file__).resolve().parent.parent / "tests" / "paper_tables" / "gapeval_table2.csv"
THRESHOLDS = (1.0, 10.0)
"""Points: cells beyond each are counted."""


def proportions(counts: Mapping[str, Mapping[str, Sequence[float]]]) -> Joint:
    """Every row divided by its sum."""
    return {m: {c: tuple(float(x) / sum(row) for x in row) for c, row in cells.items()} for m, cells in counts.items()}


QUESTIONS = 150
"""Questions per category of an ``independent`` table (as bench/gapeval_export_parity.py)."""


def independent_counts(n_tables: int, seed: int) -> dict[str, dict[str, tuple[int, int, int, int]]]:
    """Per model and category, QUESTIONS questions answered as text and as an image independently, each direction
    at its own success rate from U(0.02, 0.98): the (n11, n10, n01, n00) counts."""
    rng = np.random.default_rng(seed)
    counts = {}
    for m in range(n_tables):
        cells = {}
        for category in GAPEVAL_CATEGORIES:
            text, image = (rng.random(QUESTIONS) < rng.uniform(0.02, 0.98) for _ in range(2))
            pairs = ((True, True), (True, False), (False, True), (False, False))
            n11, n10, n01, n00 = (int(((text == t) & (image == i)).sum()) for t, i in pairs)
            cells[category] = (n11, n10, n01, n00)
        counts[f"model_{m:02d}"] = cells
    return counts


Counts = Callable[[int, int], Mapping[str, Mapping[str, Sequence[float]]]]
GENERATORS: dict[str, Counts] = {"dirichlet": synthetic_joint_counts, "independent": independent_counts}
"""How ``--tables`` random tables are drawn (module docstring)."""


def random_tables(n_tables: int, seed: int, generator: str = "dirichlet") -> Joint:
    """``n_tables`` random models of ``generator`` (:data:`GENERATORS`) as proportions."""
    return proportions(GENERATORS[generator](n_tables, seed))


def table2() -> Joint:
    """Joint proportions from the paper's Table 2 (p11 = Succ, p10 = Und − Succ, p01 = Gen − Succ); UniPic2 /
    Reasoning prints Succ > Gen, which is impossible, and is swapped as in the spec."""
    joint: Joint = {}
    with TABLE2.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if not row["overall_gap"].strip():
                continue
            joint[row["model"]] = {}
            for c in GAPEVAL_CATEGORIES:
                succ, und, gen = (float(row[f"{c}_{k}"]) / 100 for k in ("succ", "und", "gen"))
                succ, gen = min(succ, gen), max(succ, gen)
                joint[row["model"]][c] = (succ, und - succ, gen - succ, 1 - und - gen + succ)
    return joint


def perturbed(joint: Joint, sd: float, rng: np.random.Generator) -> Joint:
    """N(0, sd²) added to every proportion, clipped at 0 and renormalised."""
    out: Joint = {}
    for model, cells in joint.items():
        out[model] = {}
        for c, row in cells.items():
            noisy = np.clip(np.asarray(row) + sd * rng.standard_normal(4), 0.0, None)
            out[model][c] = tuple(float(x) for x in noisy / noisy.sum())
    return out


def ours(joint: Joint, variant: Variant) -> tuple[Gaps, int]:
    """Our fit's gaps and how many models converged."""
    result = fit_gap_scores(joint, variant=variant)
    gaps = {m: {c: cell.gap for c, cell in fit.categories.items()} for m, fit in result.models.items()}
    return gaps, sum(fit.converged for fit in result.models.values())


def load_authors(path: Path) -> ModuleType:
    """The authors' ``evaluate.py`` (a file, or the folder holding it) as a module."""
    script = path / "evaluate.py" if path.is_dir() else path
    spec = importlib.util.spec_from_file_location("authors_gapeval_evaluate", script)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{script}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def authors(module: ModuleType, joint: Joint) -> Gaps:
    """The authors' gaps (their 0-1 values, six decimals, times 100), model by model as their ``main`` runs."""
    torch.set_num_threads(1)
    gaps: Gaps = {}
    for model, cells in joint.items():
        rows = [list(cells[c]) for c in GAPEVAL_CATEGORIES]
        result = module.evaluate_model(rows, model, 1000.0, 2000, 5e-2, 42, torch.device("cpu"))
        gaps[model] = {c: 100.0 * g for c, g in zip(GAPEVAL_CATEGORIES, result["gaps"], strict=True)}
    return gaps


def differences(a: Gaps, b: Gaps) -> list[float]:
    """|a − b| per cell."""
    return [abs(a[m][c] - b[m][c]) for m in a for c in a[m]]


def noise_changes(clean: Gaps, noisy: Sequence[Gaps]) -> list[float]:
    """Per cell, the largest |noisy − clean| over the draws."""
    return [max(abs(draw[m][c] - clean[m][c]) for draw in noisy) for m in clean for c in clean[m]]


def summary(values: Sequence[float]) -> dict[str, float | int]:
    """Median, 90th percentile and maximum, and the cells beyond each threshold."""
    data = np.asarray(values, dtype=float)
    stats: dict[str, float | int] = {
        "cells": len(data),
        "median": float(np.median(data)),
        "p90": float(np.percentile(data, 90)),
        "max": float(data.max()),
    }
    return stats | {f"over_{t:g}": int((data > t).sum()) for t in THRESHOLDS}


def line(name: str, quantity: str, stats: Mapping[str, float | int]) -> str:
    """One Markdown table row of :func:`summary`."""
    over = " | ".join(str(stats[f"over_{t:g}"]) for t in THRESHOLDS)
    return (
        f"| {name} | {quantity} | {stats['cells']} | {stats['median']:.3f} | {stats['p90']:.3f} | "
        f"{stats['max']:.3f} | {over} |"
    )


def measure(
    joint: Joint, draws: int, sd: float, rng: np.random.Generator, authors_fit: Callable[[Joint], Gaps] | None
) -> dict:
    """Every distribution of one input set, and how many fits converged."""
    official, official_ok = ours(joint, "official")
    stable, stable_ok = ours(joint, "stable")
    noisy_inputs = [perturbed(joint, sd, rng) for _ in range(draws)]
    found: dict = {
        "models": len(joint),
        "converged": {"official": official_ok, "stable": stable_ok},
        "official_vs_stable": summary(differences(official, stable)),
    }
    if draws:
        found["noise_official"] = summary(noise_changes(official, [ours(x, "official")[0] for x in noisy_inputs]))
        found["noise_stable"] = summary(noise_changes(stable, [ours(x, "stable")[0] for x in noisy_inputs]))
    if authors_fit is not None:
        theirs = authors_fit(joint)
        found["official_vs_authors"] = summary(differences(official, theirs))
        found["stable_vs_authors"] = summary(differences(stable, theirs))
        if draws:
            found["noise_authors"] = summary(noise_changes(theirs, [authors_fit(x) for x in noisy_inputs]))
    return found


QUANTITIES = {
    "official_vs_authors": "|official − authors|",
    "stable_vs_authors": "|stable − authors|",
    "official_vs_stable": "|official − stable|",
    "noise_authors": "change under noise: authors",
    "noise_official": "change under noise: official",
    "noise_stable": "change under noise: stable",
}


def report(results: Mapping[str, dict]) -> list[str]:
    """The table of every distribution, then the convergence counts."""
    header = "| set | quantity (points) | cells | median | p90 | max | " + " | ".join(f"> {t:g}" for t in THRESHOLDS)
    lines = [header + " |", "|---|---|---:|---:|---:|---:|" + "---:|" * len(THRESHOLDS)]
    for name, found in results.items():
        lines += [line(name, text, found[key]) for key, text in QUANTITIES.items() if key in found]
    for name, found in results.items():
        ok, n = found["converged"], found["models"]
        lines.append(f"{name}: converged fits: official {ok['official']}/{n}, stable {ok['stable']}/{n}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--released", type=Path, help="the authors' evaluate.py or its folder (omit: ours only)")
    parser.add_argument("--tables", type=int, default=100, help="random tables (models), 0 = none")
    parser.add_argument("--generator", choices=sorted(GENERATORS), default="dirichlet", help="how they are drawn")
    parser.add_argument("--draws", type=int, default=3, help="noise draws per random table")
    parser.add_argument("--table2-draws", type=int, default=20, help="noise draws on Table 2 (-1: skip Table 2)")
    parser.add_argument("--sd", type=float, default=1e-6, help="standard deviation of the input noise")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="also print the numbers as one JSON line")
    args = parser.parse_args()
    module = load_authors(args.released) if args.released else None
    authors_fit = (lambda joint: authors(module, joint)) if module is not None else None
    rng = np.random.default_rng(args.seed)
    wall, cpu = time.perf_counter(), time.process_time()
    results: dict[str, dict] = {}
    if args.tables:
        tables = random_tables(args.tables, args.seed, args.generator)
        results["random"] = measure(tables, args.draws, args.sd, rng, authors_fit)
    if args.table2_draws >= 0:
        results["Table 2"] = measure(table2(), args.table2_draws, args.sd, rng, authors_fit)
    print(
        f"inputs: {args.tables} random tables ({args.generator}, seed {args.seed}, {args.draws} noise draws each), "
        "Table 2 "
        f"({'skipped' if args.table2_draws < 0 else f'{args.table2_draws} noise draws'}); noise N(0, ({args.sd:g})²); "
        f"torch {torch.__version__}"
    )
    print("\n".join(report(results)))
    if module is None:
        print(
            "authors' evaluate.py not given: |official − authors|, |stable − authors| and the authors' change under "
            "noise were not measured"
        )
    print(f"CPU {time.process_time() - cpu:.1f} s, wall {time.perf_counter() - wall:.1f} s")
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
