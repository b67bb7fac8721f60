"""Which cells of a leaderboard rest on samples that are not comparable, and how.

Every cell knows the configurations' tasks its samples come from (``CellSamples.sources``); every task of a
configuration knows what its samples rest on (``results_io.TaskRun``). A task run is marked when

* it asked only part of its dataset (``--limit``, ``--offset``),
* its items differ from those most rows were scored on (the item fingerprint: doc ids, prompts, targets),
* its scorer version (the task's ``metadata.version``), variant or judges differ from most rows',
* it was judged by the offline reference judge (``lmms-eval-unify judge serve``), which is no real judge, or
  scored with the tiny random metric backbones (``LMMS_EVAL_UNIFY_TINY_METRICS``).

"Most rows" is the value shared by more of the rows that ran the task than any other; when no value is, every
row that differs from another is marked. A cell carries the caveats of every task run it reads
(:func:`mark_boards`) and those its benchmark's board gave it (e.g. a score whose fit did not
converge); tables print them as ``‡`` with a footnote, ``--strict`` refuses them (:func:`strict_errors`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from lmms_eval_unify.judges.config import REFERENCE_JUDGE_MODEL
from lmms_eval_unify.reports.boards import Board, SampleSource
from lmms_eval_unify.reports.results_io import ModelResults, TaskRun

Caveats = dict[SampleSource, tuple[str, ...]]
"""(configuration, task) -> how that task's samples are not comparable (absent when they are)."""

COMPARED: tuple[tuple[str, Callable[[TaskRun], object]], ...] = (
    ("items", lambda run: run.items),
    ("scorer version", lambda run: run.version),
    ("variant", lambda run: run.variant),
    ("judges", lambda run: ", ".join(run.judges) or None),
)
"""What must agree across the rows that ran a task: (what it is called in a caveat, its value; None = nothing
to compare, e.g. no judge verdict logged because every judgement failed, which the cell's '—'/'†' already says)."""
REFERENCE_JUDGED = (
    f"judged by the offline reference judge {REFERENCE_JUDGE_MODEL} (generated data only), not comparable to "
    "published numbers"
)
TINY_METRICS = "metrics on tiny random backbones (LMMS_EVAL_UNIFY_TINY_METRICS), not comparable to published numbers"


def offline_stand_ins(run: TaskRun) -> list[str]:
    """What made a task run an offline trial rather than a measurement: the reference judge, tiny metrics."""
    found = [REFERENCE_JUDGED] if any(judge.startswith(REFERENCE_JUDGE_MODEL) for judge in run.judges) else []
    return found + ([TINY_METRICS] if run.run.ours.get("tiny_metrics") else [])


def subset_caveat(task: str, run: TaskRun) -> str | None:
    """The caveat of a run that asked only part of the task's dataset, None for a full run."""
    if not run.subset:
        return None
    asked = [f"--limit {run.limit:g}"] if run.limit is not None else []
    asked += [f"--offset {run.offset}"] if run.offset else []
    of = f" of {run.n_dataset}" if run.n_dataset is not None else ""
    return f"{task}: {run.n}{of} items ({' '.join(asked)})"


def differing(values: Mapping[str, object]) -> dict[str, object | None]:
    """The rows whose value differs, each with the value most rows share (None when no value is shared by
    more rows than any other)."""
    counts = Counter(values.values())
    if len(counts) < 2:
        return {}
    (top, top_n), (_, second_n) = counts.most_common(2)
    reference = top if top_n > second_n else None
    return {row: reference for row, value in values.items() if value != reference}


def task_caveats(models: Mapping[str, ModelResults]) -> Caveats:
    """Every (configuration, task) whose samples are not comparable, with each reason."""
    found: dict[SampleSource, list[str]] = {}
    tasks = sorted({task for m in models.values() for task in m.runs})
    for task in tasks:
        runs = {m.config_id: m.runs[task] for m in models.values() if task in m.runs}
        for config, run in runs.items():
            if caveat := subset_caveat(task, run):
                found.setdefault((config, task), []).append(caveat)
        for config, run in runs.items():
            for caveat in offline_stand_ins(run):
                found.setdefault((config, task), []).append(f"{task}: {caveat}")
        for name, value_of in COMPARED:
            values = {config: value for config, run in runs.items() if (value := value_of(run)) is not None}
            for config, reference in differing(values).items():
                most = f"most rows: {reference}" if reference is not None else "rows disagree"
                found.setdefault((config, task), []).append(f"{task}: {name} {values[config]} ({most})")
    return {source: tuple(reasons) for source, reasons in found.items()}


def mark_boards(boards: Iterable[Board], caveats: Caveats) -> None:
    """Give every cell the caveats of the task runs its samples come from (``Row.caveats``), after those its
    board already gave it (a value's own caveat, such as a fit that did not converge)."""
    for board in boards:
        for row in board.rows:
            for key, cell in row.cells.items():
                own = row.caveats.get(key, ())
                reasons = sorted({r for source in cell.sources for r in caveats.get(source, ())} - set(own))
                if reasons:
                    row.caveats[key] = (*own, *reasons)


def strict_errors(boards: Sequence[Board]) -> list[str]:
    """One line per marked cell (``board / row / key: reasons``): what ``--strict`` refuses."""
    return [
        f"{board.key} / {row.label} / {key}: {'; '.join(reasons)}"
        for board in boards
        for row in board.rows
        for key, reasons in row.caveats.items()
    ]
