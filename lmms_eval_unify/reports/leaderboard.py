"""`lmms-eval-unify leaderboard`: rebuild the papers' leaderboards from lmms-eval result folders.

Writes Markdown (printed and ``leaderboard.md``), one CSV per table, ``leaderboard.tex`` (booktabs tables),
``leaderboard.html`` and each figure as ``figure_NN.{png,svg,pdf}`` (PNG at 300 dpi). Model labels are the
names lmms-eval recorded, renamed by ``--labels`` (or a ``labels:`` map in the pairs file); a label that is a
filesystem path is shortened to its last component, so tables never show raw paths.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from lmms_eval_unify.benchmarks import BENCHMARKS
from lmms_eval_unify.benchmarks.unig2u import paper as ug
from lmms_eval_unify.reports import boards as bd
from lmms_eval_unify.reports.render import html_page, latex, markdown, write_csv
from lmms_eval_unify.reports.results_io import ModelResults, load_results

if TYPE_CHECKING:  # matplotlib is imported only when figures are drawn
    from lmms_eval_unify.reports.plots import Rendered

DEFAULT_PAIRS = Path(__file__).parents[1] / "benchmarks" / "unig2u" / "pairs_table3.yaml"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lmms-eval-unify leaderboard",
        description="Print Markdown leaderboards and write CSV + HTML (+ PNG figures) from lmms-eval "
        "--output_path folders written with --log_samples.",
    )
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="lmms-eval output folders")
    parser.add_argument("--benchmark", choices=[*BENCHMARKS, "all"], default="all")
    parser.add_argument(
        "--pairs",
        type=Path,
        default=DEFAULT_PAIRS,
        help="YAML `pairs: {unified model: base VLM}` for G2U gains (and optionally `labels:`, as --labels)",
    )
    parser.add_argument(
        "--labels",
        type=Path,
        default=None,
        help="YAML `labels: {recorded model name: name to show}`; overrides the pairs file's `labels:`",
    )
    parser.add_argument(
        "--output-dir", "-o", type=Path, default=Path("leaderboard"), help="where CSV/HTML/PNG go"
    )
    parser.add_argument(
        "--bootstrap", type=int, default=1000, help="bootstrap replicates for 95%% CIs (0 = off)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and split-half draws")
    parser.add_argument(
        "--split-half", action="store_true", help="score two random halves, report rank agreement"
    )
    parser.add_argument("--no-plots", action="store_true", help="skip the matplotlib figures")
    parser.add_argument(
        "--gap-variant",
        choices=["official", "stable"],
        default="official",
        help="GapEval Gap Score fit: the authors' optimiser (paper numbers; unstable on ill-conditioned "
        "cells) or the identifiable, converged fit (docs/gap_score.md)",
    )
    parser.add_argument(
        "--variant",
        choices=["corrected", "official"],
        default="corrected",
        help="MME-Unify scoring: the mme_unify_* tasks (documented bugs fixed) or the mme_unify_*_official "
        "tasks (the released scripts' rules)",
    )
    return parser


def _yaml_map(path: Path, key: str) -> dict[str, str]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {str(k): str(v) for k, v in (data.get(key) or {}).items()}


def load_pairs(path: Path) -> dict[str, str]:
    """`{unified model label: base VLM label}` from a pairs YAML file."""
    return _yaml_map(path, "pairs")


def load_labels(path: Path) -> dict[str, str]:
    """`{recorded model name: display name}` from the `labels:` map of a YAML file."""
    return _yaml_map(path, "labels")


def looks_like_path(label: str) -> bool:
    """True for a model name that is a local path (absolute, ./ or ~/ relative, or existing on disk)."""
    return label.startswith(("/", "./", "../", "~")) or os.sep in label and Path(label).exists()


def display_labels(recorded: Sequence[str], labels: Mapping[str, str]) -> dict[str, str]:
    """`{recorded name: shown name}`: the `labels` map first, else a path's last component, else unchanged.

    Raises ValueError when two models would be shown under the same name.
    """
    shown = {r: labels.get(r) or (Path(r.rstrip("/")).name if looks_like_path(r) else r) for r in recorded}
    clashes = sorted({s for s in shown.values() if list(shown.values()).count(s) > 1})
    if clashes:
        names = "; ".join(f"{s} <- {', '.join(r for r in shown if shown[r] == s)}" for s in clashes)
        raise ValueError(f"several models would share a label ({names}); give them names with --labels")
    return shown


def relabel(models: Mapping[str, ModelResults], shown: Mapping[str, str]) -> dict[str, ModelResults]:
    """The models under their display names."""
    return {shown[label]: replace(m, model=shown[label]) for label, m in models.items()}


def relabel_pairs(pairs: Mapping[str, str], shown: Mapping[str, str]) -> dict[str, str]:
    """Pairs may name models by recorded or display name; both sides end up as display names."""
    return {shown.get(u, u): shown.get(b, b) for u, b in pairs.items()}


def build(
    models: Mapping[str, ModelResults],
    benchmarks: Sequence[str],
    pairs: Mapping[str, str],
    options: bd.Options,
    plots: bool,
) -> tuple[list[bd.Board], list[tuple[str, Rendered]]]:
    """All boards and figures for the chosen benchmarks.

    The GapEval MIRT fit (torch) runs in a child process while the other boards are built.
    """
    gap_scored = bd.gapeval_scored(models, options) if "gapeval" in benchmarks else []
    joint = bd.gap_inputs(gap_scored)
    gap_fit = _start_gap_fit(joint, options.gap_variant) if joint else None
    boards, figures = _other_boards(models, benchmarks, pairs, options, plots)
    unpaired = bd.gapeval_unpaired(models) if "gapeval" in benchmarks else []
    gap, points = bd.gapeval_boards(
        gap_scored, _gap_fit_result(gap_fit) if gap_fit else {}, options, unpaired
    )
    boards += gap
    if plots and gap:
        from lmms_eval_unify.reports import plots as pl

        keys = [k for h, ks in gap[0].columns for k in ks if "Und." in h or "Gen." in h]
        figures.append(("GapEval Und./Gen. per model", pl.grouped_bars(gap[0], keys, "GapEval")))
        if (scatter := pl.gap_scatter(points)) is not None:
            figures.append(("GapEval gap vs ability (Fig. 3)", scatter))
    return boards, figures


GAP_FIT_CODE = (
    "import json, sys; from lmms_eval_unify.reports.boards import fit_gaps; "
    "json.dump(fit_gaps(json.load(sys.stdin), sys.argv[1]), sys.stdout)"
)


def _start_gap_fit(joint: Mapping[str, Mapping[str, Sequence[float]]], variant: str) -> subprocess.Popen:
    """Start the Gap Score fit in a fresh interpreter (JSON in via a temporary file, JSON out on stdout)."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as inputs:
        json.dump(joint, inputs)
        inputs.seek(0)
        return subprocess.Popen(
            [sys.executable, "-c", GAP_FIT_CODE, variant],
            stdin=inputs,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def _gap_fit_result(process: subprocess.Popen) -> dict[str, dict[str, float]]:
    out, err = process.communicate()
    if process.returncode != 0:
        print(f"warning: Gap Score fit failed, its cells are left '-':\n{err}", file=sys.stderr)
        return {}
    return json.loads(out)


def _other_boards(
    models: Mapping[str, ModelResults],
    benchmarks: Sequence[str],
    pairs: Mapping[str, str],
    options: bd.Options,
    plots: bool,
) -> tuple[list[bd.Board], list[tuple[str, Rendered]]]:
    boards: list[bd.Board] = []
    figures: list[tuple[str, Rendered]] = []
    if plots:
        from lmms_eval_unify.reports import plots as pl
    if "mme_unify" in benchmarks and (mme := bd.mme_unify_boards(models, options)):
        boards += mme
        if plots:
            figures.append(
                ("MME-Unify scores per model", pl.grouped_bars(mme[0], bd.MME_HEADLINE, "MME-Unify"))
            )
    if "unig2u" in benchmarks:
        g2u, deltas = bd.unig2u_boards(models, pairs, options)
        boards += g2u
        if plots and g2u:
            keys = [*ug.CATEGORIES, ug.OVERALL]
            figures.append(("UniG2U-Bench accuracy per model", pl.grouped_bars(g2u[0], keys, "UniG2U-Bench")))
            figures += pl.delta_figures(deltas, ug.CATEGORIES, ug.SUBTASKS)
    if "uni_mmmu" in benchmarks and (mmmu := bd.uni_mmmu_boards(models, options)):
        boards += mmmu
        if plots:
            keys = [k for _, ks in mmmu[0].columns for k in ks[:1]]
            figures.append(
                (
                    "Uni-MMMU scores per model (Maze/Slid. step level)",
                    pl.grouped_bars(mmmu[0], keys, "Uni-MMMU"),
                )
            )
    return boards, figures


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        models = load_results(args.run_dirs)
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    benchmarks = BENCHMARKS if args.benchmark == "all" else (args.benchmark,)
    labels = {**load_labels(args.pairs), **(load_labels(args.labels) if args.labels else {})}
    try:
        shown = display_labels(list(models), labels)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    models = relabel(models, shown)
    pairs = relabel_pairs(load_pairs(args.pairs), shown)
    options = bd.Options(
        replicates=args.bootstrap,
        seed=args.seed,
        split_half=args.split_half,
        gap_variant=args.gap_variant,
        mme_variant=args.variant,
    )
    boards, figures = build(models, benchmarks, pairs, options, plots=not args.no_plots)
    if not boards:
        print(f"error: no samples for --benchmark {args.benchmark} under the given folders", file=sys.stderr)
        return 1
    text = "\n".join(markdown(b) for b in boards)
    print(text)
    out = args.output_dir
    out.mkdir(parents=True, exist_ok=True)
    (out / "leaderboard.md").write_text(text, encoding="utf-8")
    for board in boards:
        write_csv(board, out / f"{board.key}.csv")
    (out / "leaderboard.tex").write_text("\n".join(latex(b) for b in boards), encoding="utf-8")
    for i, (_, rendered) in enumerate(figures):
        rendered.write(out / f"figure_{i:02d}")
    (out / "leaderboard.html").write_text(
        html_page("lmms-eval-unify leaderboard", boards, [(name, r.png) for name, r in figures]),
        encoding="utf-8",
    )
    print(f"wrote {len(boards)} tables and {len(figures)} figures to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
