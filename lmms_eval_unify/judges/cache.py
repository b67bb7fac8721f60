"""Persistent SQLite cache of raw judge replies (WAL mode, one connection per thread).

Only raw reply texts are stored, never parsed scores (parsing is re-run on read) and never credentials.
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

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judgements (
    key TEXT PRIMARY KEY,
    template TEXT NOT NULL,
    model TEXT NOT NULL,
    replies TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(parts: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``parts``."""
    canonical = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def valid_replies(replies: object) -> bool:
    """Whether ``replies`` is what the cache may hold: a non-empty list of reply texts."""
    return isinstance(replies, list) and bool(replies) and all(isinstance(r, str) for r in replies)


class JudgeCache:
    """Thread-safe key -> list of reply texts store."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
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
