"""Converting an official release (``lmms-eval-unify data prepare``): validate everything first, list every
problem, and write all or nothing.

A converter reads the whole release into tables, recording a problem (never raising) for each bad item or
file: :meth:`Problems.guard` turns any exception inside an item into a problem naming the item. Only when
there are none are the tables written, into a temporary folder beside the target; each subtask folder is
then swapped into place, so a failed write leaves the previous data untouched.

Every file of a release is read through the gate (:class:`Release`): confined to the release folder (an
absolute or ``../`` path, or a symlink out of it, is refused), regular files only (a FIFO never blocks) and
within ``release_file_bytes``. Text fields are read with :func:`text_field`, which refuses a structure where a
string is expected instead of stringifying it.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from PIL import Image

from lmms_eval_unify import gate
from lmms_eval_unify.output.media_reader import check_image_bytes
from lmms_eval_unify.run.provenance import write_data_source


class Problems(list):
    """The problems found in a release, in reading order."""

    @contextlib.contextmanager
    def guard(self, where: str) -> Iterator[None]:
        """Record any exception of the block as a problem of ``where`` (the item or file being read)."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - a malformed release is reported, never a traceback
            self.append(f"{where}: {type(exc).__name__}: {exc}")

    def check_image(self, release: Release, path: str | Path, where: str) -> bool:
        """Whether ``path`` is a readable image file of ``release`` (verified without keeping its pixels)."""
        with self.guard(f"{where}: {path}"):
            check_image_bytes(release.read(path), path)
            return True
        return False


class Release:
    """The folder of a release being converted: every file of it is read through the gate, confined to it."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def find(self, relative: object, *folders: str | Path) -> Path | None:
        """The first regular file ``relative`` names under the root or one of ``folders`` (relative to the root),
        or None when there is none. ``gate.Refused`` when ``relative`` is not a string, is absolute, leaves the
        release (``..``, symlinks) or names something that is not a regular file."""
        if not isinstance(relative, str):
            raise gate.Refused(
                "malformed", repr(relative)[:200], f"a path must be a string, got {type(relative).__name__}"
            )
        for folder in (Path(), *map(Path, folders)):
            path = gate.join(self.root, str(folder / relative))
            if path.exists() or path.is_symlink():
                return gate.check_file(path, "release_file", [self.root])
        return None

    def file(self, relative: object, *folders: str | Path) -> Path:
        """Like :meth:`find`, ``gate.Refused`` (``missing``) when there is no such file."""
        found = self.find(relative, *folders)
        if found is None:
            raise gate.Refused("missing", relative, f"no such file under {self.root}")
        return found

    def read(self, path: str | Path) -> bytes:
        """The bytes of a file of the release (a path found by :meth:`find` or listed from a folder of it)."""
        return gate.read_bytes(path, "release_file", [self.root])

    def json(self, relative: str | Path) -> object:
        """A JSON file of the release."""
        return gate.read_json(self.root / relative, "release_file", [self.root])

    def text(self, path: str | Path) -> str:
        """A UTF-8 text file of the release."""
        return gate.read_text(path, "release_file", [self.root])

    def image(self, path: str | Path) -> Image.Image:
        """An image file of the release, checked (pixels, structure) and decoded as RGB."""
        data = self.read(path)
        check_image_bytes(data, path)
        with Image.open(io.BytesIO(data)) as handle:
            return handle.convert("RGB")


def text_field(item: Mapping, key: str, default: str = "") -> str:
    """``item[key]`` as text: a string as it is, a number written out, ``default`` when absent or null;
    anything else (an object, a list, a boolean) is ``gate.Refused`` (``malformed``) instead of stringified."""
    value = item.get(key)
    if value is None:
        return default
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise gate.Refused("malformed", key, f"must be a string, got {type(value).__name__} {str(value)[:80]!r}")


def text_list(item: Mapping, key: str) -> list[str]:
    """``item[key]`` as a list of texts (each as in :func:`text_field`); anything else is ``gate.Refused``."""
    value = item.get(key)
    if not isinstance(value, list):
        raise gate.Refused("malformed", key, f"must be a list of strings, got {type(value).__name__}")
    return [text_field({key: v}, key) for v in value]


def write_all_or_nothing(
    target: Path, tables: Mapping[str, Callable[[Path], object]], source: Mapping[str, object]
) -> list[Path]:
    """Write each ``tables[name](folder)`` with the data `source` record (``provenance.prepared_source``) into a
    temporary folder, then swap ``target/name`` folders in."""
    target.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".prepare-", dir=target))
    try:
        for name, write in tables.items():
            (staging / name).mkdir()
            write(staging / name)
            write_data_source(staging / name, source, staging)
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
