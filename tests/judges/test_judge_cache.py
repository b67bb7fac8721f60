"""The judge cache's health: a file that is not a healthy cache is moved aside (never deleted), logged, and a
new cache is started, at open time and in the run preflight; a healthy cache is kept as it is."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from log_capture import logged

from lmms_eval_unify.integration.preflight import judge_problems
from lmms_eval_unify.integration.task import UnifyTask
from lmms_eval_unify.judges import OK, judge
from lmms_eval_unify.judges.cache import JudgeCache, cache_problem

VERDICT = '<<REPLY:{"reason": "ok", "score": 1}>>'


def garbage(path: Path) -> None:
    path.write_bytes(b"\x00garbage, not a database\n" * 100)


def other_schema(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE judgements (key TEXT PRIMARY KEY, verdict INTEGER)")
        conn.execute("INSERT INTO judgements VALUES ('k', 1)")
    conn.close()


def foreign_database(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
    conn.close()


def damaged(path: Path) -> None:
    JudgeCache(path)
    with sqlite3.connect(path) as conn:
        rows = [(f"k{i}", "t", "m", '["' + "reply " * 50 + '"]', 0.0) for i in range(300)]
        conn.executemany("INSERT INTO judgements VALUES (?, ?, ?, ?, ?)", rows)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(path.read_bytes())
    data[4096 * 3 : 4096 * 6] = bytes(range(256)) * 48  # three pages of the table's B-tree overwritten
    path.write_bytes(bytes(data))


def fifo(path: Path) -> None:
    os.mkfifo(path)


def folder(path: Path) -> None:
    path.mkdir()
    (path / "inside").write_text("kept")


def symlink_loop(path: Path) -> None:
    path.symlink_to(path)


BROKEN = [garbage, other_schema, foreign_database, damaged, fifo, folder, symlink_loop]


@pytest.mark.parametrize("make", BROKEN, ids=lambda f: f.__name__)
def test_a_broken_cache_is_moved_aside_logged_and_replaced(tmp_path: Path, make) -> None:
    path = tmp_path / "judge_cache.sqlite"
    make(path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert cache_problem(path) is not None
    with logged("WARNING") as messages:
        cache = JudgeCache(path)
    assert cache.moved_to is not None and cache.moved_to.name.startswith("judge_cache.sqlite.corrupt-")
    (warning,) = messages
    assert str(path) in warning and str(cache.moved_to) in warning and "nothing deleted" in warning
    moved = sorted(p.name.replace(cache.moved_to.name, path.name) for p in tmp_path.rglob("*") if p != path)
    assert [name for name in moved if not name.endswith(("-wal", "-shm"))] == [
        name for name in before if not name.endswith(("-wal", "-shm"))
    ]  # every file of the old cache is still there, under the new name
    cache.put("k", "t", "m", ["a reply"])
    assert JudgeCache(path).get("k") == ["a reply"] and cache_problem(path) is None


def test_a_healthy_cache_is_kept_with_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "judge_cache.sqlite"
    JudgeCache(path).put("k", "t", "m", ["kept"])
    path.with_name(path.name + "-empty").write_bytes(b"")
    assert cache_problem(path) is None and cache_problem(path.with_name(path.name + "-empty")) is None
    reopened = JudgeCache(path)
    assert reopened.moved_to is None and reopened.get("k") == ["kept"]
    assert not list(tmp_path.glob("*.corrupt-*"))


def test_a_judgement_over_a_garbage_cache_is_made_and_cached(judge_env: Path, server) -> None:
    judge_env.parent.mkdir(parents=True)
    garbage(judge_env)
    result = judge("gapeval.und.reasoning", variables={"question": "q", "answer": VERDICT, "reference": "r"},
                   config={"two_turn": False})  # fmt: skip
    assert result.status == OK and server.request_count == 1
    (moved,) = judge_env.parent.glob("judge_cache.sqlite.corrupt-*")
    assert moved.read_bytes().startswith(b"\x00garbage")
    assert len(JudgeCache(judge_env)) == 1


JUDGED_TASK = {"class": UnifyTask, "metadata": {"judged": True, "benchmark": "uni_mmmu"}}


def test_the_preflight_heals_the_cache_of_judged_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cache.sqlite"
    other_schema(path)
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_CACHE", str(path))
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    assert judge_problems({"judged_task": JUDGED_TASK}, ping=False) == []
    assert cache_problem(path) is None and len(list(tmp_path.glob("cache.sqlite.corrupt-*"))) == 1


def test_the_preflight_names_a_cache_that_cannot_be_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "not_a_folder").write_text("a file where the cache's folder should be")
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_CACHE", str(tmp_path / "not_a_folder" / "cache.sqlite"))
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    (problem,) = judge_problems({"judged_task": JUDGED_TASK}, ping=False)
    assert problem.kind == "judge" and problem.tasks == ("judged_task",)
    assert "not_a_folder/cache.sqlite cannot be used" in problem.what
    assert "LMMS_EVAL_UNIFY_JUDGE_CACHE" in problem.fix
