"""Converting an official release (``lmms-eval-unify data prepare``): validate everything first, list every
problem, and write all or nothing.

A converter reads the whole release into tables, recording a problem (never raising) for each bad item or
file: :meth:`Problems.guard` turns any exception inside an item into a problem naming the item. Only when
there are none are the tables written, into a temporary folder beside the target; each subtask folder is
then swapped into place, so a failed write leaves the previous data untouched.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from PIL import Image


class Problems(list):
    """The problems found in a release, in reading order."""

    @contextlib.contextmanager
    def guard(self, where: str) -> Iterator[None]:
        """Record any exception of the block as a problem of ``where`` (the item or file being read)."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - a malformed release is reported, never a traceback
            self.append(f"{where}: {type(exc).__name__}: {exc}")

    def check_image(self, path: str | Path, where: str) -> bool:
        """Whether ``path`` is a readable image file (verified without keeping its pixels)."""
        with self.guard(f"{where}: {path}"):
            with Image.open(path) as handle:
                handle.verify()
            return True
        return False


def write_all_or_nothing(target: Path, tables: dict[str, Callable[[Path], object]]) -> list[Path]:
    """Write each ``tables[name](folder)`` into a temporary folder, then swap ``target/name`` folders in."""
    target.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".prepare-", dir=target))
    try:
        for name, write in tables.items():
            (staging / name).mkdir()
            write(staging / name)
        written = []
        for name in tables:
            final = target / name
            if final.exists():
                shutil.rmtree(final)
            (staging / name).rename(final)
            written.append(final)
        return written
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def report(problems: list[str], log: Callable[[str], None] = print) -> int:
    """Print every problem and the verdict; the exit status of ``data prepare`` (1 when any problem)."""
    for problem in problems:
        log(f"PROBLEM {problem}")
    if problems:
        log(f"{len(problems)} problem(s) in the release; nothing was written")
        return 1
    return 0
