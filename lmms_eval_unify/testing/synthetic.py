"""Synthetic lmms-eval result folders (same files and keys as lmms-eval 0.7.3 writes), for tests and benches.

Until the task packs exist, this is how the leaderboard is exercised at full benchmark size. Per-sample
fields follow the contract in docs/scoring.md; values are random draws around a model's `skill`. Each
benchmark draws its own rows (``lmms_eval_unify/benchmarks/<name>/synthetic.py``, reached through the
registry); this module writes them as lmms-eval would.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from lmms_eval_unify.benchmarks import part


def bits(rng: np.random.Generator, p: float, n: int) -> np.ndarray:
    """``n`` draws of 1.0 with probability ``p``, else 0.0."""
    return (rng.random(n) < p).astype(float)


def unsupported_rows(n: int) -> list[dict]:
    """``n`` records of a sample the model cannot answer (no image generation)."""
    return [{"unsupported": True}] * n


def benchmark_rows(
    benchmark: str, skill: float, rng: np.random.Generator, generates_images: bool = True
) -> dict[str, list[dict]]:
    """{task: rows} of a whole benchmark at the papers' sizes; without image generation, those tasks are unsupported."""
    return part(benchmark, "synthetic").rows(skill, rng, generates_images)


def write_run(output_path: Path, model: str, tasks: dict[str, list[dict]], date_id: str = "20260101T000000") -> Path:
    """Write `<output_path>/<model>/<date_id>_results.json` and one samples JSONL per task, like lmms-eval."""
    folder = output_path / model.replace("/", "__")
    folder.mkdir(parents=True, exist_ok=True)
    results = {}
    for task, rows in tasks.items():
        metrics = {k for row in rows for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        results[task] = {
            "alias": task,
            **{f"{k},none": float(np.mean([r.get(k) or 0.0 for r in rows])) for k in sorted(metrics)},
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
