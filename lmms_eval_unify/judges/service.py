"""The one entry point task hooks use: :func:`judge` and its batched form :func:`judge_many`."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from loguru import logger
from tqdm import tqdm

from lmms_eval_unify.judges.cache import JudgeCache, cache_key
from lmms_eval_unify.judges.client import ChatClient, ChatReply, JudgeRequestError, RetryPolicy, answered_by_other
from lmms_eval_unify.judges.config import (
    JudgeConfig,
    resolve_cache_path,
    resolve_concurrency,
    resolve_endpoint,
    resolve_extra_body,
    resolve_timeout,
)
from lmms_eval_unify.judges.parsing import parse_reply
from lmms_eval_unify.judges.templates import ImageSlots, RenderedPrompt, Template, get_template

OK, INVALID, FAILED = "ok", "judge_invalid", "judge_failed"
ANSWERED_BY = ", answered by "
"""Between the model asked and the one that answered in a judgement's ``model_mismatch``."""
ConfigLike = JudgeConfig | Mapping[str, Any] | None


@dataclass(frozen=True)
class JudgeResult:
    """Outcome of one judgement. ``raw`` is the reply that was parsed (the last turn)."""

    template_id: str
    template_version: int
    model: str
    status: str
    fields: dict[str, Any]
    raw: str
    reason: str | None
    cached: bool
    replies: tuple[str, ...] = ()
    template_digest: str = ""
    """:attr:`Template.digest` of the template that was rendered ('' in results from before it was recorded)."""
    model_mismatch: str = ""
    """``asked X, answered by Y`` when a reply named another model than the one requested (a dated snapshot of it
    is the same model); '' otherwise, and for a judgement served from the cache."""

    @property
    def valid(self) -> bool:
        return self.status == OK

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form for logged samples."""
        return asdict(self) | {"valid": self.valid}


@dataclass(frozen=True)
class JudgeRequest:
    """One item of a :func:`judge_many` batch."""

    template_id: str
    variables: Mapping[str, Any] = field(default_factory=dict)
    images: ImageSlots = field(default_factory=dict)


# --------------------------------------------------------------------------- shared state
_lock = threading.Lock()
_clients: dict[tuple[Any, ...], ChatClient] = {}
_caches: dict[Path, JudgeCache] = {}
_key_locks: dict[str, threading.Lock] = {}
_stats: dict[str, Counter[str]] = {}


def _client(base_url: str, api_key: str | None, config: JudgeConfig) -> ChatClient:
    retry = RetryPolicy(config.max_retries, config.backoff_base_s, config.backoff_max_s, config.retry_after_max_s)
    concurrency, timeout = resolve_concurrency(config), resolve_timeout(config)
    ident = (base_url, api_key, concurrency, timeout, retry)
    with _lock:
        if ident not in _clients:
            _clients[ident] = ChatClient(
                base_url, api_key, deadline_s=timeout, max_concurrency=concurrency, retry=retry
            )
        return _clients[ident]


def _cache(config: JudgeConfig) -> JudgeCache:
    path = resolve_cache_path(config).resolve()
    with _lock:
        if path not in _caches:
            _caches[path] = JudgeCache(path)
        return _caches[path]


def _key_lock(key: str) -> threading.Lock:
    with _lock:
        return _key_locks.setdefault(key, threading.Lock())


def _count(label: str, **increments: int) -> None:
    with _lock:
        _stats.setdefault(label, Counter()).update(increments)


def judge_stats() -> dict[str, dict[str, int]]:
    """Counters per label (task name, else template id): judgements, requests, cache_hits, failed, invalid."""
    with _lock:
        return {label: dict(counter) for label, counter in _stats.items()}


def reset_judge_state() -> None:
    """Forget counters, clients and open caches (tests, or a new run in the same process)."""
    with _lock:
        for client in _clients.values():
            client.close()
        _clients.clear()
        _caches.clear()
        _key_locks.clear()
        _stats.clear()


# --------------------------------------------------------------------------- judging
def decoding(template: Template, config: JudgeConfig) -> dict[str, Any]:
    """The request-body parameters of a judgement: the extra body, then ``temperature`` and ``max_tokens`` (config
    over template; left out when neither sets them)."""
    temperature = config.temperature if config.temperature is not None else template.temperature
    max_tokens = config.max_tokens if config.max_tokens is not None else template.max_tokens
    params = resolve_extra_body(config)
    if temperature is not None:
        params["temperature"] = temperature
    if max_tokens is not None:
        params["max_tokens"] = max_tokens
    return params


def followup_turn(template: Template, config: JudgeConfig) -> str | None:
    """The second user turn of a two-turn judgement (config ``two_turn`` over the template's ``turns``), or None."""
    two_turn = config.two_turn if config.two_turn is not None else template.turns == 2
    if two_turn and not template.followup:
        raise ValueError(f"template {template.key} defines no follow-up turn; two_turn is not available")
    return template.followup if two_turn else None


def _hashed_messages(rendered: RenderedPrompt) -> list[dict[str, Any]]:
    """The messages with every image data URL replaced by its content hash (for the cache key)."""
    hashes = iter(rendered.image_hashes)

    def part(p: dict[str, Any]) -> dict[str, Any]:
        return {"type": "image", "sha256": next(hashes)} if p["type"] == "image_url" else p

    return [
        m | {"content": [part(p) for p in m["content"]]} if isinstance(m["content"], list) else m
        for m in rendered.messages
    ]


def _converse(
    client: ChatClient, model: str, rendered: RenderedPrompt, params: dict, followup: str | None
) -> list[ChatReply]:
    first = client.complete_reply(model, rendered.messages, params)
    if followup is None:
        return [first]
    messages = [
        *rendered.messages,
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": followup},
    ]
    return [first, client.complete_reply(model, messages, params)]


def model_mismatch(requested: str, replies: Sequence[ChatReply]) -> str:
    """``asked X, answered by Y`` when any reply came from another model (:func:`answered_by_other`), else ''."""
    others = sorted({r.model for r in replies if r.model and answered_by_other(requested, r.model)})
    if not others:
        return ""
    logger.warning(f"judge: asked {requested}, the reply names {', '.join(others)}; flagged in the judge record")
    return f"asked {requested}{ANSWERED_BY}{', '.join(others)}"


def verdict_source(log: Mapping[str, Any]) -> str | None:
    """The judge a logged judgement's reply came from (a sample's judge record, :meth:`JudgeResult.to_dict`): the
    model asked, or the one its ``model_mismatch`` names; None when no reply came (``judge_failed``)."""
    if log.get("status") == FAILED:
        return None
    other = str(log.get("model_mismatch") or "").partition(ANSWERED_BY)[2]
    return other or str(log.get("model") or "")


def judge(
    template_id: str,
    *,
    variables: Mapping[str, Any] | None = None,
    images: ImageSlots | None = None,
    config: ConfigLike = None,
    task: str | None = None,
) -> JudgeResult:
    """Judge one item with template ``template_id``; never guesses a verdict.

    Returns ``status`` 'ok' with parsed ``fields``, 'judge_invalid' (reply unparseable; ``raw`` kept) or
    'judge_failed' (endpoint failed after retries; not cached). Raises ``JudgeNotConfiguredError`` when
    no endpoint is configured and ``ValueError`` on missing variables or image slots.
    """
    template = get_template(template_id)
    cfg = JudgeConfig.coerce(config)
    endpoint = resolve_endpoint(cfg, template.default_model)
    rendered = template.render(variables or {}, images or {})
    params, followup = decoding(template, cfg), followup_turn(template, cfg)
    key = cache_key(
        {
            "model": endpoint.model,
            "template": template.key,
            "messages": _hashed_messages(rendered),
            "params": params,
            "followup": followup,
        }
    )
    label = task or template_id
    cache = _cache(cfg)
    mismatch = ""
    with _key_lock(key):
        replies = cache.get(key)
        cached = replies is not None
        if replies is None:
            client = _client(endpoint.base_url, endpoint.api_key, cfg)
            try:
                answered = _converse(client, endpoint.model, rendered, params, followup)
            except JudgeRequestError as exc:
                _count(label, judgements=1, failed=1)
                return JudgeResult(
                    template_id, template.version, endpoint.model, FAILED, {}, "", str(exc), False, (), template.digest
                )
            replies, mismatch = [reply.text for reply in answered], model_mismatch(endpoint.model, answered)
            cache.put(key, template.key, endpoint.model, replies)
    outcome = parse_reply(replies[-1], template.outputs)
    status = OK if outcome.valid else INVALID
    _count(
        label,
        judgements=1,
        requests=0 if cached else len(replies),
        cache_hits=int(cached),
        invalid=int(not outcome.valid),
    )
    return JudgeResult(
        template_id,
        template.version,
        endpoint.model,
        status,
        outcome.fields,
        replies[-1],
        outcome.error,
        cached,
        tuple(replies),
        template.digest,
        mismatch,
    )


def judge_many(
    requests: Sequence[JudgeRequest],
    *,
    config: ConfigLike = None,
    task: str | None = None,
    progress: bool = True,
) -> list[JudgeResult]:
    """Judge a batch concurrently (bounded by the configured concurrency), results in input order."""
    cfg = JudgeConfig.coerce(config)
    results: list[JudgeResult | None] = [None] * len(requests)
    with ThreadPoolExecutor(max_workers=resolve_concurrency(cfg)) as pool:
        futures = {
            pool.submit(judge, r.template_id, variables=r.variables, images=r.images, config=cfg, task=task): i
            for i, r in enumerate(requests)
        }
        bar = tqdm(total=len(futures), desc=f"judge {task or 'batch'}", disable=not progress, leave=False)
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            bar.update(1)
        bar.close()
    done = [r for r in results if r is not None]
    counts = Counter(r.status for r in done)
    batch = {
        "judgements": len(done),
        "requests": sum(len(r.replies) for r in done if not r.cached),
        "cache_hits": sum(r.cached for r in done),
        "failed": counts[FAILED],
        "invalid": counts[INVALID],
    }
    logger.info(_summary(task or "batch", batch))
    return done


def _summary(label: str, counts: Mapping[str, int]) -> str:
    return (
        f"judge {label}: {counts.get('judgements', 0)} judgements, {counts.get('requests', 0)} calls made, "
        f"{counts.get('cache_hits', 0)} cache hits, {counts.get('failed', 0)} failed, "
        f"{counts.get('invalid', 0)} invalid"
    )


def judge_summary(task: str | None = None) -> str:
    """One line (calls made, cache hits, failures, invalid replies) for ``task``, or all labels summed."""
    stats = judge_stats()
    if task is not None:
        return _summary(task, stats.get(task, {}))
    return _summary("all", sum((Counter(c) for c in stats.values()), Counter()))
