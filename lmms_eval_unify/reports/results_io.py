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

import json
import os
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lmms_eval_unify.benchmarks import BENCHMARKS, part
from lmms_eval_unify.generation.media import configuration_folder
from lmms_eval_unify.integration.run_context import MEDIA_SUBDIR
from lmms_eval_unify.output.record import parse_output
from lmms_eval_unify.scoring.samples import UNSUPPORTED_KEY, is_unsupported, sample_unsupported
from lmms_eval_unify.scoring.task_aggregations import failure_reason

RESULTS_SUFFIX = "_results.json"
TASK_PREFIXES = tuple(part(b, "spec").TASK_PREFIX for b in BENCHMARKS)
"""Task-name prefixes of the registered benchmarks; tasks without one are not read."""
CONFIGURATION_FOLDER = re.compile(r"^(?P<model>.+)-(?P<hash>[0-9a-f]{10})$")
"""A media folder of one of our model configurations: ``<model>-<first 10 hex of sha256(describe())>``."""
UNSUPPORTED = UNSUPPORTED_KEY
"""The failure reason of a sample the model could not run."""


@dataclass
class ModelResults:
    """Everything read for one model configuration: task -> sample rows (sorted by doc_id), the tasks it
    could not do, and what identifies the configuration."""

    model: str
    samples: dict[str, list[dict]] = field(default_factory=dict)
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

    def supported(self, task: str) -> list[dict] | None:
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
    """``describe()`` from the configuration's ``model.json``: in the recorded folder, or in a folder of the
    same name under ``unify_media`` beside the results file or one level up (a moved run); None if absent."""
    name = Path(root).name
    for folder in (Path(root), *(base / MEDIA_SUBDIR / name for base in results_file.parents[:2])):
        try:
            description = json.loads((folder / "model.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(description, dict):
            return description
    return None


def configuration(results: Mapping, results_file: Path, rows: Iterable[Mapping]) -> tuple[dict[str, object], str]:
    """(what the run's model configuration is, its hash): our adapters' media folder hash and ``describe()``
    when the records name the folder, else the ``--model`` name with the ``--model_args`` and their hash (the
    same recipe, sha256 of the sorted JSON)."""
    config = results.get("config") or {}
    arguments = {"model": config.get("model") or "", **parse_model_args(config.get("model_args"))}
    root = record_root(rows)
    if root:
        return described(root, results_file) or arguments, CONFIGURATION_FOLDER.match(Path(root).name)["hash"]
    return arguments, configuration_folder("", arguments).rpartition("-")[2]


def load_results(paths: Sequence[Path], warn=sys.stderr) -> dict[str, ModelResults]:
    """Per model configuration, the samples of every benchmark task found; a later run of a task replaces an
    earlier one of the same configuration (with a warning). Keys are the recorded model name, or, for a
    model with several configurations, the name with the arguments that differ (``distinction``)."""
    models: dict[str, ModelResults] = {}
    task_sources: dict[tuple[str, str], Path] = {}
    for results_file in find_results_files(paths):
        results = json.loads(results_file.read_text(encoding="utf-8"))
        prefix = results_file.name[: -len(RESULTS_SUFFIX)]
        groups = {g for g, subtasks in results.get("group_subtasks", {}).items() if subtasks}
        tasks = {}
        for task in results.get("results", {}):
            if not task.startswith(TASK_PREFIXES) or task in groups:
                continue
            samples_file = results_file.with_name(f"{prefix}_samples_{task}.jsonl")
            if not samples_file.exists():
                print(f"warning: {results_file}: no samples for {task}; rerun with --log_samples", file=warn)
                continue
            tasks[task] = read_samples(samples_file)
        label = model_label(results)
        described_as, config_hash = configuration(results, results_file, (r for rows in tasks.values() for r in rows))
        config_id = f"{label}@{config_hash}"
        entry = models.setdefault(config_id, ModelResults(label, configuration=described_as, config_id=config_id))
        entry.sources.append(results_file)
        for task, rows in tasks.items():
            earlier = task_sources.get((config_id, task))
            if earlier is not None:
                print(
                    f"warning: {task} of {config_id} is in {earlier} and {results_file}; keeping the newer "
                    f"({results_file.name})",
                    file=warn,
                )
            task_sources[config_id, task] = results_file
            entry.samples[task] = rows
            if is_unsupported(rows):
                entry.unsupported.add(task)
            else:
                entry.unsupported.discard(task)
    return {name: m for name, m in zip(_distinguish(models.values()), models.values(), strict=True)}


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
    """Rows of one samples JSONL, sorted by doc_id so resampling indices pair the same docs across models."""
    with path.open(encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return sorted(rows, key=lambda r: r.get("doc_id", 0))
