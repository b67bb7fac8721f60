"""Shared helpers for the scoring tests: the papers' printed tables, shipped in ./paper_tables."""

from __future__ import annotations

import csv
from pathlib import Path

PAPER_TABLES = Path(__file__).parent / "paper_tables"
TOLERANCE = 0.01  # percentage points


def cell(value: str) -> float | None:
    """A printed number, or None for an empty ('-') cell."""
    return float(value) if value.strip() else None


def read_table(name: str) -> list[dict[str, str]]:
    with (PAPER_TABLES / name).open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def mismatches(rows, key, recompute, printed_col) -> dict[str, tuple[float, float]]:
    """Rows whose recomputed value differs from the printed one by more than TOLERANCE."""
    out = {}
    for row in rows:
        printed = cell(row[printed_col])
        value = recompute(row)
        if printed is None and value is None:
            continue
        if printed is None or value is None or abs(value - printed) > TOLERANCE:
            out[row[key]] = (printed, value)
    return out
