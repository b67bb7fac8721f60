"""The write gate: every file the project writes passes here, the twin of :mod:`lmms_eval_unify.gate`'s reads.

A write names its file and the root it must stay in (the folder the user chose: the run's media folder, the
``-o`` folder of a report). The gate

* confines the file to the root: the path relative to the root has no ``..`` and no absolute part;
* follows no symlink below the root: each folder is opened from the root one component at a time with
  ``O_NOFOLLOW | O_DIRECTORY`` (relative to the folder before it, so nothing can be swapped in between), and the
  file itself is opened with ``O_NOFOLLOW``; a symlink, FIFO, device or folder standing at the file's name is
  refused, never written through;
* writes atomically: the bytes go to a temporary file in the same folder (``.<name>.<random>.tmp``), which then
  replaces the file by ``os.replace``; a crash leaves the old file or none, never a partial one, and the
  temporaries it leaves are found by :func:`stale_temporaries` and removed by :func:`remove_stale_temporaries`;
* appends (``.jsonl`` rows) through one ``O_APPEND | O_NOFOLLOW`` descriptor of a regular file.

A refusal is a :class:`WriteRefused` with a typed reason; callers decide whether it fails one file or the run.
Text is always written as UTF-8.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path, PurePath
from typing import Literal

WriteReason = Literal["outside_root", "symlink", "not_a_folder", "not_regular_file", "bad_path", "unwritable"]
"""Why a write was refused: the path leaves its root; a symlink stands at a folder or at the file; a folder of the
path is something else; something other than a regular file stands at the file's name; the path cannot be used
(empty, NUL byte, too long); the OS refused the write (permissions, a full disk)."""

TEMPORARY = re.compile(r"^\.(?P<name>.+)\.[0-9a-f]{16}\.tmp$")
"""The name of a temporary file of an atomic write: ``.<final name>.<16 hex>.tmp``."""
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_MODE = 0o666  # narrowed by the process umask, as open() does


class WriteRefused(Exception):
    """The gate refused to write ``path``: ``reason`` (a :data:`WriteReason`) and what it found."""

    def __init__(self, reason: WriteReason, path: object, detail: str) -> None:
        super().__init__(f"refused to write {path}: {reason}: {detail}")
        self.reason, self.path, self.detail = reason, path, detail


def relative_parts(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> tuple[str, ...]:
    """The components of ``path`` below ``root`` (compared as written, after collapsing ``.``); ``WriteRefused``
    when ``path`` is not below it, climbs with ``..`` or is malformed."""
    text = os.fspath(path)
    if not text or "\0" in text:
        raise WriteRefused("bad_path", repr(text), "an empty path or one with a NUL byte")
    target, base = Path(os.path.abspath(text)), Path(os.path.abspath(os.fspath(root)))
    if ".." in PurePath(text).parts:
        raise WriteRefused("outside_root", target, f"the path climbs with '..' (root {base})")
    try:
        parts = target.relative_to(base).parts
    except ValueError:
        raise WriteRefused("outside_root", target, f"not inside {base}") from None
    if not parts:
        raise WriteRefused("bad_path", target, "the root itself is not a file")
    return parts


@contextlib.contextmanager
def open_folder(folder_parts: tuple[str, ...], root: str | os.PathLike[str], create: bool = True) -> Iterator[int]:
    """A descriptor of the folder ``root/<folder_parts>``, each component opened without following a symlink
    and made when absent (``create``); the root itself is made when absent."""
    base = os.path.abspath(os.fspath(root))
    if create:
        os.makedirs(base, exist_ok=True)
    descriptor = _open(base, None, base, create=False)
    try:
        where = base
        for part in folder_parts:
            where = os.path.join(where, part)
            following = _open(part, descriptor, where, create)
            os.close(descriptor)
            descriptor = following
        yield descriptor
    finally:
        os.close(descriptor)


def _open(name: str, folder: int | None, shown: str, create: bool) -> int:
    """Open the folder ``name`` (relative to ``folder``) without following a symlink; made when absent."""
    for attempt in range(2):
        try:
            return os.open(name, _FOLDER_FLAGS, dir_fd=folder)
        except FileNotFoundError:
            if not create or attempt:
                raise WriteRefused("not_a_folder", shown, "missing") from None
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=folder)
        except OSError as exc:
            raise _refusal(exc, shown, name, folder) from None
    raise AssertionError("unreachable")


def _refusal(exc: OSError, shown: str, name: str, folder: int | None) -> WriteRefused:
    """The typed reason of an OS error at ``name``: a symlink, something else than expected, or unwritable."""
    try:
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except OSError:
        mode = None
    if mode is not None and stat.S_ISLNK(mode):
        return WriteRefused("symlink", shown, "a symlink stands here; it is never followed")
    if exc.errno in (errno.ENOTDIR, errno.EISDIR):
        return WriteRefused("not_a_folder", shown, f"{exc.strerror}")
    if exc.errno == errno.ENAMETOOLONG:
        return WriteRefused("bad_path", shown, exc.strerror or "name too long")
    return WriteRefused("unwritable", shown, f"{type(exc).__name__}: {exc.strerror or exc}")


def _check_target(name: str, folder: int, shown: Path) -> None:
    """Refuse what stands at the file's name unless it is absent or a regular file."""
    try:
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _refusal(exc, str(shown), name, folder) from None
    if stat.S_ISLNK(mode):
        raise WriteRefused("symlink", shown, "a symlink stands at the file's name; it is never written through")
    if not stat.S_ISREG(mode):
        raise WriteRefused("not_regular_file", shown, "something other than a regular file stands at its name")


def write_bytes(path: str | os.PathLike[str], data: bytes, root: str | os.PathLike[str]) -> Path:
    """Write ``data`` to ``path`` inside ``root`` atomically (module docstring); returns the path."""
    parts = relative_parts(path, root)
    shown = Path(os.path.abspath(os.fspath(path)))
    with open_folder(parts[:-1], root) as folder:
        name = parts[-1]
        _check_target(name, folder, shown)
        temporary = f".{name}.{secrets.token_hex(8)}.tmp"
        try:
            descriptor = os.open(
                temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _FILE_MODE, dir_fd=folder
            )
        except OSError as exc:
            raise _refusal(exc, str(shown), temporary, folder) from None
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
            os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)
            if isinstance(exc, OSError):
                raise WriteRefused("unwritable", shown, f"{type(exc).__name__}: {exc.strerror or exc}") from None
            raise
    return shown


def write_text(path: str | os.PathLike[str], text: str, root: str | os.PathLike[str]) -> Path:
    """:func:`write_bytes` of ``text`` as UTF-8."""
    return write_bytes(path, text.encode("utf-8"), root)


def append_text(path: str | os.PathLike[str], text: str, root: str | os.PathLike[str]) -> Path:
    """Append ``text`` (UTF-8) to the regular file ``path`` inside ``root``, made when absent."""
    parts = relative_parts(path, root)
    shown = Path(os.path.abspath(os.fspath(path)))
    with open_folder(parts[:-1], root) as folder:
        _check_target(parts[-1], folder, shown)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            descriptor = os.open(parts[-1], flags, _FILE_MODE, dir_fd=folder)
        except OSError as exc:
            raise _refusal(exc, str(shown), parts[-1], folder) from None
        with os.fdopen(descriptor, "ab") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise WriteRefused("not_regular_file", shown, "something other than a regular file stands there")
            try:
                handle.write(text.encode("utf-8"))
            except OSError as exc:
                raise WriteRefused("unwritable", shown, f"{type(exc).__name__}: {exc.strerror or exc}") from None
    return shown


def make_folder(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> Path:
    """Make the folder ``path`` inside ``root`` (and its parents) without following any symlink below ``root``."""
    target = Path(os.path.abspath(os.fspath(path)))
    parts = () if target == Path(os.path.abspath(os.fspath(root))) else relative_parts(path, root)
    with open_folder(parts, root):
        return target


def stale_temporaries(root: str | os.PathLike[str]) -> list[Path]:
    """Temporary files of atomic writes left under ``root`` by a process that died before renaming them
    (symlinks are not followed into other folders)."""
    found = []
    for folder, folders, files in os.walk(root, followlinks=False):
        found += [Path(folder, name) for name in files if TEMPORARY.match(name)]
        folders.sort()
    return sorted(found)


def remove_stale_temporaries(root: str | os.PathLike[str]) -> list[Path]:
    """Remove :func:`stale_temporaries` of ``root`` (call it only while holding the folder's writer lock, so
    no live write's temporary is taken); returns what was removed."""
    removed = []
    for path in stale_temporaries(root):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path)
    return removed
