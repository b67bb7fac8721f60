"""The benchmark registry: the one place horizontal code (leaderboard, gallery, exports, judges, CLI) learns
which benchmarks exist and where each one's parts live.

A benchmark is a folder ``lmms_eval_unify/benchmarks/<name>/`` (plus ``tasks/<name>/`` and
``tests/benchmarks/<name>/``) and one line in :data:`ENTRIES`. The folder's ``__init__.py`` is its entry: its
``DISPLAY_NAMES``, ``PARTS`` (each part a zero-arg function importing its module on first call, so the
registry imports nothing heavy) and ``paper_score()`` (its paper-level roll-up). Its parts, by convention:

| module / file | what horizontal code takes from it |
|---|---|
| ``spec.py`` | torch-free facts: subtasks, metrics, task names, ``TASK_PREFIX``, ``metric_families(task)`` |
| ``paper.py`` | the paper roll-ups (pure functions over per-task means) |
| ``leaderboard.py`` | the paper's tables and figures from saved runs (``lmms-eval-unify leaderboard``) |
| ``export.py`` | the released exchange format (``lmms-eval-unify export``; ``reports.exports.BenchmarkExport``) |
| ``synthetic.py`` | ``rows(skill, rng, generates_images)``: synthetic samples for tests and benches, never a run |
| ``judge_prompts.yaml`` | the versioned judge prompt templates, when the benchmark has a judge |
| ``judge_plan.py`` | ``planned_judgements(task, metadata, doc)``: a sample's judgements (``judge estimate``) |
| ``offline/data.py`` | ``generate(out_dir, n, seed)`` |
| ``offline/prepare.py`` | ``prepare_main(argv)``, when the benchmark has a published release to convert |
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from importlib.resources.abc import Traversable
from types import ModuleType
from typing import Any

from lmms_eval_unify.benchmarks import gapeval, mme_unify, uni_mmmu, unig2u

ENTRIES: dict[str, ModuleType] = {"mme_unify": mme_unify, "unig2u": unig2u, "uni_mmmu": uni_mmmu, "gapeval": gapeval}
"""Each benchmark's entry (its package), in the order the leaderboard prints them."""
BENCHMARKS = tuple(ENTRIES)
"""The benchmarks' names: adding a benchmark is a folder and a line in :data:`ENTRIES`."""
DEMO_BENCHMARK = "uni_mmmu"
"""The benchmark whose ``demo.py`` runs ``lmms-eval-unify demo`` (``run(out, n, seed, models, random_seeds)``)
and whose data ``data generate`` writes when no benchmark is named."""


def entry(benchmark: str) -> ModuleType:
    """The benchmark's entry (its package); KeyError naming the known ones for any other name."""
    if benchmark not in ENTRIES:
        raise KeyError(f"unknown benchmark {benchmark!r}; known: {', '.join(BENCHMARKS)}")
    return ENTRIES[benchmark]


def has_part(benchmark: str, name: str) -> bool:
    """Whether the benchmark has the part `name` (e.g. ``reference_judge``: only judged benchmarks do)."""
    return name in entry(benchmark).PARTS


def part(benchmark: str, name: str) -> ModuleType:
    """The benchmark's part `name` (e.g. ``spec``, ``leaderboard``, ``offline.data``), imported on first use."""
    parts = entry(benchmark).PARTS
    if name not in parts:
        raise KeyError(f"{benchmark} has no {name!r}; it has {', '.join(parts)}")
    return parts[name]()


def paper_score(benchmark: str) -> Callable[..., dict[str, Any]]:
    """The benchmark's paper-level roll-up (its entry's ``paper_score()``: scores by name, each a
    ``scoring.aggregate.Score``), resolved at each call. The registry imports nothing of ours but the entries, so
    any package may use it (tests/test_import_graph.py)."""
    return entry(benchmark).paper_score()


def metric_families(task: str) -> tuple[str, ...]:
    """The metric backbones the scorer of `task` loads, as its benchmark's ``spec.metric_families(task)`` says;
    () for a task of no benchmark, or of a benchmark whose scorers load none (its spec has no such function)."""
    for benchmark in BENCHMARKS:
        spec = part(benchmark, "spec")
        if task.startswith(spec.TASK_PREFIX):
            families_of = getattr(spec, "metric_families", None)
            return tuple(families_of(task)) if families_of else ()
    return ()


def judge_prompt_files() -> list[Traversable]:
    """Every benchmark's ``judge_prompts.yaml``, in registry order (benchmarks without a judge have none)."""
    files = (resources.files(package).joinpath("judge_prompts.yaml") for package in ENTRIES.values())
    return [f for f in files if f.is_file()]
