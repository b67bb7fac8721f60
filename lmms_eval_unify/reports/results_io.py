"""Read lmms-eval output folders (`--output_path ... --log_samples`) into per-model, per-task samples.

lmms-eval 0.7.3 writes `<output_path>/<model_name_sanitized>/<date_id>_results.json` and, with
`--log_samples`, one `<date_id>_samples_<task>.jsonl` per task beside it. Each JSONL row holds
`doc_id`, `target`, `filtered_resps` and every key `process_results` returned; those keys are the
per-sample records the roll-ups read (docs/scoring.md).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lmms_eval_unify.scoring.samples import is_unsupported

RESULTS_SUFFIX = "_results.json"
BENCHMARK_PREFIXES = ("mme_unify_", "unig2u_", "uni_mmmu_", "gapeval_")


@dataclass
class ModelResults:
    """Everything read for one model label: task -> sample rows (sorted by doc_id), and unsupported tasks."""

    model: str
    samples: dict[str, list[dict]] = field(default_factory=dict)
    unsupported: set[str] = field(default_factory=set)
    sources: list[Path] = field(default_factory=list)

    def supported(self, task: str) -> list[dict] | None:
        """The task's rows, or None if the model did not run it or could not do it."""
        return None if task in self.unsupported else self.samples.get(task)


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


def read_samples(path: Path) -> list[dict]:
    """Rows of one samples JSONL, sorted by doc_id so resampling indices pair the same docs across models."""
    with path.open(encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return sorted(rows, key=lambda r: r.get("doc_id", 0))


def load_results(paths: Sequence[Path], warn=sys.stderr) -> dict[str, ModelResults]:
    """Per model label, the samples of every benchmark task found; later runs override earlier ones."""
    models: dict[str, ModelResults] = {}
    for results_file in find_results_files(paths):
        results = json.loads(results_file.read_text(encoding="utf-8"))
        label = model_label(results)
        entry = models.setdefault(label, ModelResults(label))
        entry.sources.append(results_file)
        prefix = results_file.name[: -len(RESULTS_SUFFIX)]
        groups = {g for g, subtasks in results.get("group_subtasks", {}).items() if subtasks}
        for task in results.get("results", {}):
            if not task.startswith(BENCHMARK_PREFIXES) or task in groups:
                continue
            samples_file = results_file.with_name(f"{prefix}_samples_{task}.jsonl")
            if not samples_file.exists():
                print(f"warning: {results_file}: no samples for {task}; rerun with --log_samples", file=warn)
                continue
            rows = read_samples(samples_file)
            entry.samples[task] = rows
            if is_unsupported(rows):
                entry.unsupported.add(task)
            else:
                entry.unsupported.discard(task)
    return models
