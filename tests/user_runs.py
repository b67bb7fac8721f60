"""Nine runs of all four benchmarks as a new user makes them, for the size bounds of the leaderboard's notes and
of the run's printed tables (tests/reports/test_notes_fit.py): two base VLMs, one unified model in two
configurations, another unified model, two quick ``--limit 20`` trials, a run during a judge outage and a quick
offline trial on tiny metric backbones (``LMMS_EVAL_UNIFY_TINY_METRICS=1``, ``--limit 10``). Every run holds the
papers' full task lists (synthetic rows, ``lmms_eval_unify.testing.synthetic``), written as lmms-eval writes them,
and reads back as lmms-eval holds its results in memory (samples included) when the run hook adds paper scores."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from lmms_eval_unify.benchmarks import BENCHMARKS, part
from lmms_eval_unify.benchmarks.gapeval import spec as gapeval_spec
from lmms_eval_unify.benchmarks.uni_mmmu import spec as uni_mmmu_spec
from lmms_eval_unify.benchmarks.unig2u import spec as unig2u_spec
from lmms_eval_unify.run.provenance import PROVENANCE_KEY
from lmms_eval_unify.testing.synthetic import benchmark_rows, write_run

PAPER_JUDGE = "gpt-4o-2024-11-20"


@dataclass(frozen=True)
class UserRun:
    """One ``lmms-eval --model ... --model_args ... --tasks mme_unify,unig2u,uni_mmmu,gapeval`` run."""

    model: str
    model_args: str
    skill: float
    generates_images: bool = True
    limit: int | None = None
    judge_down: bool = False
    tiny_metrics: bool = False


NINE_RUNS = (
    UserRun("qwen-vl", "pretrained=qwen-vl", 0.55, generates_images=False),
    UserRun("llava-ov", "pretrained=llava-ov", 0.45, generates_images=False),
    UserRun("janus-pro", "pretrained=janus-pro,seed=1", 0.6),
    UserRun("janus-pro", "pretrained=janus-pro,seed=2", 0.6),
    UserRun("bagel", "pretrained=bagel", 0.7),
    UserRun("show-o2", "pretrained=show-o2", 0.5, limit=20),
    UserRun("emu3", "pretrained=emu3", 0.4, limit=20),
    UserRun("omnigen2", "pretrained=omnigen2", 0.5, judge_down=True),
    UserRun("echo-painter", "pretrained=echo-painter", 0.3, limit=10, tiny_metrics=True),
)
"""The nine runs; the two base VLMs are paired with the unified models in the pairs file (UniG2U's Δ)."""
PAIRS = {"janus-pro (seed=1)": "qwen-vl", "janus-pro (seed=2)": "qwen-vl", "bagel": "llava-ov"}


def judged_tasks() -> set[str]:
    """Every task a model-as-judge scores, both protocols of UniG2U's judged subtasks included."""
    unig2u = {unig2u_spec.task_name(s, suffix) for s in unig2u_spec.JUDGED for suffix in ("", "_gta")}
    uni_mmmu = {uni_mmmu_spec.task_name(t) for t in uni_mmmu_spec.JUDGED}
    gapeval = {gapeval_spec.task_name(c, d) for c in gapeval_spec.CATEGORIES for d in ("und", "gen")}
    return unig2u | uni_mmmu | gapeval


def judged_row(row: dict, task: str, down: bool) -> dict:
    """A judged sample with its judge log (the paper's judge); during an outage every metric is the scorer's
    failure value (0)."""
    log = {"template_id": task, "template_version": 1, "model": PAPER_JUDGE, "status": "failed" if down else "ok"}
    if down:
        return {**dict.fromkeys(row, 0.0), "invalid_outputs": "judge_failed", "details": {"judge": log}}
    return {**row, "details": {"judge": log}}


def run_tasks(run: UserRun, rng: np.random.Generator) -> tuple[dict[str, list[dict]], dict[str, int]]:
    """The run's samples of every benchmark (the first `limit` docs, judged by its judge) and each task's
    dataset size."""
    tasks: dict[str, list[dict]] = {}
    for benchmark in BENCHMARKS:
        tasks |= benchmark_rows(benchmark, run.skill, rng, generates_images=run.generates_images)
    judged = judged_tasks()
    asked = {
        task: [
            judged_row(row, task, run.judge_down) if task in judged and "unsupported" not in row else row
            for row in rows[: run.limit]
        ]
        for task, rows in tasks.items()
    }
    return asked, {task: len(rows) for task, rows in tasks.items()}


def write_user_run(root: Path, run: UserRun, rng: np.random.Generator, date_id: str) -> Path:
    """Write one run under ``root/<model>`` as lmms-eval 0.7.3 does; returns its results file."""
    tasks, sizes = run_tasks(run, rng)
    path = write_run(root, run.model, tasks, date_id)
    results = json.loads(path.read_text())
    results["model_name"] = ""
    results["config"] = {"model": run.model, "model_args": run.model_args, "limit": run.limit, "offset": 0}
    results["n-samples"] = {t: {"original": sizes[t], "effective": len(rows)} for t, rows in tasks.items()}
    prefixes = {b: part(b, "spec").TASK_PREFIX for b in BENCHMARKS}
    results["group_subtasks"] = {b: sorted(t for t in tasks if t.startswith(p)) for b, p in prefixes.items()}
    results[PROVENANCE_KEY] = {"version": "0.0.0", "commit": "", "tiny_metrics": run.tiny_metrics}
    path.write_text(json.dumps(results), encoding="utf-8")
    return path


def write_nine_runs(tmp_path: Path) -> tuple[list[Path], Path]:
    """The nine runs under ``tmp_path/runs`` and the pairs file; returns their results files and the pairs file."""
    rng = np.random.default_rng(0)
    files = [write_user_run(tmp_path / "runs", r, rng, f"2026010{i + 1}T000000") for i, r in enumerate(NINE_RUNS)]
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text(yaml.safe_dump({"pairs": PAIRS}), encoding="utf-8")
    return files, pairs


def in_memory(results_file: Path) -> dict:
    """A written run as ``simple_evaluate`` returns it to the run hook: the results with the samples."""
    results = json.loads(results_file.read_text(encoding="utf-8"))
    prefix = results_file.name.removesuffix("_results.json")
    results["samples"] = {
        task: [json.loads(line) for line in (results_file.parent / f"{prefix}_samples_{task}.jsonl").open()]
        for task in results["results"]
    }
    results["results"] |= {group: {" ": " ", "alias": group} for group in results["group_subtasks"]}
    results["n-shot"] = dict.fromkeys(results["results"], 0)
    return results
