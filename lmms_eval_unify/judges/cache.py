"""Persistent SQLite cache of raw judge replies (WAL mode, one connection per thread).

Only raw reply texts are stored, never parsed scores (parsing is re-run on read) and never credentials.

Opening a cache checks its health first (:func:`cache_problem`): a file that is not a regular file within the
gate's ``cache_file_bytes`` limit, not an SQLite database, damaged, or a database of another schema is moved
aside (renamed ``<name>.corrupt-<timestamp>``, with its ``-wal``/``-shm`` files), the move is logged, and a new
cache is started in its place: judged tasks still run, and no reply of the old file is deleted.

Before SQLite opens anything, the cache's path passes the write gate's folder walk (:func:`confine`): no folder of
it below its root (the run's ``--output_path`` when the cache lies in it, else the cache's own folder) is a
symlink, and no symlink stands at the file or its ``-wal``/``-shm``/``-journal`` files (``WriteRefused``
otherwise); SQLite then opens it with ``nofollow=1``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from loguru import logger

from lmms_eval_unify.gate import Refused, check_file
from lmms_eval_unify.run.context import current
from lmms_eval_unify.writes import WriteRefused, open_folder, relative_parts

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judgements (
    key TEXT PRIMARY KEY,
    template TEXT NOT NULL,
    model TEXT NOT NULL,
    replies TEXT NOT NULL,
    created REAL NOT NULL
)
"""
COLUMNS = ("key", "template", "model", "replies", "created")
SIDE_FILES = ("-wal", "-shm")
JOURNAL = "-journal"
CONNECT_TIMEOUT_S = 60.0


def cache_root(path: Path) -> tuple[Path, tuple[str, ...]]:
    """The root the cache at ``path`` is confined to and the path's parts below it: the run's real
    ``--output_path`` when the cache lies in it (the default ``<output_path>/unify_media/judge_cache.sqlite``),
    else the cache's own folder, a place the user chose (its real path)."""
    absolute = Path(os.path.abspath(path))
    output = current().output_path
    if output:
        real = Path(os.path.realpath(output))
        for base in (Path(os.path.abspath(output)), real):
            if absolute.is_relative_to(base) and absolute != base:
                return real, absolute.relative_to(base).parts
    return Path(os.path.realpath(absolute.parent)), (absolute.name,)


def confine(path: Path) -> None:
    """Make the cache's folders without following a symlink below its root (:func:`cache_root`) and refuse
    anything but a regular file at its side files (``WriteRefused``); what stands at the file itself is for
    :func:`cache_problem` to judge (a symlink there is moved aside, never written through)."""
    root, parts = cache_root(path)
    relative_parts(root.joinpath(*parts), root)  # the same checks of the path as every write
    with open_folder(parts[:-1], root) as folder:
        for side in (*SIDE_FILES, JOURNAL):
            name = parts[-1] + side
            try:
                mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(mode):
                raise WriteRefused("symlink", path.with_name(name), "a symlink stands here; never written through")
            if not stat.S_ISREG(mode):
                raise WriteRefused("not_regular_file", path.with_name(name), "not a regular file")


def connect(path: Path) -> sqlite3.Connection:
    """An SQLite connection to ``path`` that refuses to open it through a symlink (``nofollow=1``)."""
    uri = f"file:{quote(os.path.abspath(path))}?nofollow=1"
    return sqlite3.connect(uri, uri=True, timeout=CONNECT_TIMEOUT_S)


def cache_key(parts: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``parts``."""
    canonical = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def valid_replies(replies: object) -> bool:
    """Whether ``replies`` is what the cache may hold: a non-empty list of reply texts."""
    return isinstance(replies, list) and bool(replies) and all(isinstance(r, str) for r in replies)


def cache_problem(path: Path) -> str | None:
    """Why the file at ``path`` cannot serve as a judge cache, or ``None`` (absent, empty, or healthy); a symlink
    there never is one (a cache is not written through a symlink, wherever it leads)."""
    if not path.exists() and not path.is_symlink():
        return None
    if path.is_symlink():
        return "a symlink (a cache is never written through one)"
    try:
        folder = path.resolve().parent  # where the configured path leads is trusted; the bytes there are not
    except (OSError, RuntimeError):  # a symlink loop: the gate names it
        folder = path.parent
    try:
        check_file(path, "cache_file", [folder])
    except Refused as exc:
        return f"refused by the gate: {exc}"
    try:
        conn = connect(path)
    except sqlite3.Error as exc:
        return f"cannot be opened: {exc}"
    try:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        tables = [name for name in tables if not name.startswith("sqlite_")]
        columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(judgements)"))
        check = [row[0] for row in conn.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        return f"not a readable SQLite database ({exc})"
    finally:
        conn.close()
    if check != ["ok"]:
        return f"a damaged SQLite database (quick_check: {'; '.join(map(str, check[:3]))})"
    if tables and (tables != ["judgements"] or columns != COLUMNS):
        found = {name: list(columns) if name == "judgements" else "..." for name in tables}
        return f"a database of another schema (tables {found}; expected judgements{list(COLUMNS)})"
    return None


def move_aside(path: Path, problem: str) -> Path:
    """Rename ``path`` (and its SQLite side files) to ``<name>.corrupt-<timestamp>`` and log why."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists() or target.is_symlink():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    path.rename(target)
    for suffix in SIDE_FILES:
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(target.with_name(target.name + suffix))
    logger.warning(
        "judge cache {} is {}: moved aside to {} (nothing deleted) and a new cache started in its place",
        path,
        problem,
        target,
    )
    return target


class JudgeCache:
    """Thread-safe key -> list of reply texts store."""

    def __init__(self, path: str | Path) -> None:
        """Open the cache at ``path``, creating it, or replacing a corrupt file (moved aside, not deleted);
        ``WriteRefused`` when its path leads through a symlink (:func:`confine`)."""
        self.path = Path(path)
        confine(self.path)
        self._local = threading.local()
        self.moved_to: Path | None = None
        """Where a corrupt file found at ``path`` was moved (``None``: there was none)."""
        problem = cache_problem(self.path)
        if problem is not None:
            try:
                self.moved_to = move_aside(self.path, problem)
            except FileNotFoundError:  # another process of the run moved it first
                pass
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path)
            conn.execute("PRAGMA busy_timeout=60000")
            self._local.conn = conn
        return conn

    def get(self, key: str) -> list[str] | None:
        """The cached replies, or ``None`` when absent or not a non-empty list of strings."""
        row = self._connect().execute("SELECT replies FROM judgements WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            replies = json.loads(row[0])
        except ValueError:
            return None
        return replies if valid_replies(replies) else None

    def put(self, key: str, template: str, model: str, replies: list[str]) -> None:
        """Store ``replies``; ``ValueError`` unless they are a non-empty list of strings."""
        if not valid_replies(replies):
            raise ValueError(f"refusing to cache judge replies that are not strings: {replies!r:.80}")
        with self._connect() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO judgements (key, template, model, replies, created) VALUES (?, ?, ?, ?, ?)",
                (key, template, model, json.dumps(replies, ensure_ascii=False), time.time()),
            )

    def __len__(self) -> int:
        return int(self._connect().execute("SELECT COUNT(*) FROM judgements").fetchone()[0])
