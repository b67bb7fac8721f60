"""The benchmark registry: the one place horizontal code (leaderboard, gallery, exports, judges, CLI) learns
which benchmarks exist and where each one's parts live.

A benchmark is a folder ``lmms_eval_unify/benchmarks/<name>/`` (plus ``tasks/<name>/`` and
``tests/benchmarks/<name>/``) and one line in :data:`BENCHMARKS`. Inside the folder, by convention:

| module / file | what horizontal code takes from it |
|---|---|
| ``spec.py`` | torch-free facts: subtasks, metrics, task names, ``TASK_PREFIX`` |
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

import importlib
from importlib import resources
from importlib.resources.abc import Traversable
from types import ModuleType

BENCHMARKS = ("mme_unify", "unig2u", "uni_mmmu", "gapeval")
"""The benchmarks, in the order the leaderboard prints them: adding a benchmark is a folder and a name here."""
DEMO_BENCHMARK = "uni_mmmu"
"""The benchmark whose ``demo.py`` runs ``lmms-eval-unify demo`` (``run(out, n, seed, models, random_seeds)``)
and whose data ``data generate`` writes when no benchmark is named."""


def part(benchmark: str, name: str) -> ModuleType:
    """The module ``lmms_eval_unify.benchmarks.<benchmark>.<name>`` (e.g. ``spec``, ``leaderboard``)."""
    if benchmark not in BENCHMARKS:
        raise KeyError(f"unknown benchmark {benchmark!r}; known: {', '.join(BENCHMARKS)}")
    return importlib.import_module(f"{__name__}.{benchmark}.{name}")


def judge_prompt_files() -> list[Traversable]:
    """Every benchmark's ``judge_prompts.yaml``, in registry order (benchmarks without a judge have none)."""
    files = (resources.files(f"{__name__}.{b}").joinpath("judge_prompts.yaml") for b in BENCHMARKS)
    return [f for f in files if f.is_file()]
