"""Offline Uni-MMMU sets in the local-data layout (``<out>/uni_mmmu/<subtask>/test.parquet``)."""

from __future__ import annotations

from pathlib import Path

from lmms_eval_unify.puzzles.dataset import write_uni_mmmu_puzzles


def generate(out_dir: str | Path, n: int, seed: int = 0) -> list[Path]:
    """``n`` items of every generated subtask."""
    return write_uni_mmmu_puzzles(out_dir, n, n, seed)
