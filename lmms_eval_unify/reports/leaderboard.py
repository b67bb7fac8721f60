"""`lmms-eval-unify leaderboard`: rebuild the papers' leaderboards from lmms-eval result folders.

Writes Markdown (printed and ``leaderboard.md``), one CSV per table, ``leaderboard.tex`` (booktabs tables),
``leaderboard.html``, each figure as ``figure_NN.{png,svg,pdf}`` and ``manifest.json``, every row's full recipe
(``reports.manifest``). Cells whose samples are not comparable are marked ``‡`` with a note saying how
(``reports.comparability``); ``--strict`` refuses to write a table with such a cell. A row is one model
configuration (``results_io``): labels are the names lmms-eval recorded, followed by the arguments that differ
when one model ran in several configurations (``echo_painter (seed=1)``), renamed by ``--labels`` (or by names
a benchmark's own flags supply, such as a ``labels:`` map in the pairs file) under the recorded name, the
automatic label or ``<model>@<configuration hash>``; a label that is a filesystem path is shortened to its
last component, so tables never show raw paths.

Every file goes through the write gate (``lmms_eval_unify.writes``), confined to the ``-o`` folder, under the
folder's writer lock: a symlink planted in it is refused, never written through. A refused table file fails
the command (exit 2, the other files still written); a refused figure file is a warning.

This module knows no benchmark: each registered benchmark's ``leaderboard`` module (the
``BenchmarkLeaderboard`` interface of ``lmms_eval_unify.reports.boards``) adds its flags and builds its
tables and figures; they are printed in registry order.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import yaml

from lmms_eval_unify.benchmarks import BENCHMARKS, part
from lmms_eval_unify.reports.boards import BenchmarkLeaderboard, Board, Figure, Options
from lmms_eval_unify.reports.comparability import mark_boards, strict_errors, task_caveats
from lmms_eval_unify.reports.manifest import MANIFEST, write_manifest
from lmms_eval_unify.reports.render import csv_text, html_page, latex, markdown
from lmms_eval_unify.reports.results_io import REQUEST_LOG_KEYS, ModelResults, ShardError, load_results, short_name
from lmms_eval_unify.writes import EXIT_REFUSED, FolderBusy, WriteRefused, folder_lock, write_or_record

EXIT_NOT_COMPARABLE = 3
"""Exit status of ``--strict`` when a cell is not comparable."""


def provenance_note(board: Board) -> str:
    """The note under every table naming where the rest of how it was made is: every row's recipe in the
    manifest, every cell's caveats in full (tasks, counts, what differs) and its sample counts in the board's CSV."""
    return (
        f"Every row's recipe (runs, model arguments, seeds, judges, items, versions): {MANIFEST}; every cell's "
        f"caveats and sample counts: {board.key}.csv."
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lmms-eval-unify leaderboard",
        description="Print Markdown leaderboards and write CSV + HTML (+ PNG figures) from lmms-eval "
        "--output_path folders written with --log_samples.",
    )
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="lmms-eval output folders")
    parser.add_argument("--benchmark", choices=[*BENCHMARKS, "all"], default="all")
    parser.add_argument(
        "--labels",
        type=Path,
        default=None,
        help="YAML `labels: {model: name to show}`, the model named as recorded, by its automatic label "
        "(`name (seed=1)`) or as `name@<configuration hash>`; overrides the pairs file's `labels:`",
    )
    parser.add_argument("--output-dir", "-o", type=Path, default=Path("leaderboard"), help="where CSV/HTML/PNG go")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap replicates for 95%% CIs (0 = off)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and split-half draws")
    parser.add_argument("--split-half", action="store_true", help="score two random halves, report rank agreement")
    parser.add_argument("--no-plots", action="store_true", help="skip the matplotlib figures")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse (exit 3, nothing written) when any cell is marked ‡: its samples come from a --limit/--offset "
        "run or from shards that miss items, or from generated or unknown local data, its items, scorer version, "
        "variant or judges differ from the other rows', or its value comes from a fit that did not converge (a "
        "benchmark's board says which, and its flags how to use a converging variant)",
    )
    for benchmark in BENCHMARKS:
        leaderboard_of(benchmark).add_arguments(parser)
    return parser


def leaderboard_of(benchmark: str) -> BenchmarkLeaderboard:
    """The benchmark's ``leaderboard`` module: its flags, the display names they supply, its boards."""
    return part(benchmark, "leaderboard")


def yaml_map(path: Path, key: str) -> dict[str, str]:
    """The string-to-string map under `key` of a YAML file (empty if the key is absent)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {str(k): str(v) for k, v in (data.get(key) or {}).items()}


def load_labels(path: Path) -> dict[str, str]:
    """`{model: display name}` from the `labels:` map of a YAML file (see ``--labels`` for how models are named)."""
    return yaml_map(path, "labels")


def refuse_clashes(shown: Mapping[str, str]) -> None:
    """Raise ValueError naming them when two models would be shown under the same name."""
    clashes = sorted({s for s in shown.values() if list(shown.values()).count(s) > 1})
    if clashes:
        names = "; ".join(f"{s} <- {', '.join(r for r in shown if shown[r] == s)}" for s in clashes)
        raise ValueError(f"several models would share a label ({names}); give them names with --labels")


def display_labels(recorded: Sequence[str], labels: Mapping[str, str]) -> dict[str, str]:
    """`{recorded name: shown name}`: the `labels` map first, else a path's last component, else unchanged.

    Raises ValueError when two models would be shown under the same name.
    """
    shown = {r: labels.get(r) or short_name(r) for r in recorded}
    refuse_clashes(shown)
    return shown


def configuration_labels(models: Mapping[str, ModelResults], labels: Mapping[str, str]) -> dict[str, str]:
    """`{configuration name: shown name}` for the keys of `load_results`: the `labels` entry of the automatic
    name (``echo_painter (seed=1)``) or of the ``config_id`` (``echo_painter@3fa2c1d9e0``); else the entry of the
    recorded name (or its path's last component) followed by the configuration's distinguishing arguments.

    Raises ValueError when two configurations would be shown under the same name.
    """
    shown = {}
    for name, m in models.items():
        base = labels.get(m.model) or short_name(m.model)
        automatic = f"{base} ({m.distinction})" if m.distinction else base
        shown[name] = labels.get(m.config_id) or labels.get(name) or automatic
    refuse_clashes(shown)
    return shown


def label_aliases(models: Mapping[str, ModelResults], shown: Mapping[str, str]) -> dict[str, str]:
    """Every name a configuration may be given by in a benchmark's own files (its automatic name, which is the
    recorded name when the model has one configuration, and its ``config_id``) -> its shown name."""
    return {**{m.config_id: shown[name] for name, m in models.items() if m.config_id}, **shown}


def relabel(models: Mapping[str, ModelResults], shown: Mapping[str, str]) -> dict[str, ModelResults]:
    """The models under their display names."""
    return {shown[label]: replace(m, model=shown[label]) for label, m in models.items()}


def configurations_note(models: Mapping[str, ModelResults], shown: Mapping[str, str]) -> list[str]:
    """One line per model run in several configurations: each configuration's shown name and ``config_id``."""
    by_model: dict[str, list[str]] = {}
    for name, m in models.items():
        if m.distinction:
            by_model.setdefault(m.model, []).append(f"{shown[name]} = {m.config_id}")
    return [
        f"note: {model} ran in {len(names)} configurations, one row each: {'; '.join(names)}"
        for model, names in by_model.items()
    ]


def figure_stem(index: int, count: int) -> str:
    """File stem of figure `index` of `count`: ``figure_NN``, zero-padded to one width so names sort in order."""
    return f"figure_{index:0{max(2, len(str(count - 1)))}d}"


def build(
    models: Mapping[str, ModelResults],
    shown: Mapping[str, str],
    args: argparse.Namespace,
    benchmarks: Sequence[str],
    options: Options,
    plots: bool,
) -> tuple[list[Board], list[Figure]]:
    """All boards and figures of the chosen benchmarks, in registry order.

    Every benchmark is started before any is finished, so work one starts early (a fit in a child process)
    runs while the others build their boards.
    """
    finishes = [leaderboard_of(b).start(models, shown, args, options, plots) for b in BENCHMARKS if b in benchmarks]
    boards: list[Board] = []
    figures: list[Figure] = []
    for finish in finishes:
        section_boards, section_figures = finish()
        boards += section_boards
        figures += section_figures
    return boards, figures


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        models = load_results(args.run_dirs, drop=REQUEST_LOG_KEYS)
    except (FileNotFoundError, ShardError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    benchmarks = BENCHMARKS if args.benchmark == "all" else (args.benchmark,)
    labels = {k: v for b in BENCHMARKS for k, v in leaderboard_of(b).labels(args).items()}
    labels |= load_labels(args.labels) if args.labels else {}
    try:
        shown = configuration_labels(models, labels)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for line in configurations_note(models, shown):
        print(line, file=sys.stderr)
    aliases = label_aliases(models, shown)
    recorded = {shown[name]: m for name, m in models.items()}
    models = relabel(models, shown)
    options = Options(replicates=args.bootstrap, seed=args.seed, split_half=args.split_half)
    boards, figures = build(models, aliases, args, benchmarks, options, plots=not args.no_plots)
    if not boards:
        print(f"error: no samples for --benchmark {args.benchmark} under the given folders", file=sys.stderr)
        return 1
    mark_boards(boards, task_caveats(models))
    if args.strict and (errors := strict_errors(boards)):
        for line in errors:
            print(f"error: not comparable: {line}", file=sys.stderr)
        print(f"error: --strict: {len(errors)} cells are not comparable; nothing written", file=sys.stderr)
        return EXIT_NOT_COMPARABLE
    for board in boards:
        board.notes.append(provenance_note(board))
    text = "\n".join(markdown(b) for b in boards)
    print(text)
    command = ["lmms-eval-unify", "leaderboard", *(sys.argv[1:] if argv is None else argv)]
    try:
        with folder_lock(args.output_dir, "leaderboard") as out:
            tables, figure_files = write_outputs(out, text, boards, figures, recorded, command)
    except (FolderBusy, WriteRefused) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_REFUSED
    for refusal in figure_files:
        print(f"warning: figure not written: {refusal}", file=sys.stderr)
    if tables:
        for refusal in tables:
            print(f"error: not written: {refusal}", file=sys.stderr)
        return EXIT_REFUSED
    print(f"wrote {len(boards)} tables and {len(figures)} figures to {args.output_dir}", file=sys.stderr)
    return 0


def write_outputs(
    out: Path,
    text: str,
    boards: Sequence[Board],
    figures: Sequence[Figure],
    recorded: Mapping[str, ModelResults],
    command: Sequence[str],
) -> tuple[list[WriteRefused], list[WriteRefused]]:
    """Write every file of the leaderboard into ``out`` through the write gate (confined to ``out``): the
    manifest, the Markdown ``text``, one CSV per board, the LaTeX, the figures and the HTML page. A refused file fails
    alone; returns the refusals of the tables (the command's result) and of the figures."""
    tables: list[WriteRefused] = []
    try:
        write_manifest(recorded, command, out)
    except WriteRefused as refusal:
        tables.append(refusal)
    write_or_record(out / "leaderboard.md", text, out, tables)
    for board in boards:
        write_or_record(out / f"{board.key}.csv", csv_text(board), out, tables)
    write_or_record(out / "leaderboard.tex", "\n".join(latex(b) for b in boards), out, tables)
    figure_files = [
        refusal
        for i, (_, rendered) in enumerate(figures)
        for refusal in rendered.write(out / figure_stem(i, len(figures)), out)
    ]
    page = html_page("lmms-eval-unify leaderboard", boards, [(name, r.png) for name, r in figures])
    write_or_record(out / "leaderboard.html", page, out, tables)
    return tables, figure_files


if __name__ == "__main__":
    raise SystemExit(main())
