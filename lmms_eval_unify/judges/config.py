"""Judge endpoint configuration: explicit overrides > our env vars > standard OpenAI env vars."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from lmms_eval_unify.env_vars import read

ENV_BASE_URL = "LMMS_EVAL_UNIFY_JUDGE_BASE_URL"
ENV_MODEL = "LMMS_EVAL_UNIFY_JUDGE_MODEL"
ENV_API_KEY = "LMMS_EVAL_UNIFY_JUDGE_API_KEY"
ENV_CACHE = "LMMS_EVAL_UNIFY_JUDGE_CACHE"
ENV_CONCURRENCY = "LMMS_EVAL_UNIFY_JUDGE_CONCURRENCY"
ENV_TIMEOUT = "LMMS_EVAL_UNIFY_JUDGE_TIMEOUT"
ENV_EXTRA_BODY = "LMMS_EVAL_UNIFY_JUDGE_EXTRA_BODY"
FALLBACK_BASE_URL = "OPENAI_BASE_URL"
FALLBACK_API_KEY = "OPENAI_API_KEY"
CACHE_FILENAME = "judge_cache.sqlite"
REFERENCE_JUDGE_MODEL = "lmms-eval-unify-reference-judge"
"""The model name of the reference judges (``lmms-eval-unify judge serve``): offline fixtures only."""


class JudgeNotConfiguredError(RuntimeError):
    """A judge was needed but no endpoint is configured."""


@dataclass(frozen=True)
class JudgeConfig:
    """Overrides for one judge call site; ``None`` means "use env var, then the template default".

    ``api_key`` is never shown in ``repr``; in YAML prefer ``api_key_env`` (the name of an env var
    holding the key) so that no secret is written to a task file.
    """

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str | None = None
    cache_path: str | None = None
    max_concurrency: int | None = None
    timeout_s: float | None = None
    max_retries: int = 6
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    retry_after_max_s: float = 300.0
    temperature: float | None = None
    max_tokens: int | None = None
    two_turn: bool | None = None
    extra_body: Mapping[str, Any] | None = None

    @classmethod
    def coerce(cls, value: JudgeConfig | Mapping[str, Any] | None) -> JudgeConfig:
        """Accept a config, a mapping of its fields (e.g. from a task YAML) or ``None``."""
        if value is None:
            return cls()
        if isinstance(value, JudgeConfig):
            return value
        known = {f.name for f in fields(cls)}
        unknown = set(value) - known
        if unknown:
            raise ValueError(f"unknown judge config keys {sorted(unknown)}; known: {sorted(known)}")
        return cls(**dict(value))


@dataclass(frozen=True)
class Endpoint:
    """A resolved endpoint; the key is kept out of ``repr``."""

    base_url: str
    model: str
    api_key: str | None = field(repr=False)


def resolve_endpoint(config: JudgeConfig, default_model: str | None) -> Endpoint:
    """Resolve base URL, model and key; raise a clear error naming the env vars when missing."""
    base_url = config.base_url or read(ENV_BASE_URL) or os.environ.get(FALLBACK_BASE_URL)
    if not base_url:
        raise JudgeNotConfiguredError(
            "A model-as-judge endpoint is required but none is configured. Set "
            f"{ENV_BASE_URL} (or {FALLBACK_BASE_URL}) to an OpenAI-compatible base URL such as "
            f"http://localhost:8000/v1, optionally {ENV_MODEL} and {ENV_API_KEY} (or {FALLBACK_API_KEY}), "
            "or pass judge config overrides (base_url/model/api_key_env) in the task YAML. See docs/judges.md."
        )
    model = config.model or read(ENV_MODEL) or default_model
    if not model:
        raise JudgeNotConfiguredError(f"No judge model: set {ENV_MODEL} or the task's judge `model` override.")
    key: str | None
    if config.api_key is not None:
        key = config.api_key
    elif config.api_key_env:
        key = os.environ.get(config.api_key_env)
    else:
        key = read(ENV_API_KEY) or os.environ.get(FALLBACK_API_KEY)
    return Endpoint(base_url=base_url.rstrip("/"), model=model, api_key=key or None)


def resolve_cache_path(config: JudgeConfig) -> Path:
    """Explicit path > ``$LMMS_EVAL_UNIFY_JUDGE_CACHE`` > ``<media base>/judge_cache.sqlite``, the media base
    being the run's ``<--output_path>/unify_media`` (``run.context.media_base``)."""
    from lmms_eval_unify.run.context import media_base

    explicit = config.cache_path or read(ENV_CACHE)
    if explicit:
        return Path(explicit)
    return media_base() / CACHE_FILENAME


def resolve_concurrency(config: JudgeConfig) -> int:
    return max(1, int(config.max_concurrency or read(ENV_CONCURRENCY) or 8))


def resolve_timeout(config: JudgeConfig) -> float:
    return float(config.timeout_s or read(ENV_TIMEOUT) or 300.0)


def resolve_extra_body(config: JudgeConfig) -> dict[str, Any]:
    """Extra request-body fields: the override, else the JSON object in ``$LMMS_EVAL_UNIFY_JUDGE_EXTRA_BODY``."""
    if config.extra_body is not None:
        return dict(config.extra_body)
    return dict(read(ENV_EXTRA_BODY) or {})
