"""Synthetic lmms-eval result folders (same files and keys as lmms-eval 0.7.3 writes), for tests and benches.

Until the task packs exist, this is how the leaderboard is exercised at full benchmark size. Per-sample
fields follow the contract in docs/scoring.md; values are random draws around a model's `skill`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from lmms_eval_unify.benchmarks.gapeval import paper as ge
from lmms_eval_unify.benchmarks.mme_unify import paper as mu
from lmms_eval_unify.benchmarks.uni_mmmu import paper as um
from lmms_eval_unify.benchmarks.unig2u import paper as ug

MME_SIZES = {"SIPU": 1200, "MITIU": 400, "VPU": 364, "CIVG": 200, "FIR": 200, "TIE": 200, "TIG": 200, "TVG": 200,
             "VP": 194, "IEE": 200, "CSQ": 101, "AL": 52, "SD": 104, "VCoT": 90}  # fmt: skip
UNI_MMMU_SIZES = {"jigsaw": 150, "maze": 150, "sliding": 150, "geometry": 140, "science": 180, "code": 115}
GAPEVAL_SIZE = 150


def _bits(rng: np.random.Generator, p: float, n: int) -> np.ndarray:
    return (rng.random(n) < p).astype(float)


def mme_unify_rows(subtask: str, n: int, skill: float, rng: np.random.Generator) -> list[dict]:
    """Per-sample records of one MME-Unify subtask."""
    if subtask in mu.UNDERSTANDING:
        return [{"acc": a} for a in _bits(rng, skill, n)]
    if subtask == "FIR":
        return [{"lpips": v} for v in rng.uniform(0.1, 1.0 - 0.8 * skill, n)]
    if subtask in mu.CLIP_SCORED:
        return [
            {"clip_i": i, "clip_t": t}
            for i, t in zip(rng.uniform(0.4, 0.5 + 0.4 * skill, n), rng.uniform(15, 40, n), strict=True)
        ]
    if subtask in mu.VIDEO:
        rows = [
            {"fvd": a, "fid": b}
            for a, b in zip(rng.uniform(1, 1000 * (1 - skill / 2), n), rng.uniform(1, 600, n), strict=True)
        ]
        if subtask != "VP":
            for row, c in zip(rows, rng.uniform(0.2, 0.35, n), strict=True):
                row["clipsim"] = c
        return rows
    if subtask in mu.UNIFY_QA:
        return [
            {"text_correct": t, "image_correct": i}
            for t, i in zip(_bits(rng, skill, n), _bits(rng, skill, n), strict=True)
        ]
    steps = rng.integers(2, 8, n)
    return [
        {
            "n_steps": int(k),
            "image_steps": int(k) - 1,  # "Finish" draws nothing
            **{f"{a}_steps_correct": int(rng.binomial(k, skill)) for a in ("action", "coordinate")},
            "image_steps_correct": int(rng.binomial(k - 1, skill)),
        }
        for k in steps
    ]


def uni_mmmu_rows(task: str, n: int, skill: float, rng: np.random.Generator) -> list[dict]:
    """Per-sample records of one Uni-MMMU task (Maze/Sliding: sample-level never above step-level)."""
    rows = []
    for _ in range(n):
        row: dict[str, float] = {}
        for key in um.metric_keys(task):
            if key.endswith("_sample_acc"):
                row[key] = float(row[key.replace("_sample_", "_step_")] == 1.0)
            elif key.endswith("_step_acc"):
                row[key] = float(min(1.0, rng.binomial(6, skill) / 5))
            elif key in um.JUDGE_SCALED:
                row[key] = float(rng.binomial(5, skill))
            else:
                row[key] = float(rng.random() < skill) if key != "img_score" else float(rng.uniform(0, skill))
        rows.append(row)
    return rows


def benchmark_rows(
    benchmark: str, skill: float, rng: np.random.Generator, generates_images: bool = True
) -> dict:
    """{task: rows} of a whole benchmark at the papers' sizes; without image generation, those tasks are unsupported."""
    unsupported = [{"unsupported": True}]
    if benchmark == "mme_unify":
        image_out = {*mu.GENERATION, *mu.UNIFY}
        return {
            mu.task_name(s): mme_unify_rows(s, n, skill, rng)
            if generates_images or s not in image_out
            else unsupported * n
            for s, n in MME_SIZES.items()
        }
    if benchmark == "unig2u":
        tasks = {}
        for subs in ug.CATEGORY_SUBTASKS.values():
            for s, n in subs.items():
                tasks[ug.task_name(s)] = [{"acc": a} for a in _bits(rng, skill, n)]
                if generates_images:
                    tasks[ug.task_name(s, "_gta")] = [
                        {"acc": a} for a in _bits(rng, skill * rng.uniform(0.8, 1.2), n)
                    ]
        return tasks
    if benchmark == "uni_mmmu":
        return {um.task_name(t): uni_mmmu_rows(t, n, skill, rng) for t, n in UNI_MMMU_SIZES.items()}
    tasks = {}
    for category in ge.CATEGORIES:
        und, gen = ge.task_names(category)
        tasks[und] = [{"correct": a} for a in _bits(rng, skill, GAPEVAL_SIZE)]
        tasks[gen] = (
            [{"correct": a} for a in _bits(rng, skill * 0.7, GAPEVAL_SIZE)]
            if generates_images
            else unsupported * GAPEVAL_SIZE
        )
    return tasks


def write_run(
    output_path: Path, model: str, tasks: dict[str, list[dict]], date_id: str = "20260101T000000"
) -> Path:
    """Write `<output_path>/<model>/<date_id>_results.json` and one samples JSONL per task, like lmms-eval."""
    folder = output_path / model.replace("/", "__")
    folder.mkdir(parents=True, exist_ok=True)
    results = {}
    for task, rows in tasks.items():
        metrics = {
            k
            for row in rows
            for k, v in row.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        results[task] = {
            "alias": task,
            **{f"{k},none": float(np.mean([r.get(k, 0.0) for r in rows])) for k in sorted(metrics)},
        }
        with (folder / f"{date_id}_samples_{task}.jsonl").open("w", encoding="utf-8") as f:
            for doc_id, row in enumerate(rows):
                record = {
                    "doc_id": doc_id,
                    "target": "",
                    "filtered_resps": "",
                    "doc_hash": "",
                    "input": "",
                    **row,
                }
                f.write(json.dumps(record) + "\n")
    summary = {
        "results": results,
        "n-samples": {t: {"original": len(r), "effective": len(r)} for t, r in tasks.items()},
        "config": {"model": "synthetic", "model_args": f"pretrained={model}"},
        "model_name": model,
        "model_name_sanitized": folder.name,
    }
    path = folder / f"{date_id}_results.json"
    path.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return path
