"""Read lmms-eval output folders (`--output_path ... --log_samples`) into per-configuration, per-task samples.

lmms-eval 0.7.3 writes `<output_path>/<model_name_sanitized>/<date_id>_results.json` and, with
`--log_samples`, one `<date_id>_samples_<task>.jsonl` per task beside it. Each JSONL row holds
`doc_id`, `target`, `filtered_resps` and every key `process_results` returned; those keys are the
per-sample records the roll-ups read (docs/scoring.md).

A model configuration, not a model name, is what one set of results belongs to. Our adapters write every
output under ``<media base>/<model>-<hash of describe()>`` and name that folder in each record's ``root``,
with ``describe()`` itself in its ``model.json``; for other models the configuration is the ``--model`` name
and the ``--model_args`` that lmms-eval records in ``config``. Runs of one configuration are merged (the
newest run of a task wins, with a warning); two configurations of one model name stay apart, each named
after the arguments that tell it from the others (``echo_painter (seed=1)``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from array import array
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import repeat
from pathlib import Path
from typing import Any, overload

from lmms_eval_unify import gate
from lmms_eval_unify.benchmarks import BENCHMARKS, part
from lmms_eval_unify.generation.media import MODEL_PROVENANCE_KEY, configuration_folder
from lmms_eval_unify.judges import FAILED
from lmms_eval_unify.output.record import parse_output
from lmms_eval_unify.redaction import redact_secrets, redact_text
from lmms_eval_unify.run.provenance import NOT_PUBLISHED, PROVENANCE_KEY
from lmms_eval_unify.run.saved import saved_media_roots
from lmms_eval_unify.scoring.samples import UNSUPPORTED_KEY, is_unsupported, sample_unsupported
from lmms_eval_unify.scoring.task_aggregations import failure_reason

RESULTS_SUFFIX = "_results.json"
SEED_KEYS = ("random_seed", "numpy_seed", "torch_seed", "fewshot_seed")
"""The seeds lmms-eval records in a results file's ``config``."""
TASK_PREFIXES = tuple(part(b, "spec").TASK_PREFIX for b in BENCHMARKS)
"""Task-name prefixes of the registered benchmarks; tasks without one are not read."""
CONFIGURATION_FOLDER = re.compile(r"^(?P<model>.+)-(?P<hash>[0-9a-f]{10})$")
"""A media folder of one of our model configurations: ``<model>-<first 10 hex of sha256(describe())>``."""
UNSUPPORTED = UNSUPPORTED_KEY
"""The failure reason of a sample the model could not run."""


@dataclass(frozen=True)
class RunInfo:
    """One lmms-eval run (one results file) as its provenance needs it: where it is, when and with which
    software it ran, and the settings that shape its outputs."""

    results_file: Path
    date: str = ""
    git_checkout: str = ""
    """What lmms-eval records as ``lmms_eval_version``: the branch and commit of the git checkout the run started
    in (``main@1a2b3c4d``), not lmms-eval's version, which the run's provenance holds (``ours["lmms_eval"]``)."""
    ours: Mapping[str, object] = field(default_factory=dict)
    """What :func:`lmms_eval_unify.run.provenance.run_provenance` stamped at run time (version, commit,
    lmms-eval's version, each task's data source); empty for runs made before it existed."""
    model_args: str = ""
    seeds: Mapping[str, object] = field(default_factory=dict)
    gen_kwargs: str = ""

    @classmethod
    def of(cls, results: Mapping, results_file: Path) -> RunInfo:
        """The provenance of one results file."""
        config = results.get("config") or {}
        args = config.get("model_args")
        return cls(
            results_file=results_file,
            date=str(results.get("date") or ""),
            git_checkout=str(results.get("lmms_eval_version") or ""),
            ours=dict(results.get(PROVENANCE_KEY) or {}),
            model_args=redact_text(args if isinstance(args, str) else json.dumps(args, sort_keys=True, default=str)),
            seeds={k: config[k] for k in SEED_KEYS if k in config},
            gen_kwargs=str(config.get("gen_kwargs") or ""),
        )


@dataclass(frozen=True)
class TaskRun:
    """What one task's cells rest on in one run: the samples read, the items they are, how the task was scored
    and judged. Two rows are comparable on a task when these agree (``reports.comparability``)."""

    run: RunInfo
    n: int
    """Samples read (repeats and all)."""
    n_dataset: int | None = None
    """Documents in the task's dataset as loaded (lmms-eval's ``n-samples.original``); None when not recorded."""
    limit: float | None = None
    offset: int = 0
    items: str = ""
    """Fingerprint of the items asked: sha256 of every sample's doc id, prompt and target (:func:`item_fingerprint`)."""
    version: str = ""
    """The scorer version: the task's ``metadata.version``."""
    variant: str = ""
    judges: tuple[str, ...] = ()
    """Every judge that gave a verdict, as ``model (template vN)``."""
    dataset: Mapping[str, object] = field(default_factory=dict)
    """The task config's ``dataset_path``, ``dataset_name`` and ``dataset_kwargs``: what its YAML names."""
    source: Mapping[str, object] = field(default_factory=dict)
    """The data the run read, as it recorded it (``provenance``: Hub repository, prepared release, generated data
    with its seed and n, or unknown local files); empty for runs made before it was recorded."""
    parts: tuple[RunInfo, ...] = ()
    """The runs of the shards merged into this run (``--offset``/``--limit`` jobs); empty for one run."""
    missing: tuple[int, ...] = ()
    """Doc ids of the dataset that no shard merged into this run asked (a shard gap): its cells are left blank."""

    @property
    def runs(self) -> tuple[RunInfo, ...]:
        """The runs the task's samples come from (every shard's)."""
        return self.parts or (self.run,)

    @property
    def files(self) -> tuple[Path, ...]:
        """The results files the task's samples come from."""
        return tuple(run.results_file for run in self.runs)

    @property
    def subset(self) -> bool:
        """Whether the run asked only part of the task's dataset (``--limit`` or ``--offset``)."""
        return bool(self.offset) or (self.n_dataset is not None and self.n < self.n_dataset and self.limit is not None)


@dataclass
class ModelResults:
    """Everything read for one model configuration: task -> sample rows (sorted by doc_id), the tasks it
    could not do, and what identifies the configuration."""

    model: str
    samples: dict[str, Sequence[Mapping]] = field(default_factory=dict)
    """Task -> its rows: :class:`SampleRows` when read from files, in which case without any ``drop`` key."""
    unsupported: set[str] = field(default_factory=set)
    sources: list[Path] = field(default_factory=list)
    configuration: dict[str, object] = field(default_factory=dict)
    """What the configuration is: ``describe()`` of our adapters (its ``model.json``), else the ``--model``
    name and the ``--model_args``."""
    config_id: str = ""
    """``<recorded model name>@<configuration hash>``: the configuration's name that never changes."""
    distinction: str = ""
    """The arguments that tell this configuration from the model's others (``seed=1``); '' when it is the
    model's only configuration."""
    runs: dict[str, TaskRun] = field(default_factory=dict)
    """Task -> what its samples rest on (the run they came from, items, scorer version, judges)."""
    replaced: dict[str, list[TaskRun]] = field(default_factory=dict)
    """Task -> the earlier runs of it that a newer run replaced, oldest first (shards merged are not replaced)."""
    provenance: list[object] = field(default_factory=list)
    """What the runs learnt about the model beyond its configuration (``UnifiedModel.provenance``: server and
    version, weights revision, official code's commit), each distinct entry once, oldest first."""

    def supported(self, task: str) -> Sequence[Mapping] | None:
        """The task's rows, or None if the model did not run it or could not do it."""
        return None if task in self.unsupported else self.samples.get(task)

    def failures(self, task: str) -> list[str] | None:
        """Each sample's failure reason ('' when it was scored, ``unsupported`` when the model could not run
        it), or None if the model did not run the task."""
        rows = self.samples.get(task)
        return None if rows is None else [sample_failure(row) for row in rows]


def sample_failure(row: Mapping) -> str:
    """Why a sample could not be scored: its ``invalid_outputs`` reason, ``unsupported``, or '' if it was."""
    return UNSUPPORTED if sample_unsupported(row) else failure_reason(row.get("invalid_outputs"))


def find_results_files(paths: Iterable[Path]) -> list[Path]:
    """All `*_results.json` under the given folders (or the files themselves), oldest first."""
    found: set[Path] = set()
    for path in map(Path, paths):
        if path.is_file() and path.name.endswith(RESULTS_SUFFIX):
            found.add(path)
        elif path.is_dir():
            found.update(path.rglob(f"*{RESULTS_SUFFIX}"))
        else:
            raise FileNotFoundError(f"no lmms-eval results at {path}")
    return sorted(found, key=lambda p: (p.name, str(p)))


def model_label(results: dict) -> str:
    """The model's name as lmms-eval recorded it: `model_name` (from model_args), else the `--model` name."""
    return results.get("model_name") or results.get("config", {}).get("model") or "unknown-model"


def parse_model_args(model_args: object) -> dict[str, object]:
    """``--model_args`` as lmms-eval records them (``"k=v,k2=v2"``, or a dict when given programmatically)
    as a map; commas inside quotes, braces or brackets do not split."""
    if isinstance(model_args, Mapping):
        return {str(k): v for k, v in model_args.items()}
    text, parts, depth, quote, start = str(model_args or "").strip(), [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    pairs = (p.split("=", 1) for p in parts if p.strip())
    return {kv[0].strip(): (kv[1].strip() if len(kv) == 2 else "") for kv in pairs}


def record_root(rows: Iterable[Mapping]) -> str:
    """The media folder our adapters name in their records (``root``), '' when no row has one."""
    for row in rows:
        raw = row.get("filtered_resps")
        raw = raw[0] if isinstance(raw, list) and raw else raw
        if isinstance(raw, str) and raw.startswith("{"):
            root = parse_output(raw).record.root
            if root and CONFIGURATION_FOLDER.match(Path(root).name):
                return root
    return ""


def described(root: str, results_file: Path) -> dict[str, object] | None:
    """The configuration's ``model.json`` (``describe()`` and its provenance list): in the recorded folder, or in
    a folder of the same name under ``unify_media`` beside the results file or one level up (a moved run); None
    if absent."""
    name = Path(root).name
    media = saved_media_roots([results_file.parent])  # read through the gate, only in the run's media folders
    for folder in (Path(root), *(base / name for base in media)):
        try:
            description = gate.read_json(folder / "model.json", "data_file", media)
        except gate.Refused:
            continue
        if isinstance(description, dict):
            return description
    return None


def configuration(
    results: Mapping, results_file: Path, rows: Iterable[Mapping]
) -> tuple[dict[str, object], str, list[object]]:
    """(what the run's model configuration is, its hash, its provenance list): our adapters' media folder hash,
    ``describe()`` and provenance from ``model.json`` when the records name the folder, else the ``--model`` name
    with the ``--model_args`` and their hash (the same recipe, sha256 of the sorted JSON) and no provenance. Secrets
    in the arguments are redacted (a keyed hash) before anything is kept or hashed."""
    config = results.get("config") or {}
    arguments = redact_secrets({"model": config.get("model") or "", **parse_model_args(config.get("model_args"))})
    root = record_root(rows)
    folder = CONFIGURATION_FOLDER.match(Path(root).name) if root else None
    if folder is None:
        return arguments, configuration_folder("", arguments).rpartition("-")[2], []
    config_hash = folder["hash"]
    found = described(root, results_file)
    if found is None:
        return arguments, config_hash, []
    provenance = found.pop(MODEL_PROVENANCE_KEY, [])
    return found, config_hash, provenance if isinstance(provenance, list) else []


def load_results(paths: Sequence[Path], warn=None, drop: Collection[str] = ()) -> dict[str, ModelResults]:
    """Per model configuration, the samples of every benchmark task found. Runs of one configuration's task
    with no item in common are shards of one run and are merged (raising :class:`ShardError` when two runs share
    some items and each has its own; merged shards that miss items of the dataset keep the doc ids in
    ``TaskRun.missing``, with a warning, and only that task's cells are left blank); otherwise a later run
    of a task replaces an earlier one (with a warning). Keys are the recorded model name, or, for a
    model with several configurations, the name with the arguments that differ (``distinction``). The rows
    kept lack the `drop` keys (e.g. ``REQUEST_LOG_KEYS``), read only for the configuration and provenance. Warnings
    go to `warn` (default: ``sys.stderr`` at the time of the call)."""
    warn = warn or sys.stderr
    models: dict[str, ModelResults] = {}
    for results_file in find_results_files(paths):
        try:  # through the gate: a results file that is not a regular file or not a JSON object is skipped
            results = gate.read_json(results_file, "data_file", [results_file.parent])
            if not isinstance(results, dict):
                raise gate.Refused("malformed", results_file, "not an lmms-eval results object")
        except gate.Refused as refused:
            print(f"warning: skipped {refused}", file=warn)
            continue
        prefix = results_file.name[: -len(RESULTS_SUFFIX)]
        groups = {g for g, subtasks in results.get("group_subtasks", {}).items() if subtasks}
        tasks: dict[str, Sequence[Mapping]] = {}
        for task in results.get("results", {}):
            if not task.startswith(TASK_PREFIXES) or task in groups:
                continue
            samples_file = results_file.with_name(f"{prefix}_samples_{task}.jsonl")
            if not samples_file.exists():
                print(f"warning: {results_file}: no samples for {task}; rerun with --log_samples", file=warn)
                continue
            tasks[task] = read_samples(samples_file)
        label = model_label(results)
        rows_read = (r for rows in tasks.values() for r in rows)
        described_as, config_hash, provenance = configuration(results, results_file, rows_read)
        config_id = f"{label}@{config_hash}"
        entry = models.setdefault(config_id, ModelResults(label, configuration=described_as, config_id=config_id))
        entry.sources.append(results_file)
        entry.provenance += [item for item in provenance if item not in entry.provenance]
        run = RunInfo.of(results, results_file)
        for task, rows in tasks.items():
            part = task_run(results, task, rows, run)
            earlier = entry.runs.get(task)
            if earlier is not None and shards(task, config_id, entry.samples[task], earlier, rows, part):
                rows = sorted([*entry.samples[task], *rows], key=lambda r: r.get("doc_id", 0))
                part = merged_run(earlier, part)
            elif earlier is not None:
                entry.replaced.setdefault(task, []).append(earlier)
                print(
                    f"warning: {task} of {config_id} is in {earlier.run.results_file} and {results_file}; keeping "
                    f"the newer ({results_file.name})",
                    file=warn,
                )
            entry.samples[task] = SampleRows(rows, drop)
            entry.runs[task] = part
            if is_unsupported(rows):
                entry.unsupported.add(task)
            else:
                entry.unsupported.discard(task)
    for m in models.values():
        for task, merged in m.runs.items():
            if missing := coverage_gap(merged, m.samples[task]):
                m.runs[task] = replace(merged, missing=missing)
                print(f"warning: {shard_gap(task, m.config_id, m.runs[task])}; its cells are left blank", file=warn)
    return {name: m for name, m in zip(_distinguish(models.values()), models.values(), strict=True)}


class ShardError(ValueError):
    """Runs of one configuration's task that cannot be merged into one: items counted twice."""


def shards(
    task: str, config_id: str, kept: Sequence[Mapping], earlier: TaskRun, rows: Sequence[Mapping], part: TaskRun
) -> bool:
    """Whether a new run of a task is another shard of the same run (no item in common: merge them) rather than
    a re-run (the same items, or all of one's in the other: the newer replaces the older). Raises
    :class:`ShardError` naming the items two runs share when each also has items of its own."""
    before, after = doc_ids(kept), doc_ids(rows)
    if not before & after:
        return True
    if before <= after or after <= before:
        return False
    files = ", ".join(str(f) for f in (*earlier.files, part.run.results_file))
    raise ShardError(
        f"{task} of {config_id}: items {id_ranges(before & after)} are in two runs that each have items of their "
        f"own ({files}); give each shard its own --offset range, or remove one of the runs"
    )


def merged_run(earlier: TaskRun, part: TaskRun) -> TaskRun:
    """Two shards of a task as one run: their samples and items together, the first shard's settings, and the
    first shard's data source unless the other read data not known to be the published dataset."""
    return replace(
        earlier,
        source=next((s for s in (earlier.source, part.source) if s.get("kind") in NOT_PUBLISHED), earlier.source),
        n=earlier.n + part.n,
        limit=None,
        offset=0,
        items=combined_fingerprint(earlier.items, part.items),
        judges=tuple(dict.fromkeys((*earlier.judges, *part.judges))),
        parts=(*earlier.runs, part.run),
    )


def coverage_gap(run: TaskRun, rows: Sequence[Mapping]) -> tuple[int, ...]:
    """The doc ids of the dataset that no shard of a merged task asked (none for a task of one run)."""
    if len(run.parts) < 2 or run.n_dataset is None:
        return ()
    return tuple(sorted(set(range(run.n_dataset)) - doc_ids(rows)))


def shard_gap(task: str, config_id: str, run: TaskRun) -> str:
    """What a merged task's shards miss: the task, the configuration, the shards' files and the doc ids."""
    files = ", ".join(map(str, run.files))
    return (
        f"{task} of {config_id}: the {len(run.parts)} shards ({files}) miss items {id_ranges(run.missing)} of "
        f"{run.n_dataset} (run them with --offset/--limit, or leave the shards out)"
    )


def doc_ids(rows: Iterable[Mapping]) -> set[int]:
    """The doc ids of a task's rows."""
    return {int(row.get("doc_id", 0)) for row in rows}


def id_ranges(ids: Iterable[int], most: int = 8) -> str:
    """Doc ids as ranges (``0-39, 45``), the first `most` of them then a count."""
    spans: list[list[int]] = []
    for i in sorted(ids):
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    shown = [f"{a}-{b}" if a != b else str(a) for a, b in spans[:most]]
    return ", ".join(shown) + (f" and {len(spans) - most} more ranges" if len(spans) > most else "")


def task_run(results: Mapping, task: str, rows: Sequence[Mapping], run: RunInfo) -> TaskRun:
    """What the task's cells rest on, from its results file and its sample rows."""
    config = results.get("config") or {}
    task_config = (results.get("configs") or {}).get(task) or {}
    metadata = task_config.get("metadata") or {}
    original = ((results.get("n-samples") or {}).get(task) or {}).get("original")
    limit = config.get("limit")
    return TaskRun(
        run=run,
        n=len(rows),
        n_dataset=original if isinstance(original, int) else None,
        limit=float(limit) if isinstance(limit, int | float) else None,
        offset=int(config.get("offset") or 0),
        items=item_fingerprint(rows),
        version=str(metadata.get("version", (results.get("versions") or {}).get(task, ""))),
        variant=str(metadata.get("variant") or ""),
        judges=judges_of(rows),
        dataset={k: task_config[k] for k in ("dataset_path", "dataset_name", "dataset_kwargs") if k in task_config},
        source=recorded_source(run, task),
    )


def recorded_source(run: RunInfo, task: str) -> dict[str, object]:
    """The data source the run recorded for `task` (``provenance``), empty when it recorded none."""
    data = run.ours.get("data")
    source = data.get(task) if isinstance(data, Mapping) else None
    return dict(source) if isinstance(source, Mapping) else {}


def item_fingerprint(rows: Iterable[Mapping]) -> str:
    """16 hex digits identifying the items asked, whatever the model answered: the sum (mod 2^64) of sha256 of
    every sample's doc id, prompt (``input``) and target, so the fingerprint of shards merged
    (:func:`combined_fingerprint`) equals that of one run over the same items."""
    total = 0
    for row in rows:
        item = f"{row.get('doc_id')}\x1f{_as_text(row.get('input'))}\x1f{_as_text(row.get('target'))}"
        total += int.from_bytes(hashlib.sha256(item.encode()).digest()[:8], "big")
    return f"{total % 2**64:016x}"


def _as_text(value: object) -> str:
    """A prompt or target as the item fingerprint hashes it: a string as is, anything else as sorted JSON."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def combined_fingerprint(*fingerprints: str) -> str:
    """The item fingerprint of disjoint item sets together."""
    return f"{sum(int(f, 16) for f in fingerprints) % 2**64:016x}"


def judges_of(rows: Iterable[Mapping]) -> tuple[str, ...]:
    """Each judge whose verdict a sample records (``details`` entries with a ``template_id``), as
    ``model (template vN #digest)``, most used first (no ``#digest`` in samples from before it was recorded). A
    judgement that got no reply (``judge_failed``: the endpoint was down) names the judge asked, not one that
    answered, and is left out."""
    seen: Counter[str] = Counter()
    for row in rows:
        seen.update(_judge_entries(row.get("details"), depth=3))
    return tuple(name for name, _ in seen.most_common())


def _judge_entries(value: object, depth: int) -> Iterator[str]:
    """The judge log entries inside a sample's ``details`` (nested at most `depth` levels)."""
    if isinstance(value, Mapping):
        if "template_id" in value and value.get("model"):
            if value.get("status") == FAILED:
                return
            digest = f" #{value['template_digest']}" if value.get("template_digest") else ""
            yield f"{value['model']} ({value['template_id']} v{value.get('template_version', '?')}{digest})"
            return
        children: Iterable[object] = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return
    for child in children if depth else ():
        yield from _judge_entries(child, depth - 1)


def _distinguish(models: Iterable[ModelResults]) -> list[str]:
    """Each configuration's name (setting its ``distinction``): the recorded name when the model has one
    configuration, else the name with the arguments whose values differ among them, else ``config_id``."""
    models = list(models)
    by_name: dict[str, list[ModelResults]] = defaultdict(list)
    for m in models:
        by_name[m.model].append(m)
    for group in (g for g in by_name.values() if len(g) > 1):
        keys = sorted({k for m in group for k in m.configuration})
        differing = [k for k in keys if len({_shown_value(m.configuration, k) for m in group}) > 1]
        for m in group:
            m.distinction = ", ".join(
                f"{k}={_shown_value(m.configuration, k)}" if k in m.configuration else f"{k} unset" for k in differing
            )
        distinctions = [m.distinction for m in group]
        if not all(distinctions) or len(set(distinctions)) < len(group):
            for m in group:
                m.distinction = f"configuration {m.config_id.rpartition('@')[2]}"
    return [f"{m.model} ({m.distinction})" if m.distinction else m.model for m in models]


def _shown_value(configuration: Mapping[str, object], key: str) -> str:
    """An argument's value as a label shows it (a path by its last component)."""
    value = configuration.get(key)
    return short_name(value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str))


def looks_like_path(label: str) -> bool:
    """True for a model name that is a local path (absolute, ./ or ~/ relative, or existing on disk)."""
    return label.startswith(("/", "./", "../", "~")) or os.sep in label and Path(label).exists()


def short_name(recorded: str) -> str:
    """A recorded model name (or argument) as tables show it: a path by its last component, else unchanged."""
    return Path(recorded.rstrip("/")).name if looks_like_path(recorded) else recorded


def read_samples(path: Path) -> list[dict]:
    """Rows of one samples JSONL, sorted by doc_id so resampling indices pair the same docs across models. Read
    through the gate (a regular file in its folder); when the file does not parse as a whole, it is read line
    by line and each line that is cut, corrupt, too long or not an object with an integer ``doc_id`` is left
    out with a warning naming ``file:line`` (a file the gate refuses gives no rows and a warning)."""
    try:
        text = gate.read_text(path, "data_file", [path.parent])
        rows = json.loads("[" + ",".join(line for line in text.splitlines() if line.strip()) + "]")
        if all(isinstance(row, dict) and _is_doc_id(row.get("doc_id", 0)) for row in rows):
            return sorted(rows, key=lambda r: r.get("doc_id", 0))  # one decoder call: 2x faster than line by line
    except gate.Refused as refused:
        if refused.reason != "malformed":
            print(f"warning: skipped {refused}", file=sys.stderr)
            return []
    except (ValueError, RecursionError):
        pass
    rows = []
    for number, row in gate.jsonl_objects(path, [path.parent]):
        if isinstance(row, dict) and not _is_doc_id(row.get("doc_id", 0)):
            row = gate.Refused("malformed", f"{path}:{number}", "'doc_id' is not an integer")
        if isinstance(row, gate.Refused):
            print(f"warning: skipped {row}", file=sys.stderr)
        else:
            rows.append(row)
    return sorted(rows, key=lambda r: r.get("doc_id", 0))


def _is_doc_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


REQUEST_LOG_KEYS = ("doc", "arguments", "resps", "filtered_resps", "token_counts", "input_media", "doc_hash",
                    "input", "target")  # fmt: skip
"""What lmms-eval logs of the request and the raw response beside the keys ``process_results`` returned: the
bulk of a row, read by the gallery and the exports, never by the leaderboard's roll-ups (they read ``doc_id``
and the scorers' keys), so the leaderboard drops them once the configuration and provenance are read."""
_ABSENT = object()
"""A key missing from a row, in its column."""


class SampleRows(Sequence[dict]):
    """One task's rows (as :func:`read_samples` returns them) stored by column: a typed array for a key whose
    every value is a float (or every one an int), else a list (equal strings shared); reading a row builds a
    new dict. A list of small dicts costs ~0.7 KB a row, columns ~8 bytes a value: the leaderboard of 500 runs
    of every benchmark (5 million rows) fits in memory. Rows are read-only; `drop` names keys not kept."""

    __slots__ = ("_columns", "_length", "_complete")

    def __init__(self, rows: Sequence[Mapping], drop: Collection[str] = ()) -> None:
        keys = [k for k in dict.fromkeys(k for row in rows for k in row) if k not in drop]
        self._columns = {k: _column([row.get(k, _ABSENT) for row in rows]) for k in keys}
        self._length = len(rows)
        self._complete = not any(v is _ABSENT for c in self._columns.values() if isinstance(c, list) for v in c)
        """Whether every row has every key (rows are then built without checking)."""

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> dict: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict]: ...

    def __getitem__(self, index: int | slice) -> dict | list[dict]:
        if isinstance(index, slice):
            return [self[i] for i in range(self._length)[index]]
        position = range(self._length)[index]  # IndexError out of range, negative counts from the end
        return _present({k: column[position] for k, column in self._columns.items()})

    def __iter__(self) -> Iterator[dict]:
        if not self._columns:
            return iter([{} for _ in range(self._length)])
        rows = map(dict, map(zip, repeat(tuple(self._columns)), zip(*self._columns.values(), strict=True)))
        return rows if self._complete else map(_present, rows)

    def column(self, key: str) -> Sequence[Any]:
        """Every row's value of `key` (None where a row has none), as ``[row.get(key) for row in self]``."""
        column = self._columns.get(key)
        if column is None:
            return [None] * self._length
        return column if isinstance(column, array) else [None if v is _ABSENT else v for v in column]

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same rows (a list of dicts included)."""
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(other) == self._length and all(a == b for a, b in zip(self, other, strict=False))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SampleRows({self._length} rows, keys {list(self._columns)})"


def _present(row: dict) -> dict:
    """A row without the keys it does not have."""
    return {k: v for k, v in row.items() if v is not _ABSENT}


def _column(values: list[Any]) -> Sequence[Any]:
    """A column's compact form: ``array('d')`` if every value is a float, ``array('q')`` if every one is an int
    (bools and None stay in lists), else the list with equal strings shared."""
    kinds = set(map(type, values))
    if kinds == {float}:
        return array("d", values)
    if kinds == {int} and all(-(2**63) <= v < 2**63 for v in values):
        return array("q", values)
    if str in kinds:
        shared: dict[str, str] = {}
        return [shared.setdefault(v, v) if type(v) is str else v for v in values]
    return values
