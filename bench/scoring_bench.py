"""Single-thread CPU-time samples/s of maze/sliding `process_results` on a logged offline run, and a check
that the board reader equals the per-pixel reference on a generated corpus.

    lmms-eval-unify data generate uni_mmmu --out D --n 30
    LMMS_EVAL_UNIFY_DATA_DIR=D lmms-eval --model unify_oracle --tasks uni_mmmu_maze,uni_mmmu_sliding \\
        --output_path O --log_samples
    OMP_NUM_THREADS=1 PYTHONPATH=. python bench/scoring_bench.py D O [--corpus 400]
"""

from __future__ import annotations

import argparse
import functools
import glob
import json
import os
import sys
import time
from unittest import mock

import datasets

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from board_reference import board_corpus, reference_board, reference_fractions

from lmms_eval_unify.benchmarks.uni_mmmu.scoring import score_puzzle
from lmms_eval_unify.output.record import parse_output
from lmms_eval_unify.puzzles import maze, sliding

PROCESS_RESULTS = {domain: functools.partial(score_puzzle, domain=domain) for domain in ("maze", "sliding")}
PARSERS = {
    "maze": (maze.READER, maze.MazeDomain(), maze.generate_maze),
    "sliding": (sliding.READER, sliding.SlidingDomain(), sliding.generate_sliding),
}


def logged_outputs(output_dir: str, task: str) -> dict[int, str]:
    """doc_id -> the model's raw output, from the newest samples log of `task`."""
    (path,) = sorted(glob.glob(f"{output_dir}/**/*_samples_uni_mmmu_{task}.jsonl", recursive=True))[-1:]
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    responses = {row["doc_id"]: row["filtered_resps"] for row in rows}  # a list, or its only string
    return {doc_id: r[0] if isinstance(r, list) else r for doc_id, r in responses.items()}


def check_corpus(task: str, count: int) -> str:
    """Parse `count` generated images with the reader and the per-pixel reference; grids must be equal."""
    reader, domain, generate = PARSERS[task]

    def reference(image, n):
        board = reference_board(reader, image)
        if board is None or min(board.shape[:2]) < n:  # the reference crashes or replicates pixels there
            return None
        return reference_fractions(reader, board, n)

    images = board_corpus(domain, generate, count, seed=1)
    fast = [domain.parse_grid(image) for image in images]
    with mock.patch.object(reader, "cell_fractions", reference):
        slow = [domain.parse_grid(image) for image in images]
    mismatches = [i for i, (a, b) in enumerate(zip(fast, slow, strict=True)) if a != b]
    assert not mismatches, f"{task}: grids differ on corpus images {mismatches[:10]}"
    boards = sum(grid is not None for grid in fast)
    return f"{count} corpus images ({boards} with a board) parse to identical grids"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir")
    parser.add_argument("output_dir")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--corpus", type=int, default=400, help="images per task for the identity check")
    args = parser.parse_args()
    os.environ["LMMS_EVAL_UNIFY_MEDIA_ROOTS"] = os.path.abspath(args.output_dir)  # trust the run's media
    for task in PROCESS_RESULTS:
        if args.corpus:
            print(f"uni_mmmu_{task}: {check_corpus(task, args.corpus)}")
        print(f"uni_mmmu_{task}: {bench_task(task, args.data_dir, args.output_dir, args.repeats)}")


def bench_task(task: str, data_dir: str, output_dir: str, repeats: int) -> str:
    """Samples/s/core of `process_results` over the logged run, and the share of reading the images."""
    docs = datasets.load_dataset("parquet", data_files=f"{data_dir}/uni_mmmu/{task}/test.parquet")["train"]
    outputs = logged_outputs(output_dir, task)
    pairs = [(docs[doc_id], output) for doc_id, output in sorted(outputs.items())]  # docs decoded first
    process_results = PROCESS_RESULTS[task]
    best = best_cpu_time(lambda: [process_results(doc, [output]) for doc, output in pairs], repeats)
    scores = [process_results(doc, [output]) for doc, output in pairs]
    assert all(s["invalid_outputs"] == "" and s["details"].get("n_images") for s in scores), scores[0]
    images = sum(s["details"]["n_images"] + 1 for s in scores)  # + the task's initial image
    reading = best_cpu_time(lambda: [parse_output(output).load_images() for _, output in pairs], repeats)
    return (
        f"{len(pairs) / best:.1f} samples/s/core, {1e3 * best / images:.2f} ms CPU per image ({len(pairs)}"
        f" samples, {images} images parsed, CPU time, best of {repeats}); reading + decoding the output"
        f" images alone: {len(pairs) / reading:.1f} samples/s ({100 * reading / best:.0f}% of the scoring time)"
    )


def best_cpu_time(work, repeats: int) -> float:
    """The least CPU time (this process, all threads) of ``repeats`` runs of ``work()``."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


if __name__ == "__main__":
    main()
