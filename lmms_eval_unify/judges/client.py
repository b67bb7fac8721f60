"""Minimal OpenAI-compatible chat-completions client with bounded concurrency, deadlines and retries.

Every request must complete within ``timeout_s`` (connect, send, status line and the whole body: a server that
drips bytes cannot outlive it). Requests go through ``lmms_eval_unify.judges.http.HttpEndpoint``, shared with
the models served over HTTP. Retries (exponential backoff with jitter) cover HTTP 408/409/429/5xx, deadlines,
connection errors and malformed 200 bodies (not JSON, no choice, a ``message`` that is null or whose
``content`` is not a string); a ``Retry-After`` header sets the minimum wait. A redirect fails at once, naming
its target; a reply body over the gate's ``judge_reply_bytes`` limit fails at once too. The API key only ever
appears in the ``Authorization`` header: it is redacted, in its plain and encoded forms, from the whole text of
every error (response bodies a server echoes included) before the text is cut.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from lmms_eval_unify.judges.http import EndpointError, HttpEndpoint, RetryPolicy


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


class JudgeRequestError(EndpointError):
    """A judge request failed for good (non-retryable status or retries exhausted)."""


class ChatClient:
    """Thread-safe client; at most ``max_concurrency`` requests are on the wire at once, each within
    ``deadline_s`` seconds from its first byte sent to its last byte received."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        deadline_s: float,
        max_concurrency: int,
        retry: RetryPolicy,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.retry = retry
        self._endpoint = HttpEndpoint(
            base_url,
            api_key,
            deadline_s=deadline_s,
            retry=retry,
            concurrency=max_concurrency,
            error=JudgeRequestError,
            label="judge",
            sleep=sleep,
        )

    def complete(self, model: str, messages: list[dict[str, Any]], params: Mapping[str, Any]) -> str:
        """Return the assistant text for ``messages``; raise ``JudgeRequestError`` when it cannot."""
        body = {"model": model, "messages": messages, **params}
        return self._endpoint.post("chat/completions", "judge_reply", reply_content, json=body)

    def close(self) -> None:
        self._endpoint.close()
