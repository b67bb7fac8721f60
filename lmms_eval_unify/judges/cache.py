"""Persistent SQLite cache of raw judge replies (WAL mode, one connection per thread).

Only raw reply texts are stored, never parsed scores (parsing is re-run on read) and never credentials.

Opening a cache checks its health first (:func:`cache_problem`): a file that is not a regular file within the
gate's ``cache_file_bytes`` limit, not an SQLite database, damaged, or a database of another schema is moved
aside (renamed ``<name>.corrupt-<timestamp>``, with its ``-wal``/``-shm`` files), the move is logged, and a new
cache is started in its place: judged tasks still run, and no reply of the old file is deleted.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loguru import logger

from lmms_eval_unify.gate import Refused, check_file

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


def cache_key(parts: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``parts``."""
    canonical = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def valid_replies(replies: object) -> bool:
    """Whether ``replies`` is what the cache may hold: a non-empty list of reply texts."""
    return isinstance(replies, list) and bool(replies) and all(isinstance(r, str) for r in replies)


def cache_problem(path: Path) -> str | None:
    """Why the file at ``path`` cannot serve as a judge cache, or ``None`` (absent, empty, or healthy)."""
    if not path.exists() and not path.is_symlink():
        return None
    try:
        folder = path.resolve().parent  # where the configured path leads is trusted; the bytes there are not
    except (OSError, RuntimeError):  # a symlink loop: the gate names it
        folder = path.parent
    try:
        check_file(path, "cache_file", [folder])
    except Refused as exc:
        return f"refused by the gate: {exc}"
    try:
        conn = sqlite3.connect(path, timeout=60.0)
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
        """Open the cache at ``path``, creating it, or replacing a corrupt file (moved aside, not deleted)."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
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
            conn = sqlite3.connect(self.path, timeout=60.0)
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
