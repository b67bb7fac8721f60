"""Fixtures: a local OpenAI-compatible judge server and an environment pointing the judge layer at it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lmms_eval_unify.judges import reset_judge_state
from lmms_eval_unify.testing.openai_server import OpenAICompatServer, marker_reply

API_KEY = "sk-test-9f2c1e77-DO-NOT-LEAK"


@pytest.fixture
def server() -> Iterator[OpenAICompatServer]:
    """Server answering whatever ``<<REPLY:...>>`` the prompt embeds; requires ``API_KEY``."""
    with OpenAICompatServer(marker_reply(default="no marker"), api_key=API_KEY, max_lifetime_s=60) as srv:
        yield srv


@pytest.fixture
def judge_env(server: OpenAICompatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point the judge layer at ``server`` with a cache under ``tmp_path``; returns the cache path."""
    cache = tmp_path / "cache" / "judge_cache.sqlite"
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "LMMS_EVAL_UNIFY_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", server.base_url)
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_API_KEY", API_KEY)
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_CACHE", str(cache))
    reset_judge_state()
    yield cache
    reset_judge_state()
