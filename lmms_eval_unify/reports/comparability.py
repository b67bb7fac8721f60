"""Which cells of a leaderboard rest on samples that are not comparable, and how.

Every cell knows the configurations' tasks its samples come from (``CellSamples.sources``); every task of a
configuration knows what its samples rest on (``results_io.TaskRun``). A task run is marked when

* it asked only part of its dataset (``--limit``, ``--offset``), or it is shards merged that miss items of the
  dataset (a shard gap: its cells are left blank, :data:`BLANKING`, naming the missing doc ids),
* it read data not known to be the published dataset: generated (``data generate``, with its seed and items per
  subtask) or local files of unknown origin (the run's data source, ``integration.provenance``),
* its items differ from those most rows were scored on (the item fingerprint: doc ids, prompts, targets),
* its scorer version (the task's ``metadata.version``), variant or judges differ from most rows',
* it was judged by the offline reference judge (``lmms-eval-unify judge serve``), which is no real judge, or
  scored with the tiny random metric backbones (``LMMS_EVAL_UNIFY_TINY_METRICS``).

"Most rows" is the value shared by more of the rows that ran the task than any other; when no value is, every
row that differs from another is marked. Tiny metrics mark only the tasks whose scorer loads a metric backbone (the
registry's :func:`lmms_eval_unify.benchmarks.metric_families`). A cell carries the caveats of every task run it
reads (:func:`mark_boards`) and those its benchmark's board gave it (e.g. a score whose fit did not converge);
tables print them as ``‡`` with notes grouped by reason (``reports.render``), ``--strict`` refuses them
(:func:`strict_errors`).

Every caveat is a :class:`Caveat`: its one-line text (``task: 3 of 1200 items (--limit 3)``), which the CSV,
``--strict`` and the run's results show, and its parts: the reason (the same words for every task it applies to),
the task and what it is for that task. Notes group cells by the reason, whatever reasons there are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from lmms_eval_unify.benchmarks import metric_families
from lmms_eval_unify.judges.config import REFERENCE_JUDGE_MODEL
from lmms_eval_unify.reports.boards import Board, SampleSource
from lmms_eval_unify.reports.results_io import ModelResults, TaskRun, id_ranges
from lmms_eval_unify.run.provenance import GENERATED, UNKNOWN


class Caveat(str):
    """A caveat: its one-line text, and the parts notes group by: `reason` (the same words wherever it applies),
    the `subject` it concerns (a task, or value keys; '' for a value's own caveat) and the `detail` of that
    subject (``3 of 1200 items``). A plain string is a caveat whose reason is all of it (:meth:`of`)."""

    reason: str
    subject: str
    detail: str

    def __new__(cls, text: str, reason: str = "", subject: str = "", detail: str = "") -> Caveat:
        caveat = super().__new__(cls, text)
        caveat.reason, caveat.subject, caveat.detail = reason or text, subject, detail
        return caveat

    @classmethod
    def of(cls, text: str) -> Caveat:
        """`text` as a caveat: itself when it is one, else a caveat whose reason is the whole text."""
        return text if isinstance(text, Caveat) else cls(text)


Caveats = dict[SampleSource, tuple[Caveat, ...]]
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
DATA_NOT_PUBLISHED = {
    GENERATED: "generated data (lmms-eval-unify data generate), not the published dataset",
    UNKNOWN: "local data of unknown origin (no data prepare or data generate record), not known to be the published "
    "dataset",
}
"""The reason of a task run whose recorded data source is of each kind not known to be the published dataset."""
SHARD_GAP = "shards miss items of the dataset; cells left blank"
BLANKING = (SHARD_GAP,)
"""Reasons whose cells are left blank (:func:`mark_boards`), not only marked: their values rest on a part of the
dataset no run chose."""


def offline_stand_ins(task: str, run: TaskRun) -> dict[str, str]:
    """What made a task run an offline trial rather than a measurement, each reason with its detail for this run:
    the reference judge, tiny metrics when the task's scorer loads a metric backbone, data not known to be the
    published dataset (generated: its seed and items per subtask; unknown: the file)."""
    found: dict[str, str] = {}
    if any(judge.startswith(REFERENCE_JUDGE_MODEL) for judge in run.judges):
        found[REFERENCE_JUDGED] = ""
    if run.run.ours.get("tiny_metrics") and metric_families(task):
        found[TINY_METRICS] = ""
    kind = run.source.get("kind")
    if isinstance(kind, str) and kind in DATA_NOT_PUBLISHED:
        found[DATA_NOT_PUBLISHED[kind]] = source_detail(run.source)
    return found


def source_detail(source: Mapping[str, object]) -> str:
    """A data source not known to be the published dataset in a few words: generated data's seed and items per
    subtask, the unknown file."""
    if source.get("kind") == GENERATED:
        return f"seed {source.get('seed')}, {source.get('n')} items per subtask"
    return str(source.get("file") or "")


def stand_in_caveat(task: str, reason: str, detail: str) -> Caveat:
    """The caveat of an offline stand-in (:func:`offline_stand_ins`) of a task run."""
    return Caveat(f"{task}: {reason}{f' ({detail})' if detail else ''}", reason, task, detail)


def subset_caveat(task: str, run: TaskRun) -> Caveat | None:
    """The caveat of a run that asked only part of the task's dataset, or of merged shards that miss items of it
    (naming the doc ids); None for a full run."""
    if run.missing:
        detail = f"items {id_ranges(run.missing)} of {run.n_dataset}"
        return Caveat(f"{task}: shards miss {detail}; cells left blank", SHARD_GAP, task, detail)
    if not run.subset:
        return None
    asked = [f"--limit {run.limit:g}"] if run.limit is not None else []
    asked += [f"--offset {run.offset}"] if run.offset else []
    flags = " ".join(asked)
    detail = f"{run.n}{f' of {run.n_dataset}' if run.n_dataset is not None else ''} items"
    return Caveat(f"{task}: {detail} ({flags})", f"part of the dataset ({flags})", task, detail)


def compared_caveat(task: str, name: str, value: object, reference: object | None) -> Caveat:
    """The caveat of a task run whose `name` (items, scorer version, ...) is `value` where most rows have
    `reference` (None: no value is shared by most rows)."""
    detail = f"{value} ({f'most rows: {reference}' if reference is not None else 'rows disagree'})"
    return Caveat(f"{task}: {name} {detail}", f"other {name} than most rows", task, detail)


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
    found: dict[SampleSource, list[Caveat]] = {}
    tasks = sorted({task for m in models.values() for task in m.runs})
    for task in tasks:
        runs = {m.config_id: m.runs[task] for m in models.values() if task in m.runs}
        for config, run in runs.items():
            if caveat := subset_caveat(task, run):
                found.setdefault((config, task), []).append(caveat)
        for config, run in runs.items():
            for reason, detail in offline_stand_ins(task, run).items():
                found.setdefault((config, task), []).append(stand_in_caveat(task, reason, detail))
        for name, value_of in COMPARED:
            values = {config: value for config, run in runs.items() if (value := value_of(run)) is not None}
            for config, reference in differing(values).items():
                found.setdefault((config, task), []).append(compared_caveat(task, name, values[config], reference))
    return {source: tuple(reasons) for source, reasons in found.items()}


def subjects_text(caveats: Iterable[Caveat]) -> str:
    """What caveats of one reason concern, the subjects of one detail together: ``3 of 9 items in a, b; 3 of 5
    items in c``, ``a, b`` for subjects without a detail ('' when none names a subject or a detail)."""
    by_detail: dict[str, list[str]] = {}
    for caveat in caveats:
        subjects = by_detail.setdefault(caveat.detail, [])
        subjects += [caveat.subject] if caveat.subject and caveat.subject not in subjects else []
    parts = (" in ".join(p for p in (detail, ", ".join(subjects)) if p) for detail, subjects in by_detail.items())
    return "; ".join(p for p in parts if p)


def mark_boards(boards: Iterable[Board], caveats: Caveats) -> None:
    """Give every cell the caveats of the task runs its samples come from (``Row.caveats``), after those its
    board already gave it (a value's own caveat, such as a fit that did not converge); a cell with a
    :data:`BLANKING` caveat loses its value and interval."""
    for board in boards:
        for row in board.rows:
            for key, cell in row.cells.items():
                own = row.caveats.get(key, ())
                reasons = sorted({r for source in cell.sources for r in caveats.get(source, ())} - set(own))
                if reasons:
                    row.caveats[key] = (*own, *reasons)
                if any(Caveat.of(reason).reason in BLANKING for reason in reasons):
                    row.values[key], row.intervals[key] = None, None


def strict_errors(boards: Sequence[Board]) -> list[str]:
    """One line per marked cell (``board / row / key: reasons``): what ``--strict`` refuses."""
    return [
        f"{board.key} / {row.label} / {key}: {'; '.join(reasons)}"
        for board in boards
        for row in board.rows
        for key, reasons in row.caveats.items()
    ]
