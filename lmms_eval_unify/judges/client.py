"""Minimal OpenAI-compatible chat-completions client with bounded concurrency and retries.

Retries (exponential backoff with jitter) cover HTTP 408/409/429/5xx, timeouts, connection errors and
malformed 200 bodies (not JSON, no choice, a ``message`` that is null or whose ``content`` is not a
string); a ``Retry-After`` header sets the minimum wait. The API key only ever appears in the
``Authorization`` header: it is redacted from every error text, including response bodies a server echoes.
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from loguru import logger

RETRYABLE_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))
REDACTED = "[REDACTED]"


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``[REDACTED]``."""
    return text.replace(secret, REDACTED) if secret else text


def reply_content(body: object) -> str:
    """The assistant text of a chat-completions body; ``ValueError`` unless ``choices[0].message.content``
    is a string."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("no choice")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ValueError(f"message is {type(message).__name__}, not an object")
    content = message.get("content")
    if not isinstance(content, str):
        raise ValueError(f"content is {type(content).__name__}, not a string")
    return content


class JudgeRequestError(RuntimeError):
    """A judge request failed for good (non-retryable status or retries exhausted)."""


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 6
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    retry_after_max_s: float = 300.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Jittered exponential delay for retry number ``attempt`` (0-based), at least ``retry_after``."""
        backoff = min(self.backoff_max_s, self.backoff_base_s * 2**attempt) * random.uniform(0.5, 1.0)
        if retry_after is None:
            return backoff
        return max(backoff, min(retry_after, self.retry_after_max_s))


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP date); ``None`` if absent/invalid."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class ChatClient:
    """Thread-safe client; at most ``max_concurrency`` requests are on the wire at once."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout_s: float,
        max_concurrency: int,
        retry: RetryPolicy,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.retry = retry
        self._api_key = api_key
        self._url = f"{base_url.rstrip('/')}/chat/completions"
        self._http = httpx.Client(timeout=timeout_s, headers=headers)
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._sleep = sleep

    def complete(self, model: str, messages: list[dict[str, Any]], params: Mapping[str, Any]) -> str:
        """Return the assistant text for ``messages``; raise ``JudgeRequestError`` when it cannot."""
        body = {"model": model, "messages": messages, **params}
        for attempt in range(self.retry.max_retries + 1):
            try:
                return self._post(body)
            except _Retryable as exc:
                if attempt == self.retry.max_retries:
                    raise JudgeRequestError(f"giving up after {attempt + 1} attempts: {exc}") from None
                delay = self.retry.delay(attempt, exc.retry_after)
                logger.warning(f"judge request failed ({exc}); retry {attempt + 1} in {delay:.1f}s")
                self._sleep(delay)
        raise AssertionError("unreachable")

    def _post(self, body: dict[str, Any]) -> str:
        try:
            return self._send(body)
        except _Retryable as exc:
            raise _Retryable(redact(str(exc), self._api_key), exc.retry_after) from None
        except JudgeRequestError as exc:
            raise JudgeRequestError(redact(str(exc), self._api_key)) from None

    def _send(self, body: dict[str, Any]) -> str:
        with self._slots:
            try:
                response = self._http.post(self._url, json=body)
            except httpx.TimeoutException as exc:
                raise _Retryable(f"timeout ({type(exc).__name__})") from None
            except httpx.TransportError as exc:
                raise _Retryable(f"transport error ({type(exc).__name__})") from None
        if response.status_code in RETRYABLE_STATUS:
            raise _Retryable(
                f"HTTP {response.status_code}: {response.text[:200]}",
                parse_retry_after(response.headers.get("retry-after")),
            )
        if response.status_code >= 400:
            raise JudgeRequestError(f"HTTP {response.status_code}: {response.text[:300]}")
        try:
            return reply_content(response.json())
        except ValueError as exc:
            raise _Retryable(f"malformed response body ({exc}) {response.text[:80]!r}") from None

    def close(self) -> None:
        self._http.close()
