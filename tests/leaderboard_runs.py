"""Result folders for the leaderboard tests: a base VLM (cannot generate images) and a unified model paired
with it, with a few hand-chosen samples per benchmark, and helpers to run the command and read its CSVs."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path

import pytest
import yaml

from lmms_eval_unify.benchmarks import BENCHMARKS
from lmms_eval_unify.benchmarks.gapeval import paper as ge
from lmms_eval_unify.benchmarks.unig2u import paper as ug
from lmms_eval_unify.generation.media import configuration_folder
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.reports.leaderboard import main
from lmms_eval_unify.testing.synthetic import write_run


def gapeval_tasks(und_correct: list[int], gen_correct: list[int]) -> dict:
    """Every GapEval category with the same per-question verdicts in each direction."""
    tasks = {}
    for category in ge.CATEGORIES:
        und, gen = ge.task_names(category)
        tasks[und] = [{"correct": c} for c in und_correct]
        tasks[gen] = [{"correct": c} for c in gen_correct]
    return tasks


def base_vlm_tasks() -> dict[str, dict[str, list[dict]]]:
    """Per benchmark, the base VLM's samples (image-output tasks unsupported)."""
    return {
        "mme_unify": {
            "mme_unify_sipu": [{"acc": 1}, {"acc": 0}, {"acc": 1}, {"acc": 1}],
            "mme_unify_tig": [{"unsupported": True}] * 2,
        },
        "unig2u": {ug.task_name(s): [{"acc": 1.0}, {"acc": 0.0}] for s in ug.SUBTASKS},
        "uni_mmmu": {},
        "gapeval": gapeval_tasks([1, 1, 0, 0], [0, 0, 0, 0]),
    }


def unified_model_tasks() -> dict[str, dict[str, list[dict]]]:
    """Per benchmark, the unified model's samples (GtA on UniG2U: 50 on every subtask but chartqa, 100)."""
    return {
        "mme_unify": {
            "mme_unify_sipu": [{"acc": 1}] * 4,
            "mme_unify_tig": [{"clip_i": 0.6, "clip_t": 30.0}, {"clip_i": 0.8, "clip_t": 20.0}],
            "mme_unify_iee": [
                {"text_correct": 1, "image_correct": 1},
                {"text_correct": 1, "image_correct": 0},
            ],
        },
        "unig2u": {
            **{ug.task_name(s): [{"acc": 1.0}, {"acc": 1.0}] for s in ug.SUBTASKS},
            **{ug.task_name(s, "_gta"): [{"acc": float(s == "chartqa")}, {"acc": 1.0}] for s in ug.SUBTASKS},
        },
        "uni_mmmu": {
            "uni_mmmu_maze": [
                {"text_step_acc": 1.0, "text_sample_acc": 1.0, "img_step_acc": 0.5, "img_sample_acc": 0.0}
            ]
        },
        "gapeval": gapeval_tasks([1, 1, 1, 0], [1, 0, 1, 0]),
    }


def write_runs(tmp_path: Path, benchmarks: Iterable[str] = BENCHMARKS) -> tuple[Path, Path]:
    """`tmp_path/runs` with both models' samples of `benchmarks`, and a pairs file pairing them."""
    root = tmp_path / "runs"
    chosen = list(benchmarks)
    for model, tasks in (("base-vlm", base_vlm_tasks()), ("uni-model", unified_model_tasks())):
        write_run(root, model, {t: rows for b in chosen for t, rows in tasks[b].items()})
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text(yaml.safe_dump({"pairs": {"uni-model": "base-vlm"}}))
    return root, pairs


def approx(expected: float):
    """CSV values are written with 4 decimals."""
    return pytest.approx(expected, abs=1e-4)


def read_csv(path: Path) -> dict[str, dict[str, str]]:
    """A board's CSV as {model: {column: text}}."""
    with path.open(newline="", encoding="utf-8") as f:
        return {row["model"]: row for row in csv.DictReader(f)}


def run(args: list) -> int:
    """``lmms-eval-unify leaderboard`` with `args` (paths and numbers as strings)."""
    return main([str(a) for a in args])


def write_configured_run(
    output_path: Path, model: str, model_args: str, tasks: dict[str, list[dict]], date_id: str = "20260101T000000"
) -> Path:
    """A run of ``lmms-eval --model <model> --model_args <model_args> --output_path <output_path>`` as lmms-eval
    records it: no ``model_name`` (no ``pretrained=``), the model and its arguments in ``config``."""
    path = write_run(output_path, model, tasks, date_id)
    results = json.loads(path.read_text())
    results["model_name"] = ""
    results["config"] = {"model": model, "model_args": model_args}
    path.write_text(json.dumps(results))
    return path


def write_adapter_run(
    output_path: Path,
    model: str,
    description: dict,
    model_args: str,
    tasks: dict[str, list[dict]],
    date_id: str = "20260101T000000",
) -> Path:
    """A run of one of our adapters: every record names the configuration's media folder
    ``<output_path>/unify_media/<model>-<hash of describe()>``, whose ``model.json`` holds `description`."""
    root = output_path / "unify_media" / configuration_folder(model, description)
    root.mkdir(parents=True, exist_ok=True)
    (root / "model.json").write_text(json.dumps(description))
    response = UnifiedOutput("text_only", text="A", root=str(root)).to_json()
    recorded = {task: [{"filtered_resps": [response], **row} for row in rows] for task, rows in tasks.items()}
    return write_configured_run(output_path, model, model_args, recorded, date_id)


def maze_rows(n: int, score: float = 1.0) -> list[dict]:
    return [{"text_step_acc": score, "input": f"maze {i}", "target": f"path {i}"} for i in range(n)]


def judged(model: str, version: int = 1, digest: str = "") -> dict:
    judge = {"template_id": "uni_mmmu_geometry_image", "template_version": version, "model": model, "status": "ok"}
    judge |= {"template_digest": digest} if digest else {}
    return {"img_acc": 1.0, "text_acc": 1.0, "invalid_outputs": "", "details": {"image": {"judge": judge}}}


def edit_results(path: Path, **changes) -> None:
    """Set top-level keys of a results file; `configs` and `config` are merged into what is there."""
    results = json.loads(path.read_text())
    for key, value in changes.items():
        results[key] = {**results.get(key, {}), **value} if isinstance(value, dict) else value
    path.write_text(json.dumps(results))


def limited(path: Path, task: str, limit: int, n_dataset: int) -> None:
    """Make a written run a ``--limit`` run of `task` over a dataset of `n_dataset` docs."""
    edit_results(
        path, config={"limit": limit, "offset": 0}, **{"n-samples": {task: {"original": n_dataset, "effective": limit}}}
    )


def versioned(path: Path, task: str, version: str, variant: str = "corrected") -> None:
    edit_results(path, configs={task: {"metadata": {"version": version, "variant": variant}}})


def write_shards(root: Path, tasks: dict[str, list[dict]], bounds: list[tuple[int, int]]) -> None:
    """One run per (start, stop) of doc ids, as ``--offset start --limit stop-start`` would write it."""
    for k, (start, stop) in enumerate(bounds):
        part = {t: [r for r in rows if start <= r["doc_id"] < stop] for t, rows in tasks.items()}
        path = write_run(root / f"shard{k}", "uni-model", {t: r for t, r in part.items() if r}, f"2026010{k + 1}T0")
        results = json.loads(path.read_text())
        results["config"] |= {"offset": start, "limit": stop - start}
        results["n-samples"] = {t: {"original": len(tasks[t]), "effective": len(r)} for t, r in part.items() if r}
        path.write_text(json.dumps(results))
