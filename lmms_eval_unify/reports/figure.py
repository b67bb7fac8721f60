"""A rendered leaderboard figure: its bytes in every format the leaderboard writes (no matplotlib needed)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

FORMATS = ("png", "svg", "pdf")


@dataclass(frozen=True)
class Rendered:
    """One figure in every format the leaderboard writes."""

    png: bytes
    svg: bytes
    pdf: bytes

    def write(self, stem: Path) -> None:
        """``stem.png``, ``stem.svg`` and ``stem.pdf``."""
        for fmt in FORMATS:
            stem.with_name(f"{stem.name}.{fmt}").write_bytes(getattr(self, fmt))
