"""Endpoint and cache-path precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmms_eval_unify.judges.config import (
    JudgeConfig,
    JudgeNotConfiguredError,
    resolve_cache_path,
    resolve_endpoint,
    resolve_extra_body,
)
from lmms_eval_unify.run.context import run_context

ENV = (
    "LMMS_EVAL_UNIFY_JUDGE_BASE_URL",
    "LMMS_EVAL_UNIFY_JUDGE_MODEL",
    "LMMS_EVAL_UNIFY_JUDGE_API_KEY",
    "LMMS_EVAL_UNIFY_JUDGE_CACHE",
    "LMMS_EVAL_UNIFY_JUDGE_EXTRA_BODY",
    "LMMS_EVAL_UNIFY_OUTPUT_DIR",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def test_endpoint_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(JudgeNotConfiguredError, match="OPENAI_BASE_URL"):
        resolve_endpoint(JudgeConfig(), "m")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://fallback/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "k-openai")
    endpoint = resolve_endpoint(JudgeConfig(), "template-model")
    assert (endpoint.base_url, endpoint.model, endpoint.api_key) == (
        "http://fallback/v1",
        "template-model",
        "k-openai",
    )
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", "http://ours/v1")
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_MODEL", "env-model")
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_API_KEY", "k-ours")
    endpoint = resolve_endpoint(JudgeConfig(), "template-model")
    assert (endpoint.base_url, endpoint.model, endpoint.api_key) == ("http://ours/v1", "env-model", "k-ours")
    override = JudgeConfig.coerce({"base_url": "http://task/v1", "model": "task-model", "api_key_env": "TASK_KEY"})
    monkeypatch.setenv("TASK_KEY", "k-task")
    endpoint = resolve_endpoint(override, "template-model")
    assert (endpoint.base_url, endpoint.model, endpoint.api_key) == ("http://task/v1", "task-model", "k-task")
    assert "k-task" not in repr(endpoint)
    monkeypatch.delenv("LMMS_EVAL_UNIFY_JUDGE_MODEL")
    with pytest.raises(JudgeNotConfiguredError, match="LMMS_EVAL_UNIFY_JUDGE_MODEL"):
        resolve_endpoint(JudgeConfig(base_url="http://x"), None)


def test_cache_path_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LMMS_EVAL_UNIFY_OUTPUT_DIR", raising=False)
    assert resolve_cache_path(JudgeConfig()) == tmp_path / "lmms_eval_unify_outputs" / "judge_cache.sqlite"
    with run_context(output_path=str(tmp_path / "run")):  # the judge cache lives under --output_path
        assert resolve_cache_path(JudgeConfig()) == tmp_path / "run" / "unify_media" / "judge_cache.sqlite"
    monkeypatch.setenv("LMMS_EVAL_UNIFY_OUTPUT_DIR", str(tmp_path / "out"))
    assert resolve_cache_path(JudgeConfig()) == tmp_path / "out" / "judge_cache.sqlite"
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_CACHE", str(tmp_path / "shared.sqlite"))
    assert resolve_cache_path(JudgeConfig()) == tmp_path / "shared.sqlite"
    assert resolve_cache_path(JudgeConfig(cache_path="explicit.sqlite")) == Path("explicit.sqlite")


def test_config_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="unknown judge config keys"):
        JudgeConfig.coerce({"modle": "x"})
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_EXTRA_BODY", "[1]")
    with pytest.raises(ValueError, match="JSON object"):
        resolve_extra_body(JudgeConfig())
