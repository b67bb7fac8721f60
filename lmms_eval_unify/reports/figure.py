"""A rendered leaderboard figure: its bytes in every format the leaderboard writes (no matplotlib needed).

A figure over boards may be rendered when it is first read (:meth:`Rendered.later`): the leaderboard marks
the boards' cells that are not comparable (``comparability.mark_boards``) after every benchmark has built its
boards and figures, and the figure's bars carry those marks only if drawn after that.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lmms_eval_unify.writes import WriteRefused, write_or_record

FORMATS = ("png", "svg", "pdf")


class Rendered:
    """One figure in every format the leaderboard writes: given, or (:meth:`later`) drawn when a format is first
    read, then kept."""

    def __init__(self, png: bytes, svg: bytes, pdf: bytes) -> None:
        self._formats: tuple[bytes, bytes, bytes] | Callable[[], Rendered] = (png, svg, pdf)

    @classmethod
    def later(cls, draw: Callable[[], Rendered]) -> Rendered:
        """A figure drawn by `draw` when a format is first read."""
        rendered = cls(b"", b"", b"")
        rendered._formats = draw
        return rendered

    def _bytes(self) -> tuple[bytes, bytes, bytes]:
        if callable(self._formats):
            drawn = self._formats()
            self._formats = (drawn.png, drawn.svg, drawn.pdf)
        return self._formats

    @property
    def png(self) -> bytes:
        return self._bytes()[0]

    @property
    def svg(self) -> bytes:
        return self._bytes()[1]

    @property
    def pdf(self) -> bytes:
        return self._bytes()[2]

    def write(self, stem: Path, root: Path | None = None) -> list[WriteRefused]:
        """``stem.png``, ``stem.svg`` and ``stem.pdf`` through the write gate, confined to ``root`` (default: the
        stem's folder); the refusals of the files the gate refused (the others are written)."""
        refused: list[WriteRefused] = []
        for fmt in FORMATS:
            write_or_record(stem.with_name(f"{stem.name}.{fmt}"), getattr(self, fmt), root or stem.parent, refused)
        return refused
