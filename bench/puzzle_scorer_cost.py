"""CPU time per sample of the Uni-MMMU maze/sliding scorers: ``corrected`` vs ``official`` (the released parser's
rules), and ``official`` computed pixel by pixel as before its per-colour table (the reference of
``tests/released_reference.py``), with a check that both ``official`` forms give identical per-sample results.

    python bench/puzzle_scorer_cost.py [--n 20] [--repeats 5] [--quick]

Samples are generated puzzles with a perfect model's output (its step images saved as PNG files and read back
by the scorer, as in a run). Pinned threads (OMP/MKL/BLAS, torch and our decode pool at 1), ``time.process_time``,
the three sides interleaved in one process after one untimed round (which also fills the per-colour tables),
medians reported. ``--quick`` (2 samples, 1 round) only checks that the script runs. Results: docs/benchmarks.md.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from _cpu_time import interleaved_cpu_times, median, pin_threads

if __name__ == "__main__":  # before numpy and torch load (not when a test imports the script)
    pin_threads()

import argparse
import json
import random
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import released_reference

from lmms_eval_unify.benchmarks.uni_mmmu import official
from lmms_eval_unify.benchmarks.uni_mmmu.scoring import score_puzzle
from lmms_eval_unify.generation.media import MediaStore
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.domain import simulate
from lmms_eval_unify.puzzles.maze import generate_maze
from lmms_eval_unify.puzzles.sliding import generate_sliding
from lmms_eval_unify.run.context import EXTRA_MEDIA_ROOTS_ENV

GENERATORS: dict[str, Callable[..., Any]] = {"maze": generate_maze, "sliding": generate_sliding}
Sample = tuple[dict, str]
"""A document with the released data's fields (images as PIL) and the model's raw output."""


def perfect_samples(puzzle: str, n: int, store: MediaStore) -> list[Sample]:
    """``n`` generated puzzles (fixed seed) answered by a perfect model: true moves and their step images."""
    domain, rng = DOMAINS[puzzle], random.Random(f"cost/{puzzle}")
    samples = []
    for index in range(n):
        state, moves = GENERATORS[puzzle](domain, rng)
        steps = [domain.render(s) for s in simulate(domain, state, moves)]
        paths = [store.save_image(puzzle, index, f"step_{k}", image) for k, image in enumerate(steps)]
        text = f"<ANSWER_JSON>{json.dumps(list(moves))}</ANSWER_JSON>"
        record = UnifiedOutput("image_sequence_then_answer", text=text, images=paths, root=str(store.root))
        doc = {"initial_image": domain.render(state), domain.answer_field: json.dumps(list(moves))}
        if puzzle == "sliding":
            doc["step_images"] = steps
        samples.append((doc, record.to_json()))
    return samples


def scorer(puzzle: str, variant: str, samples: list[Sample]) -> Callable[[], list[dict]]:
    """Score every sample with the task's ``process_results`` of ``variant``."""
    return lambda: [score_puzzle(doc, [output], domain=puzzle, variant=variant) for doc, output in samples]


def per_pixel(work: Callable[[], list[dict]]) -> Callable[[], list[dict]]:
    """``work`` with the released parsers computed pixel by pixel (``official`` before its per-colour table)."""

    def run() -> list[dict]:
        with (
            mock.patch.object(official, "released_maze_parse", released_reference.maze_parse),
            mock.patch.object(official, "released_sliding_grid", released_reference.sliding_grid),
        ):
            return work()

    return run


def measure(puzzle: str, samples: list[Sample], repeats: int) -> str:
    """One line: median CPU ms per sample of each side, the ratios to ``corrected``, and the identity check."""
    sides = {
        "corrected": scorer(puzzle, "corrected", samples),
        "official": scorer(puzzle, "official", samples),
        "official per-pixel (before)": per_pixel(scorer(puzzle, "official", samples)),
    }
    times, values = interleaved_cpu_times(sides, repeats)
    fast, slow = values["official"], values["official per-pixel (before)"]
    assert isinstance(fast, list) and isinstance(slow, list)
    same = sum(a == b for a, b in zip(fast, slow, strict=True))
    assert same == len(samples), f"{puzzle}: official per-sample results differ from the per-pixel ones"
    ms = {name: 1e3 * median(seconds) / len(samples) for name, seconds in times.items()}
    sides_text = ", ".join(f"{name} {value:.1f}" for name, value in ms.items())
    return (
        f"{puzzle}: CPU ms per sample (median of {repeats}, {len(samples)} samples): {sides_text}; "
        f"official / corrected {ms['official'] / ms['corrected']:.2f}x, "
        f"before / corrected {ms['official per-pixel (before)'] / ms['corrected']:.1f}x; "
        f"official = per-pixel for {same}/{len(samples)} samples"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="samples per puzzle")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--quick", action="store_true", help="2 samples, 1 round: only check that it runs")
    args = parser.parse_args(argv)
    n, repeats = (2, 1) if args.quick else (args.n, args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[EXTRA_MEDIA_ROOTS_ENV] = tmp  # the scorers read the saved outputs through the checked reader
        store = MediaStore(Path(tmp))
        for puzzle in GENERATORS:
            print(measure(puzzle, perfect_samples(puzzle, n, store), repeats), flush=True)


if __name__ == "__main__":
    main()
