"""Single-thread samples/s of Uni-MMMU maze/sliding `process_results` on a logged offline run.

    lmms-eval-unify data generate uni_mmmu --out D --n 30
    LMMS_EVAL_UNIFY_DATA_DIR=D lmms-eval --model unify_oracle --tasks uni_mmmu_maze,uni_mmmu_sliding \\
        --output_path O --log_samples
    PYTHONPATH=. python bench/scoring_bench.py D O
"""

from __future__ import annotations

import argparse
import glob
import json
import time

import datasets

from tasks.uni_mmmu.utils import maze_process_results, sliding_process_results

PROCESS_RESULTS = {"maze": maze_process_results, "sliding": sliding_process_results}


def logged_outputs(output_dir: str, task: str) -> dict[int, str]:
    """doc_id -> the model's raw output, from the newest samples log of `task`."""
    (path,) = sorted(glob.glob(f"{output_dir}/*_samples_uni_mmmu_{task}.jsonl"))[-1:]
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    responses = {row["doc_id"]: row["filtered_resps"] for row in rows}  # a list, or its only string
    return {doc_id: r[0] if isinstance(r, list) else r for doc_id, r in responses.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir")
    parser.add_argument("output_dir")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for task, process_results in PROCESS_RESULTS.items():
        docs = datasets.load_dataset("parquet", data_files=f"{args.data_dir}/uni_mmmu/{task}/test.parquet")[
            "train"
        ]
        outputs = logged_outputs(args.output_dir, task)
        pairs = [
            (docs[doc_id], output) for doc_id, output in sorted(outputs.items())
        ]  # docs decoded up front
        best = float("inf")
        for _ in range(args.repeats):
            start = time.perf_counter()
            scores = [process_results(doc, [output]) for doc, output in pairs]
            best = min(best, time.perf_counter() - start)
        assert all(s["invalid_outputs"] == "" and s["details"].get("n_images") for s in scores), scores[0]
        print(
            f"uni_mmmu_{task}: {len(pairs) / best:.1f} samples/s (1 thread, {len(pairs)} samples, best of {args.repeats})"
        )


if __name__ == "__main__":
    main()
