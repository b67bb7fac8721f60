"""Paper-level scores in an lmms-eval run's own results: the leaderboard's paper table, per benchmark group.

lmms-eval aggregates a group as a (sample-weighted) mean of its subtasks' metrics, which none of the papers'
roll-ups is. After a run, :func:`add_paper_scores` (called by ``run_hooks`` in the main process) builds the
run's samples the way ``lmms-eval-unify leaderboard`` reads them from the run folder, starts every benchmark's
leaderboard (its ``benchmarks/<b>/leaderboard.py``) with its default flags and no bootstrap, and copies the
model's row of the benchmark's first board (its paper table) into the results:

* keys ``"<value key>,paper"``: the value keys of the leaderboard's CSV, with the filter ``paper`` (lmms-eval
  prints it in the Filter column), each value as the leaderboard's CSV has it (``None`` where that has '-').
  A board row qualified beyond the model's name (e.g. one row per protocol) adds its qualifier to the filter,
  ``paper (<qualifier>)``; a benchmark scored under other flags than its defaults adds them, ``paper --flag
  value`` (a run scored under several flag lists: the later ones add only the values that differ from the
  first's). ``"n,paper"`` is the number of samples of the benchmark's tasks in the run, which the leaderboard
  reads, ``"invalid,paper"`` how many of them could not be scored, and ``"caveats,paper"`` (only when there are
  any) says which scores are not comparable, as the leaderboard's ``‡`` does (the tasks the run asked only part
  of, ``--limit``/``--offset``; offline stand-ins: the reference judge, tiny metrics on tasks that use a metric
  backbone; the values the paper table itself marks, e.g. a score from a fit that did not converge), in short
  codes, one per reason (``C1 C2``), so the printed tables stay narrow. The codes are spelt out once for the whole
  run under :data:`CAVEAT_LEGEND_KEY` (``{"C1": "<reason>: <details> in <tasks or value keys>"}``), which the run
  hook prints after lmms-eval's tables (:func:`legend_lines`).
* the row: the run's group that holds all of the benchmark's tasks run (and nothing else), when the run has
  exactly one such top-level group; else a row named after the benchmark, listed in ``group_subtasks`` with
  the tasks it rolls up. The row is also put in ``results["groups"]``, so lmms-eval prints it in its groups
  table.

A benchmark whose leaderboard scores different tasks under different flags says which flag lists a run's
tasks call for with ``run_flags(tasks) -> list[list[str]]`` in its leaderboard module (optional; without it,
the default flags). Nothing here may fail a run: an error is logged as one warning naming the benchmark.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from loguru import logger

from lmms_eval_unify.benchmarks import BENCHMARKS, part
from lmms_eval_unify.reports.boards import Board, Finish, Options, Row
from lmms_eval_unify.reports.comparability import Caveat, subjects_text, task_caveats
from lmms_eval_unify.reports.leaderboard import display_labels, leaderboard_of, relabel
from lmms_eval_unify.reports.render import cell_record
from lmms_eval_unify.reports.results_io import (
    TASK_PREFIXES,
    UNSUPPORTED,
    ModelResults,
    RunInfo,
    model_label,
    task_run,
)
from lmms_eval_unify.scoring.samples import is_unsupported

PAPER_FILTER = "paper"
"""The filter name of every paper-score key (``"<value key>,paper"``)."""
N_KEY = "n"
"""The metric name of the number of samples behind a row's paper scores (``"n,paper"``)."""
INVALID_KEY = "invalid"
"""The metric name of the number of those samples that could not be scored (``"invalid,paper"``)."""
CAVEATS_KEY = "caveats"
"""The metric name of why some paper scores are not comparable (``"caveats,paper"``: the codes of
:data:`CAVEAT_LEGEND_KEY`; absent when none)."""
CAVEAT_LEGEND_KEY = "lmms_eval_unify_caveats"
"""Top-level key of the results holding what each caveat code of the run's rows means (code -> full text)."""
CAVEAT_CODE = "C{}"
"""A caveat code: its reason's number, in order of first appearance in the run."""
LEGEND_WIDTH = 120
"""Characters per printed legend line."""
UNLOGGED_KEYS = ("doc", "arguments")
"""Keys of an in-memory sample that lmms-eval drops when it writes the samples JSONL."""


@dataclass
class Target:
    """Where one benchmark's paper scores go: the results row, whether it is new, and the tasks it rolls up."""

    benchmark: str
    row: str
    tasks: list[str]
    new: bool


class ScoredRow(NamedTuple):
    """One benchmark's paper scores in the run: where they go, the values and counts, and their caveats."""

    target: Target
    values: dict[str, float | int | None]
    caveats: list[Caveat]


def logged_row(sample: Mapping) -> dict:
    """A sample as its line of the samples JSONL reads back: without the doc and the request arguments, through
    JSON with lmms-eval's serializer (so non-JSON values read as the leaderboard reads them)."""
    from lmms_eval.utils import handle_non_serializable

    kept = {k: v for k, v in sample.items() if k not in UNLOGGED_KEYS}
    return json.loads(json.dumps(kept, default=handle_non_serializable, ensure_ascii=False))


def run_samples(results: Mapping, label: str) -> ModelResults:
    """The run's benchmark-task samples as ``results_io.load_results`` reads them from the run folder: rows
    sorted by doc_id, tasks whose every sample is unsupported marked."""
    model = ModelResults(label)
    for task, samples in (results.get("samples") or {}).items():
        if not task.startswith(TASK_PREFIXES):
            continue
        rows = sorted((logged_row(s) for s in samples), key=lambda r: r.get("doc_id", 0))
        model.samples[task] = rows
        model.runs[task] = task_run(results, task, rows, RunInfo.of(results, Path()))
        if is_unsupported(rows):
            model.unsupported.add(task)
    return model


def leaves(name: str, group_subtasks: Mapping[str, list[str]]) -> list[str]:
    """The tasks under a group of the run (a task: itself)."""
    children = group_subtasks.get(name)
    return [t for child in children for t in leaves(child, group_subtasks)] if children else [name]


def target_of(results: Mapping, model: ModelResults, benchmark: str) -> Target | None:
    """Where `benchmark`'s paper scores go (module docstring); None when the run has no samples of its tasks."""
    group_subtasks = results.get("group_subtasks") or {}
    nested = {child for children in group_subtasks.values() for child in children}
    top_level = [name for name in group_subtasks if name not in nested]
    prefix = part(benchmark, "spec").TASK_PREFIX
    tasks = sorted(t for t in model.samples if t.startswith(prefix))
    if not tasks:
        return None
    holding = [name for name in top_level if set(leaves(name, group_subtasks)) & set(tasks)]
    if (
        len(holding) == 1
        and group_subtasks.get(holding[0])
        and all(t.startswith(prefix) for t in leaves(holding[0], group_subtasks))
    ):
        return Target(benchmark, holding[0], tasks, new=False)
    row = benchmark if benchmark not in results.get("results", {}) else f"{benchmark}_{PAPER_FILTER}"
    return Target(benchmark, row, tasks, new=True)


def flag_sets(benchmark: str, tasks: Collection[str]) -> list[list[str]]:
    """The leaderboard flag lists that score a run of `tasks` (the benchmark's ``run_flags``, else defaults)."""
    run_flags = getattr(leaderboard_of(benchmark), "run_flags", None)
    return run_flags(tasks) if run_flags else [[]]


def add_paper_scores(results: dict, model_name: str | None = None) -> list[str]:
    """Add the paper scores of every benchmark run to ``results`` (``simple_evaluate``'s, with samples); returns
    the rows written. `model_name` is the name lmms-eval records (``model_name`` of the results file).

    Each benchmark is built on its own: one whose leaderboard fails (to import, to parse its flags, to score)
    loses only its own row, with a warning naming it."""
    try:
        label = model_label({"model_name": model_name, "config": results.get("config") or {}})
        model = run_samples(results, label)
    except Exception as exc:  # noqa: BLE001 - never fail the run over its paper scores
        logger.warning("lmms-eval-unify: paper scores not added to the results: {}: {}", type(exc).__name__, exc)
        return []
    parser = argparse.ArgumentParser(add_help=False)  # every benchmark's flags, as ``leaderboard`` adds them
    planned: list[Target] = []
    for benchmark in BENCHMARKS:
        try:
            target = target_of(results, model, benchmark)
            leaderboard_of(benchmark).add_arguments(parser)
        except Exception as exc:  # noqa: BLE001 - this benchmark's row only
            _warn(benchmark, benchmark, exc)
            continue
        planned += [target] if target else []
    defaults = parser.parse_args([])
    labels: dict[str, str] = {}
    for target in list(planned):
        try:
            labels |= leaderboard_of(target.benchmark).labels(defaults)
        except Exception as exc:  # noqa: BLE001 - this row only
            _warn(target.benchmark, target.row, exc)
            planned.remove(target)
    shown = display_labels([label], labels)  # one recorded name: no clash to refuse
    models = relabel({label: model}, shown)
    started: list[tuple[Target, list[tuple[str, Finish]]]] = []
    for target in planned:
        try:
            finishes = []
            for flags in flag_sets(target.benchmark, target.tasks):
                args = parser.parse_args(flags)
                suffix = " ".join(flags) if vars(args) != vars(defaults) else ""
                finish = leaderboard_of(target.benchmark).start(models, shown, args, Options(replicates=0), False)
                finishes.append((suffix, finish))
            started.append((target, finishes))
        except Exception as exc:  # noqa: BLE001 - this row only
            _warn(target.benchmark, target.row, exc)
    scored: list[ScoredRow] = []
    for target, finishes in started:
        try:
            tables = [(flags, model_board_rows(finish, shown[label])) for flags, finish in finishes]
            values = paper_values([(flags, row_values(board, rows)) for flags, (board, rows) in tables])
            marked = [caveat for _, (_, rows) in tables for caveat in value_caveats(rows.values())]
            if values:
                counts = sample_counts(model, target.tasks)
                scored.append(ScoredRow(target, {**values, **counts}, run_caveats(model, target.tasks, marked)))
        except Exception as exc:  # noqa: BLE001 - this row only
            _warn(target.benchmark, target.row, exc)
    put_rows(results, scored)
    return [row.target.row for row in scored]


def put_rows(results: dict, scored: Sequence[ScoredRow]) -> None:
    """Write every benchmark's paper scores into the results (:func:`put_row`), each row's caveats as codes
    (:func:`caveat_codes`) spelt out once under :data:`CAVEAT_LEGEND_KEY`."""
    codes, legend = caveat_codes({row.target.row: row.caveats for row in scored})
    for row in scored:
        marks = {f"{CAVEATS_KEY},{PAPER_FILTER}": codes[row.target.row]} if row.target.row in codes else {}
        put_row(results, row.target, {**row.values, **marks})
    if legend:
        results[CAVEAT_LEGEND_KEY] = legend


def sample_counts(model: ModelResults, tasks: Collection[str]) -> dict[str, int]:
    """How many samples a benchmark's paper scores in the run read (``n``) and how many of them could not be
    scored (``invalid``)."""
    failures = [reason for t in tasks for reason in model.failures(t) or [] if reason and reason != UNSUPPORTED]
    return {
        f"{N_KEY},{PAPER_FILTER}": sum(len(model.samples[t]) for t in tasks),
        f"{INVALID_KEY},{PAPER_FILTER}": len(failures),
    }


def run_caveats(model: ModelResults, tasks: Collection[str], value_caveats: Sequence[Caveat] = ()) -> list[Caveat]:
    """Why a benchmark's paper scores in the run are not comparable, as the leaderboard's ``‡`` notes say: the
    caveats of its tasks' runs (``comparability.task_caveats``) and the `value_caveats` of the paper table's
    values (:func:`value_caveats`), each once."""
    caveats = [caveat for (_, task), found in task_caveats({model.model: model}).items() if task in tasks
               for caveat in found]  # fmt: skip
    return list(dict.fromkeys([*caveats, *value_caveats]))


def caveat_codes(by_row: Mapping[str, Sequence[Caveat]]) -> tuple[dict[str, str], dict[str, str]]:
    """Short codes for the caveats of the run's rows, one per reason, numbered in order of first appearance:
    ``{row: "C1 C2"}`` (rows without caveats absent) and the legend ``{"C1": "<reason>: <subjects_text>"}``, which
    names every task (or value) each reason concerns, with its details."""
    by_reason: dict[str, list[Caveat]] = {}
    for caveats in by_row.values():
        for caveat in caveats:
            by_reason.setdefault(caveat.reason, []).append(caveat)
    code = {reason: CAVEAT_CODE.format(i) for i, reason in enumerate(by_reason, 1)}
    rows = {row: " ".join(dict.fromkeys(code[c.reason] for c in caveats)) for row, caveats in by_row.items() if caveats}
    legend = {
        code[reason]: ": ".join(part for part in (reason, subjects_text(caveats)) if part)
        for reason, caveats in by_reason.items()
    }
    return rows, legend


def legend_lines(results: Mapping) -> list[str]:
    """The run's caveat legend (:data:`CAVEAT_LEGEND_KEY`) as printed once after lmms-eval's tables: a heading,
    then each code's meaning wrapped to :data:`LEGEND_WIDTH` characters; none when the run has no caveat."""
    legend = results.get(CAVEAT_LEGEND_KEY) or {}
    if not legend:
        return []
    lines = [f"lmms-eval-unify: caveats of the paper scores (the {CAVEATS_KEY} codes in the tables above):"]
    for code, text in legend.items():
        lines += textwrap.wrap(f"{code} = {text}", LEGEND_WIDTH, initial_indent="  ", subsequent_indent="      ")
    return lines


def _warn(benchmark: str, row: str, exc: Exception) -> None:
    logger.warning(
        "lmms-eval-unify: paper scores of {} not added to the results ({}): {}: {}",
        benchmark,
        row,
        type(exc).__name__,
        exc,
    )


def model_board_rows(finish: Finish, shown: str) -> tuple[Board | None, dict[str, Row]]:
    """The first board of a started section (None if it has none) and ``{qualifier: row}`` of the model's rows
    in it; the qualifier is what the row label adds to the model's name ('' for none)."""
    boards, _ = finish()
    if not boards:
        return None, {}
    rows = {
        row.label[len(shown) :].strip().strip("()"): row
        for row in boards[0].rows
        if row.label == shown or row.label.startswith(f"{shown} ")
    }
    return boards[0], rows


def row_values(board: Board | None, rows: Mapping[str, Row]) -> dict[str, dict[str, float | None]]:
    """``{qualifier: {value key: value}}`` of :func:`model_board_rows`, each value as the leaderboard's CSV has it."""
    if board is None:
        return {}
    return {q: {key: cell_record(board, row, key)["value"] for key in board.value_keys()} for q, row in rows.items()}


def value_caveats(rows: Iterable[Row]) -> list[Caveat]:
    """The caveats the paper table gave its own values (``Row.caveats``, e.g. a Gap fit that did not converge),
    one per caveat: ``<value keys>: <caveat>``, about those value keys, under the caveat's reason."""
    found = []
    for row in rows:
        keys_by_caveat: dict[str, list[str]] = {}
        for key, caveats in row.caveats.items():
            for caveat in caveats:
                keys_by_caveat.setdefault(caveat, []).append(key)
        for text, keys in keys_by_caveat.items():
            caveat, subject = Caveat.of(text), ", ".join(keys)
            found.append(Caveat(f"{subject}: {caveat}", caveat.reason, subject, caveat.detail))
    return found


def model_rows(finish: Finish, shown: str) -> dict[str, dict[str, float | None]]:
    """``{qualifier: {value key: value}}`` of the model's rows in the first board of a started section."""
    return row_values(*model_board_rows(finish, shown))


def paper_values(scored: list[tuple[str, dict[str, dict[str, float | None]]]]) -> dict[str, float | None]:
    """``{"<value key>,<filter>": value}`` of a benchmark's rows under each of its flag lists (``(flags,
    model_rows)``, the first the reference): a later flag list adds only the values that differ from the
    reference's (its variant where they differ)."""
    values = {}
    reference: dict[str, dict[str, float | None]] | None = None
    for flags, rows in scored:
        for qualifier, row in rows.items():
            same = (reference or {}).get(qualifier, {})
            name = " ".join(piece for piece in (PAPER_FILTER, flags, f"({qualifier})" if qualifier else "") if piece)
            values |= {f"{k},{name}": v for k, v in row.items() if reference is None or k not in same or same[k] != v}
        reference = rows if reference is None else reference
    return values


def put_row(results: dict, target: Target, values: Mapping[str, float | int | None]) -> None:
    """Write a benchmark's paper scores into its results row (new or the group's) and the groups table."""
    row = results.setdefault("results", {}).setdefault(target.row, {})
    if target.new:
        row.setdefault("alias", f"{target.benchmark} (paper scores of the tasks run)")
        results.setdefault("group_subtasks", {})[target.row] = list(target.tasks)
    row.pop(" ", None)  # lmms-eval's mark of a group without aggregate scores
    row.update(values)
    results.setdefault("groups", {})[target.row] = dict(row)
