"""Leaderboard tables laid out like the papers' tables, with bootstrap intervals and split-half checks.

A `Board` is what gets rendered (Markdown/CSV/TeX/HTML). A benchmark builds its boards from `Entry`s: one
model (or model + protocol), its per-unit features, and a row function over the unit means, the paper-level
roll-up its registry entry names (``benchmarks.paper_score``). Each benchmark's boards and figures come from
its ``benchmarks/<b>/leaderboard.py``, a module implementing :class:`BenchmarkLeaderboard`.

Every cell also knows the samples behind it (:class:`CellSamples`: how many, how many invalid and why, how many
the model could not run), found by asking the row function which of its values each unit moves. A cell none
of whose samples was scored has no value, whatever the roll-up computed from the zeros its failures count as,
and neither has an average that needs such a unit (docs/scoring.md, "Missing and invalid parts in averages").
"""

from __future__ import annotations

import argparse
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from lmms_eval_unify.reports.figure import Rendered
from lmms_eval_unify.reports.results_io import ModelResults
from lmms_eval_unify.scoring.aggregate import Score
from lmms_eval_unify.scoring.resample import (
    Interval,
    RowFn,
    bootstrap,
    percentile_interval,
    rank_agreement,
    score,
    split_halves,
)
from lmms_eval_unify.scoring.samples import Features, feature_means, n_samples

Column = tuple[str, tuple[str, ...]]  # header, value keys (two keys print as "a/b")
PERCENT: Interval = (0.0, 100.0)
"""The range of a score on the papers' 0-100 scale."""


@dataclass
class Options:
    """Resampling settings shared by every benchmark: bootstrap replicates (0 = no intervals), seed, and the
    split-half check. A benchmark's own settings are its flags (`BenchmarkLeaderboard.add_arguments`)."""

    replicates: int = 1000
    seed: int = 0
    split_half: bool = False


SampleSource = tuple[str, str]
"""Where a unit's samples come from: (the configuration's ``config_id``, the task)."""


@dataclass(frozen=True)
class CellSamples:
    """The samples behind one cell: `n` in all, `invalid` (failure reason -> samples that could not be
    scored, the model's samples marked unsupported included), `unsupported` (samples of tasks the model
    could not run at all), `sources` (the configurations' tasks they come from), `empty_parts` (the units it
    reads that the model ran and none of whose samples was scored) and whether the value is `withheld` because
    it needs one of them (:func:`withheld_cells`)."""

    n: int = 0
    invalid: Mapping[str, int] = field(default_factory=dict)
    unsupported: int = 0
    sources: frozenset[SampleSource] = frozenset()
    empty_parts: frozenset[str] = frozenset()
    withheld: bool = False

    @classmethod
    def of(
        cls,
        failures: Sequence[str],
        unit_supported: bool = True,
        sources: Sequence[SampleSource] = (),
        unit: str = "",
    ) -> CellSamples:
        """The samples of one unit (named `unit`) from each sample's failure reason ('' = scored)."""
        if not unit_supported:
            return cls(len(failures), {}, len(failures), frozenset(sources))
        empty = frozenset([unit]) if failures and all(failures) else frozenset()
        return cls(len(failures), dict(Counter(r for r in failures if r)), 0, frozenset(sources), empty)

    def __add__(self, other: CellSamples) -> CellSamples:
        return CellSamples(
            self.n + other.n,
            dict(Counter(self.invalid) + Counter(other.invalid)),
            self.unsupported + other.unsupported,
            self.sources | other.sources,
            self.empty_parts | other.empty_parts,
            self.withheld or other.withheld,
        )

    @property
    def n_invalid(self) -> int:
        """Samples of supported tasks that could not be scored."""
        return sum(self.invalid.values())

    @property
    def scored(self) -> int:
        """Samples that were scored."""
        return self.n - self.n_invalid - self.unsupported

    @property
    def unscored(self) -> bool:
        """Whether the cell has samples and none of them was scored, or its value needs a unit none of whose
        samples was scored (`withheld`): its value is never shown."""
        return self.n > 0 and (self.scored == 0 or self.withheld)


@dataclass
class Row:
    """One rendered table row: its label, its values (None = '-'), their 95% intervals, the samples behind
    each value (none for values that are not built from samples) and their comparability caveats."""

    label: str
    values: dict[str, float | None]
    intervals: dict[str, Interval | None] = field(default_factory=dict)
    cells: dict[str, CellSamples] = field(default_factory=dict)
    caveats: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Value key -> how its samples are not comparable with the other rows' or with the full dataset
    (``reports.comparability``); absent when they are."""


@dataclass
class Board:
    """One table: `key` names its CSV, `columns` are (header, value keys) pairs, `notes` print below it,
    `ranges` bound the values of keys with a known scale (intervals are clipped to them)."""

    key: str
    title: str
    columns: list[Column]
    rows: list[Row]
    notes: list[str] = field(default_factory=list)
    ranges: Mapping[str, Interval] = field(default_factory=dict)

    def value_keys(self) -> list[str]:
        """Every value key of the columns, in column order."""
        return [k for _, keys in self.columns for k in keys]

    def interval(self, row: Row, key: str) -> Interval | None:
        """The row's 95% interval of `key`, clipped to the key's range: a bootstrap of a score whose samples
        leave its scale (e.g. a raw CLIP logit below 0) cannot reach outside it."""
        interval = row.intervals.get(key)
        bounds = self.ranges.get(key)
        if interval is None or bounds is None:
            return interval
        low, high = (min(max(v, bounds[0]), bounds[1]) for v in interval)
        return low, high


def ranges(keys: Sequence[str], bounds: Interval = PERCENT) -> dict[str, Interval]:
    """The same range for every key (by default the papers' 0-100 scale)."""
    return dict.fromkeys(keys, bounds)


@dataclass
class Entry:
    """One scored row: a model's units (tasks or task pairs), how to turn their means into a row, each
    unit's per-sample failure reasons (``ModelResults.failures``; a unit listed there but absent from
    `units` is one the model could not run) and where each unit's samples come from (:func:`unit_sources`)."""

    label: str
    units: dict[str, Features]
    row_fn: RowFn
    pair_key: Callable[[str], str] = str
    failures: Mapping[str, Sequence[str]] = field(default_factory=dict)
    sources: Mapping[str, Sequence[SampleSource]] = field(default_factory=dict)


@dataclass
class Scored:
    """An evaluated entry: point values, bootstrap replicates (None without), split halves (None without) and
    the samples behind each value (empty without failure reasons)."""

    label: str
    values: dict[str, Score]
    replicates: dict[str, Score] | None
    halves: tuple[dict, dict] | None
    cells: dict[str, CellSamples] = field(default_factory=dict)


def task_failures(res: ModelResults, tasks: Mapping[str, str]) -> dict[str, list[str]]:
    """``{unit: each sample's failure reason}`` of the tasks the model ran; `tasks` maps unit -> task name."""
    return {unit: failures for unit, task in tasks.items() if (failures := res.failures(task)) is not None}


def unit_sources(res: ModelResults, tasks: Mapping[str, str | Sequence[str]]) -> dict[str, list[SampleSource]]:
    """``{unit: where its samples come from}``; `tasks` maps unit -> the task (or tasks) it reads."""
    return {
        unit: [(res.config_id, t) for t in ([names] if isinstance(names, str) else names)]
        for unit, names in tasks.items()
    }


def evaluate(entry: Entry, options: Options) -> Scored:
    """Point values, bootstrap replicates, split halves and the samples behind each value of one entry; a
    value none of whose samples was scored, or that needs a unit none of whose samples was scored
    (:func:`withheld_cells`), is withheld (None), with its replicates."""
    units = {entry.pair_key(u): f for u, f in entry.units.items()}
    fn = _rekeyed(entry)
    replicates = bootstrap(units, fn, options.replicates, options.seed) if options.replicates else None
    halves = split_halves(units, fn, options.seed) if options.split_half else None
    values = score(units, fn)
    cells = withheld_cells(entry, cell_samples(entry, values))
    unscored = {k for k, c in cells.items() if c.unscored}
    values = {k: None if k in unscored else v for k, v in values.items()}
    if replicates is not None:
        replicates = {k: None if k in unscored else v for k, v in replicates.items()}
    return Scored(entry.label, values, replicates, halves, cells)


class _UnknownMeans(dict):
    """Feature means of a unit that are all unknown (NaN): a roll-up that reads the unit gets NaN."""

    def __missing__(self, key: str) -> float:
        return math.nan

    def get(self, key: str, default: object = None) -> float:
        return math.nan


def cell_samples(entry: Entry, values: Mapping[str, Score]) -> dict[str, CellSamples]:
    """The samples behind each value of the entry's row: those of every unit the value reads. A value reads a
    unit when it moves as the unit's means turn unknown (NaN) or the unit is left out; an unsupported unit is
    put in with unknown means. Values that read no unit (or an entry without failure reasons) get none."""
    means = {u: feature_means(f) for u, f in entry.units.items()}
    sizes = {u: n_samples(f) for u, f in entry.units.items()}
    cells: dict[str, CellSamples] = {}
    for unit, failures in entry.failures.items():
        trials = [({**means, unit: _UnknownMeans()}, {**sizes, unit: len(failures)})]
        if unit in means:
            others = [u for u in means if u != unit]
            trials.append(({u: means[u] for u in others}, {u: sizes[u] for u in others}))
        readers: set[str] = set()
        with np.errstate(all="ignore"):
            for trial_means, trial_sizes in trials:
                row = entry.row_fn(trial_means, trial_sizes)
                readers |= {k for k, v in values.items() if not _same(v, row.get(k))}
        samples = CellSamples.of(failures, unit in entry.units, entry.sources.get(unit, ()), unit)
        for key in readers:
            cells[key] = cells.get(key, CellSamples()) + samples
    return cells


def withheld_cells(entry: Entry, cells: Mapping[str, CellSamples]) -> dict[str, CellSamples]:
    """`cells` with each value that reads a unit none of whose samples was scored (``CellSamples.empty_parts``)
    marked `withheld` when it is unknown (NaN) once those units' means are: whatever the roll-up does with a part
    the model cannot do (MME-U counts it as 0), such a unit is no measurement of the model, so no average is made
    from it."""
    empty = {u for cell in cells.values() for u in cell.empty_parts}
    if not empty:
        return dict(cells)
    means = {u: _UnknownMeans() if u in empty else feature_means(f) for u, f in entry.units.items()}
    with np.errstate(all="ignore"):
        row = entry.row_fn(means, {u: n_samples(f) for u, f in entry.units.items()})
    return {k: replace(c, withheld=True) if c.empty_parts and _unknown(row.get(k)) else c for k, c in cells.items()}


def _unknown(value: Score) -> bool:
    """Whether a roll-up value is missing or not finite."""
    return value is None or not bool(np.all(np.isfinite(value)))


def _same(a: Score, b: Score) -> bool:
    """Whether two point values are equal (NaN equal to NaN, None only to None)."""
    if a is None or b is None:
        return a is b
    if isinstance(a, float) and isinstance(b, float):  # the common case, 30x faster than numpy's
        return a == b or (a != a and b != b)
    return bool(np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float), equal_nan=True))


def combined_cells(*scored: Scored) -> dict[str, CellSamples]:
    """The samples behind values computed from several scored rows (a difference, a best-of), per key."""
    cells: dict[str, CellSamples] = {}
    for s in scored:
        for key, samples in s.cells.items():
            cells[key] = cells.get(key, CellSamples()) + samples
    return cells


def _rekeyed(entry: Entry) -> RowFn:
    """Row function over pair-keyed units (pair keys only choose the resampling index)."""
    original = {entry.pair_key(u): u for u in entry.units}

    def fn(means, sizes):
        return entry.row_fn({original[k]: v for k, v in means.items()}, {original[k]: v for k, v in sizes.items()})

    return fn


def to_row(scored: Scored, label: str | None = None) -> Row:
    """The rendered row of a scored entry: finite values (None for missing), their 95% intervals and the
    samples behind them."""
    intervals = {k: percentile_interval(v) for k, v in (scored.replicates or {}).items()}
    values = {k: finite_float(v) for k, v in scored.values.items()}
    return Row(label or scored.label, values, intervals, dict(scored.cells))


def finite_float(value: Score) -> float | None:
    """A value as a board cell: a float, or None when it is missing or not finite."""
    return None if value is None or not np.isfinite(value) else float(value)


def split_half_boards(key: str, title: str, scored: list[Scored], columns: list[str]) -> list[Board]:
    """Split-half stability (MME-U Appendix B): per-model scores on halves A/B and rank agreement."""
    halves = [(s.label, s.halves) for s in scored if s.halves]
    per_model = [
        Row(f"{name} / {label}", {c: finite_float(h.get(c)) for c in columns})
        for name, half in (("Split A", 0), ("Split B", 1))
        for label, pair in halves
        for h in [pair[half]]
    ]
    agreement = []
    for c in columns:
        read = [(pair[0].get(c), pair[1].get(c)) for _, pair in halves]
        pairs = [(a, b) for a, b in read if a is not None and b is not None]
        tau, rho = rank_agreement([a for a, _ in pairs], [b for _, b in pairs])
        agreement.append(
            Row(f"{c} (n={len(pairs)})", {"Kendall τ_b": finite_float(tau), "Spearman ρ": finite_float(rho)})
        )
    note = "Each unit's samples are split into the same two random halves for every model (seeded)."
    return [
        Board(
            f"{key}_split_half",
            f"{title}: split-half scores",
            [(c, (c,)) for c in columns],
            per_model,
            [note],
        ),
        Board(
            f"{key}_split_half_agreement",
            f"{title}: split-half rank agreement (half A vs half B across models)",
            [(h, (h,)) for h in ("Kendall τ_b", "Spearman ρ")],
            agreement,
            ["Rows are scores; n = models scored on both halves. '-' = undefined (fewer than two distinct scores)."],
        ),
    ]


Figure = tuple[str, Rendered]
"""A figure's title (its caption on the HTML page) and its rendering."""
Section = tuple[list[Board], list[Figure]]
"""One benchmark's part of the leaderboard: its boards and its figures, each in print order."""
Finish = Callable[[], Section]
"""Completes a started benchmark section (waiting for whatever `BenchmarkLeaderboard.start` set running)."""


class BenchmarkLeaderboard(Protocol):
    """The interface of every ``lmms_eval_unify/benchmarks/<b>/leaderboard.py`` (module-level functions).

    ``lmms-eval-unify leaderboard`` adds every registered benchmark's flags to its parser, merges the display
    names they supply, then calls `start` for each chosen benchmark in registry order before calling any of
    the returned `Finish` functions, in the same order: work a benchmark starts in `start` (e.g. a fit in a
    child process) runs while the benchmarks after it build their boards.
    """

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the benchmark's own flags (names unique across benchmarks; none if it needs none)."""

    def labels(self, args: argparse.Namespace) -> dict[str, str]:
        """``{model: display name}`` supplied through the benchmark's flags (``--labels`` wins); a model is named
        as ``--labels`` names it (recorded name, automatic label or ``name@<configuration hash>``)."""

    def start(
        self,
        models: Mapping[str, ModelResults],
        shown: Mapping[str, str],
        args: argparse.Namespace,
        options: Options,
        plots: bool,
    ) -> Finish:
        """Begin the benchmark's boards (and, with `plots`, figures) over `models` (one per model configuration),
        keyed by display name; `shown` maps the names a configuration may be given by in the benchmark's own
        files (its recorded name when the model has one configuration, its automatic label, its
        ``name@<configuration hash>``) to display names; `args` holds the benchmark's own parsed flags."""
