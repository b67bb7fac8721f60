"""Minimal OpenAI-compatible chat-completions client with bounded concurrency, deadlines and retries.

Every request must complete within ``timeout_s`` (connect, send, status line and the whole body: a server that
drips bytes cannot outlive it). Requests go through ``lmms_eval_unify.judges.http.HttpEndpoint``, shared with the
models served over HTTP. Retries (exponential backoff with jitter) cover HTTP 408/409/429/5xx, deadlines,
connection errors and malformed 200 bodies (not JSON, no choice, a ``message`` that is null, or whose ``content``
is not a string and that carries no reasoning either); a ``Retry-After`` header sets the minimum wait. A redirect
fails at once, naming its target; a reply body over the gate's ``judge_reply_bytes`` limit fails at once too. The
API key only ever appears in the ``Authorization`` header: it is redacted, in its plain and encoded forms, from the
whole text of every error (response bodies a server echoes included) before the text is cut.

Reply shapes of reasoning judges (:func:`chat_reply`): a server with a reasoning parser (vLLM ``--reasoning-parser``,
SGLang, OpenRouter) returns the thinking in ``message.reasoning`` or ``message.reasoning_content`` and the answer in
``content``; only ``content`` is the judge's reply. When ``content`` is null or empty and reasoning is present (the
judge spent its ``max_tokens`` thinking), the reply is the reasoning inside ``<think>…</think>``: parsing removes it,
so the judgement is ``judge_invalid`` ("no answer after the reasoning") with the reasoning kept in ``raw``, and it is
not retried (greedy decoding would think the same way again). A reply that stopped at ``max_tokens``
(``finish_reason: "length"``) is logged as a warning and parsed as it is. ``usage`` is not used; the reply's ``model``
is kept (:attr:`ChatReply.model`) so that a judgement answered by another model than the one asked is flagged
(``JudgeResult.model_mismatch``).

One judgement's requests share one budget of :data:`BUDGET_DEADLINES` times the configured deadline: every attempt
gets at most the deadline and at most what is left of the budget, and a wait that would pass the budget (a long
``Retry-After``) fails the judgement at once (``HttpEndpoint(budget_s=…)``). A judge that drips bytes or asks for
long waits holds one judgement (or the preflight's ping) for at most twice its deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from loguru import logger

from lmms_eval_unify.judges.http import EndpointError, HttpEndpoint, RetryPolicy

BUDGET_DEADLINES = 2
"""A judgement's whole budget, retries and waits included, in request deadlines: one slow attempt and quick retries."""
REASONING_FIELDS = ("reasoning", "reasoning_content")
"""Message fields that hold a reasoning model's thinking when the server separates it from the answer: vLLM's
``reasoning`` (``reasoning_content`` before its rename), SGLang's ``reasoning_content``, OpenRouter's ``reasoning``."""


def _first_choice(body: object) -> tuple[dict[str, Any], dict[str, Any]]:
    """``choices[0]`` of a chat-completions body and its ``message``; ``ValueError`` when either is missing."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("no choice")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ValueError(f"message is {type(message).__name__}, not an object")
    return choices[0], message


def reply_content(body: object) -> str:
    """The assistant text of a chat-completions body; ``ValueError`` unless ``choices[0].message.content``
    is a string."""
    _, message = _first_choice(body)
    content = message.get("content")
    if not isinstance(content, str):
        raise ValueError(f"content is {type(content).__name__}, not a string")
    return content


@dataclass(frozen=True)
class ChatReply:
    """A judge's reply: the text that is parsed and cached, and why the server stopped (``None`` if unsaid)."""

    text: str
    finish_reason: str | None
    model: str | None = None
    """The model the reply names (``None`` if it names none)."""


def chat_reply(body: object) -> ChatReply:
    """The judge reply of a chat-completions body: ``content``, or, when it is null or empty and the message
    carries reasoning (:data:`REASONING_FIELDS`), ``<think>{reasoning}</think>``. ``ValueError`` (retried) when
    there is neither a string ``content`` nor reasoning."""
    choice, message = _first_choice(body)
    content = message.get("content")
    reasoning = next((message[name] for name in REASONING_FIELDS if isinstance(message.get(name), str)), None)
    if not content and reasoning:
        text = f"<think>{reasoning}</think>"
    elif isinstance(content, str):
        text = content
    else:
        raise ValueError(f"content is {type(content).__name__}, not a string, and there is no reasoning")
    finish_reason = choice.get("finish_reason")
    model = body.get("model") if isinstance(body, dict) else None
    return ChatReply(
        text, finish_reason if isinstance(finish_reason, str) else None, model if isinstance(model, str) else None
    )


class JudgeRequestError(EndpointError):
    """A judge request failed for good (non-retryable status or retries exhausted)."""


class ChatClient:
    """Thread-safe client; at most ``max_concurrency`` requests are on the wire at once, each within ``deadline_s``
    seconds, and each call (all its attempts and the waits between them) within :data:`BUDGET_DEADLINES` times
    that."""

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
            budget_s=BUDGET_DEADLINES * deadline_s,
        )

    def complete(self, model: str, messages: list[dict[str, Any]], params: Mapping[str, Any]) -> str:
        """The text of :meth:`complete_reply`."""
        return self.complete_reply(model, messages, params).text

    def complete_reply(self, model: str, messages: list[dict[str, Any]], params: Mapping[str, Any]) -> ChatReply:
        """The judge reply (:func:`chat_reply`) for ``messages``; ``JudgeRequestError`` when there is none."""
        body = {"model": model, "messages": messages, **params}
        reply = self._endpoint.post("chat/completions", "judge_reply", chat_reply, json=body)
        if reply.finish_reason == "length":
            logger.warning(
                f"judge {model} stopped at max_tokens ({params.get('max_tokens', 'server default')}, finish_reason "
                "'length'): a verdict cut off there is judge_invalid; raise max_tokens in the judge config"
            )
        return reply

    def close(self) -> None:
        self._endpoint.close()


def answered_by_other(requested: str, answered: str | None) -> bool:
    """Whether a reply naming ``answered`` came from another model than ``requested``: a dated snapshot of it
    (``gpt-4o`` answered by ``gpt-4o-2024-08-06``) or a reply naming none is the same model."""
    if not answered:
        return False
    asked, named = requested.strip().lower(), answered.strip().lower()
    return named != asked and not named.startswith(f"{asked}-")
