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

One writer per folder: :func:`folder_lock` holds an exclusive lock on ``<folder>/.lmms_eval_unify.lock`` (the
lock file itself opened through the gate, never through a symlink) for a command's whole write; a second
writer says what it waits for, waits up to ``$LMMS_EVAL_UNIFY_LOCK_WAIT`` seconds and then gives up
(:class:`FolderBusy`). Holding the lock, the command removes the temporaries an interrupted writer left in the
folder and says so.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import stat
import sys
import time
from collections.abc import Callable, Iterator
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
_MISSING = "missing"
LOCK_FILE = ".lmms_eval_unify.lock"
"""The lock file of a folder's writer (:func:`folder_lock`); a folder holding one is that writer's own."""
LOCK_WAIT_ENV = "LMMS_EVAL_UNIFY_LOCK_WAIT"
DEFAULT_LOCK_WAIT_S = 600.0
"""How long a second writer waits for a folder's lock by default (``$LMMS_EVAL_UNIFY_LOCK_WAIT``)."""
LOCK_POLL_S = 0.2
EXIT_REFUSED = 2
"""Exit status of a command whose main result was refused by the gate, or whose folder another writer held."""


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
                raise WriteRefused("not_a_folder", shown, _MISSING) from None
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
    (symlinks are not followed into other folders; a folder below ``root`` with a :data:`LOCK_FILE` of its own
    belongs to its own writer, who sweeps it)."""
    found = []
    for folder, folders, files in os.walk(root, followlinks=False):
        found += [Path(folder, name) for name in files if TEMPORARY.match(name)]
        folders[:] = sorted(name for name in folders if not os.path.lexists(os.path.join(folder, name, LOCK_FILE)))
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


def check_writable(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> None:
    """Raise :class:`WriteRefused` when a write of ``path`` inside ``root`` would be refused for what stands there
    now (a symlinked folder, something other than a folder on the way, a symlink, FIFO or folder at the file);
    nothing is made, and a part of the path that does not exist yet is no problem."""
    parts = relative_parts(path, root)
    shown = Path(os.path.abspath(os.fspath(path)))
    try:
        with open_folder(parts[:-1], root, create=False) as folder:
            _check_target(parts[-1], folder, shown)
    except WriteRefused as refused:
        if refused.detail != _MISSING:
            raise


def check_folder(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> None:
    """Raise :class:`WriteRefused` when a folder of ``path`` inside ``root`` (``path`` included) is a symlink or
    something other than a folder now; nothing is made, and a part that does not exist yet is no problem."""
    parts = relative_parts(path, root)
    try:
        with open_folder(parts, root, create=False):
            pass
    except WriteRefused as refused:
        if refused.detail != _MISSING:
            raise


def output_root(folder: str | os.PathLike[str]) -> Path:
    """The folder a user chose to write into (``-o``, ``--out``, ``--output_path``), made when absent, as its real
    path: symlinks in the path the user gave are the user's; nothing below it is followed."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        reason: WriteReason = "not_a_folder" if isinstance(exc, FileExistsError | NotADirectoryError) else "unwritable"
        raise WriteRefused(reason, folder, f"cannot make the folder: {exc.strerror or exc}") from None
    return Path(os.path.realpath(folder))


def write_or_record(
    path: str | os.PathLike[str], data: str | bytes, root: str | os.PathLike[str], refused: list[WriteRefused]
) -> bool:
    """Write ``data`` (text as UTF-8) to ``path`` inside ``root``; a refusal is appended to ``refused`` instead
    of raised (the file fails, the caller goes on). Whether it was written."""
    try:
        write_bytes(path, data.encode("utf-8") if isinstance(data, str) else data, root)
    except WriteRefused as refusal:
        refused.append(refusal)
        return False
    return True


def say(line: str) -> None:
    """One line for the user, on stderr."""
    print(line, file=sys.stderr, flush=True)


class FolderBusy(Exception):
    """Another writer held the folder's lock for longer than the wait allowed; nothing was written."""


def lock_wait_s() -> float:
    """Seconds a second writer waits for a folder's lock: ``$LMMS_EVAL_UNIFY_LOCK_WAIT``, else the default."""
    from lmms_eval_unify.env_vars import read

    return float(read(LOCK_WAIT_ENV) or DEFAULT_LOCK_WAIT_S)


@contextlib.contextmanager
def folder_lock(
    folder: str | os.PathLike[str],
    command: str,
    wait_s: float | None = None,
    tell: Callable[[str], None] = say,
) -> Iterator[Path]:
    """Hold the writer lock of ``folder`` (made when absent) for the block; yields the folder's real path
    (:func:`output_root`). A second writer ``tell``s what it waits for, waits up to ``wait_s`` seconds
    (:func:`lock_wait_s` by default), then raises :class:`FolderBusy`. Holding the lock, the temporaries an
    interrupted writer left in the folder are removed, in one line naming how many and where."""
    root = output_root(folder)
    descriptor = _open_lock_file(root)
    try:
        _acquire(descriptor, root, command, lock_wait_s() if wait_s is None else wait_s, tell)
        holder = f"{command} (pid {os.getpid()})\n".encode()
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, holder, 0)
        removed = remove_stale_temporaries(root)
        if removed:
            tell(f"{command}: removed {len(removed)} unfinished temporary file(s) of an interrupted write under {root}")
        yield root
    finally:
        os.close(descriptor)  # releases the lock


def _open_lock_file(root: Path) -> int:
    """A read-write descriptor of ``root/LOCK_FILE``, made when absent, never through a symlink."""
    shown = root / LOCK_FILE
    with open_folder((), root) as folder:
        _check_target(LOCK_FILE, folder, shown)
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            descriptor = os.open(LOCK_FILE, flags, _FILE_MODE, dir_fd=folder)
        except OSError as exc:
            raise _refusal(exc, str(shown), LOCK_FILE, folder) from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise WriteRefused("not_regular_file", shown, "something other than a regular file stands there")
    return descriptor


def _acquire(descriptor: int, root: Path, command: str, wait_s: float, tell: Callable[[str], None]) -> None:
    """Take the exclusive lock of ``descriptor``, waiting up to ``wait_s`` seconds for its holder."""
    if _try_lock(descriptor):
        return
    holder = os.pread(descriptor, 200, 0).decode("utf-8", "replace").strip() or "another process"
    tell(f"{command}: {root} is being written by {holder}; waiting up to {wait_s:.0f} s for it to finish")
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        time.sleep(LOCK_POLL_S)
        if _try_lock(descriptor):
            tell(f"{command}: {root} is free, going on")
            return
    raise FolderBusy(
        f"{command}: {root} is still being written by {holder} after {wait_s:.0f} s; nothing was written. Run "
        f"again once it has finished (or wait longer: {LOCK_WAIT_ENV}=SECONDS)"
    )


def _try_lock(descriptor: int) -> bool:
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
