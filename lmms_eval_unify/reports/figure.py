"""A rendered leaderboard figure: its bytes in every format the leaderboard writes (no matplotlib needed)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lmms_eval_unify.writes import WriteRefused, write_or_record

FORMATS = ("png", "svg", "pdf")


@dataclass(frozen=True)
class Rendered:
    """One figure in every format the leaderboard writes."""

    png: bytes
    svg: bytes
    pdf: bytes

    def write(self, stem: Path, root: Path | None = None) -> list[WriteRefused]:
        """``stem.png``, ``stem.svg`` and ``stem.pdf`` through the write gate, confined to ``root`` (default: the
        stem's folder); the refusals of the files the gate refused (the others are written)."""
        refused: list[WriteRefused] = []
        for fmt in FORMATS:
            write_or_record(stem.with_name(f"{stem.name}.{fmt}"), getattr(self, fmt), root or stem.parent, refused)
        return refused
