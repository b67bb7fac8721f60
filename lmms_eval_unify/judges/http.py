"""HTTP for every network call of the plugin: a deadline on the whole request, no redirects, and secrets
redacted from any text before it is cut, logged or stored.

httpx's ``timeout`` bounds each socket operation, so a server that sends one byte every few seconds keeps a
request alive for as long as it likes. :class:`DeadlineClient` arms a watchdog for each request: connecting,
sending, waiting for the status line and reading the body must all end within ``deadline_s``; at the
deadline the watchdog shuts the request's socket down, the blocked read returns at once, the server sees the
connection closed, and the request fails with :class:`DeadlineExceeded` (an ``httpx.TimeoutException``). The
watchdog finds the socket through httpcore's ``trace`` request extension, so connections are not kept alive
between requests (a reused connection would not announce its socket).

Redirects are not followed (``follow_redirects=False``): a caller receives the 3xx response and fails with
:func:`redirect_error`, which names where the server pointed.

:func:`redact` removes a secret in its plain form and in the encodings a server may echo it in (URL percent
encoding, JSON and HTML escaping, base64 at any byte offset, as in a ``Basic`` header). :func:`read_body` reads
a streamed body within the gate's byte limit of its kind. :class:`HttpEndpoint` is the one retrying client of an
OpenAI-compatible server, shared by the judge client and the models served over HTTP.
"""

from __future__ import annotations

import base64
import email.utils
import functools
import html
import json
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

import httpx
from loguru import logger

from lmms_eval_unify.gate import Kind, Refused, check_count, parse_json

REDACTED = "[REDACTED]"
MIN_ENCODED_CHARS = 12
"""Shortest encoded form (a base64 fragment) that is redacted: shorter ones would match ordinary text."""

TraceCallback = Callable[[str, dict[str, Any]], None]


class DeadlineExceeded(httpx.TimeoutException):
    """A request did not complete (connect, send, status line, whole body) within its deadline."""


# --------------------------------------------------------------------------- redaction
def secret_forms(secret: str) -> list[str]:
    """``secret`` and every encoded form of it that :func:`redact` removes, longest first."""
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], html.escape(secret)}
    forms.update({secret.replace("/", "\\/"), quote(secret, safe=""), quote(secret), quote_plus(secret)})
    raw = secret.encode("utf-8")
    for offset in range(3):  # the secret's bytes at each position modulo 3 inside a longer base64 text
        encoded = base64.b64encode(bytes(offset) + raw).decode("ascii")
        core = encoded[-(-8 * offset // 6) : 8 * (offset + len(raw)) // 6]
        if len(core) >= MIN_ENCODED_CHARS:
            forms.update({core, core.translate(str.maketrans("+/", "-_"))})
    return sorted((form for form in forms if form), key=len, reverse=True)


@functools.lru_cache(maxsize=16)
def _secret_pattern(secret: str) -> re.Pattern[str]:
    """One pattern matching every form of ``secret``; percent escapes match in either letter case."""

    def any_case(escape: re.Match[str]) -> str:
        return "%" + "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in escape[1])

    def encoded_byte(byte: int) -> str:
        high, low = f"{byte >> 4:X}", f"{byte & 0xF:X}"
        return f"%[{high}{high.lower()}][{low}{low.lower()}]"

    def each_char_maybe_encoded(text: str) -> str:
        """``text`` with each character literal or percent-encoded (its UTF-8 bytes as ``%XX``, any case)."""
        return "".join(f"(?:{re.escape(c)}|{''.join(map(encoded_byte, c.encode()))})" for c in text)

    forms = [re.sub(r"%([0-9A-F]{2})", any_case, re.escape(f)) for f in secret_forms(secret)]
    return re.compile("|".join([*forms, each_char_maybe_encoded(secret)]))


def redact(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` and its encoded forms (:func:`secret_forms`) replaced by ``[REDACTED]``.
    Call it on the whole text, before anything is cut: a cut secret is no longer recognised."""
    return _secret_pattern(secret).sub(REDACTED, text) if secret else text


# --------------------------------------------------------------------------- deadlines
class _Watchdog:
    """Shuts a request's sockets down when its deadline passes, unless it was disarmed before."""

    def __init__(self, deadline_s: float, chained: TraceCallback | None) -> None:
        self.deadline_s = deadline_s
        self.expired = False
        self._chained = chained
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._disarmed = False
        self._timer = threading.Timer(deadline_s, self._expire)
        self._timer.daemon = True

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore ``trace`` extension: remember each socket the request opens (plain or TLS)."""
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                with self._lock:
                    self._sockets.append(sock)
                    if self.expired:
                        _shut(sock)
        if self._chained is not None:
            self._chained(event, info)

    def start(self) -> None:
        self._timer.start()

    def disarm(self) -> None:
        """Stop the watchdog; once this returns it shuts nothing down."""
        self._timer.cancel()
        with self._lock:
            self._disarmed = True

    def _expire(self) -> None:
        with self._lock:
            if self._disarmed:
                return
            self.expired = True
            for sock in self._sockets:
                _shut(sock)

    def error(self, request: httpx.Request) -> DeadlineExceeded:
        return DeadlineExceeded(
            f"no complete reply within the {self.deadline_s:.3g} s deadline of the whole request", request=request
        )


def _shut(sock: socket.socket) -> None:
    """End both directions of ``sock`` now (a blocked read returns; the peer sees the connection close). The
    base-class method is called so that a TLS socket is shut at the TCP level, under its TLS object."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:  # already closed
        pass


class _WatchedStream(httpx.SyncByteStream):
    """A response body whose reading counts against the request's deadline; closing it disarms the watchdog."""

    def __init__(self, stream: httpx.SyncByteStream, watchdog: _Watchdog, request: httpx.Request) -> None:
        self._stream, self._watchdog, self._request = stream, watchdog, request

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._stream
        except Exception:
            if self._watchdog.expired:
                raise self._watchdog.error(self._request) from None
            raise

    def close(self) -> None:
        self._watchdog.disarm()
        self._stream.close()


DEADLINE_EXTENSION = "lmms_eval_unify_deadline_s"
"""A request extension shortening one request's deadline below the client's (what is left of a budget)."""


class DeadlineClient(httpx.Client):
    """An ``httpx.Client`` whose every request must complete within ``deadline_s`` seconds (less when the request's
    :data:`DEADLINE_EXTENSION` says so), redirects never followed (whatever a caller asks) and no connection kept
    alive (see the module docstring). Each socket operation's own timeout is at most the deadline too."""

    def __init__(self, deadline_s: float, **kwargs: Any) -> None:
        kwargs.setdefault("timeout", deadline_s)
        super().__init__(follow_redirects=False, limits=httpx.Limits(max_keepalive_connections=0), **kwargs)
        self.deadline_s = float(deadline_s)

    def send(self, request: httpx.Request, *, stream: bool = False, **kwargs: Any) -> httpx.Response:
        deadline_s = min(self.deadline_s, float(request.extensions.get(DEADLINE_EXTENSION) or self.deadline_s))
        watchdog = _Watchdog(deadline_s, request.extensions.get("trace"))
        timeouts = request.extensions.get("timeout") or {}
        request.extensions = {
            **request.extensions,
            "trace": watchdog.trace,
            "timeout": {
                name: min(deadline_s, timeouts.get(name) or deadline_s) for name in ("connect", "read", "write", "pool")
            },
        }
        watchdog.start()
        try:
            response = super().send(request, stream=True, **{**kwargs, "follow_redirects": False})
        except Exception:
            watchdog.disarm()
            if watchdog.expired:
                raise watchdog.error(request) from None
            raise
        response.stream = _WatchedStream(response.stream, watchdog, request)  # type: ignore[arg-type]
        if not stream:
            try:
                response.read()
            finally:
                response.close()
        return response


def redirect_error(response: httpx.Response) -> str | None:
    """Why a redirect response is refused (naming its target), or ``None`` when ``response`` is no redirect."""
    if not 300 <= response.status_code < 400:
        return None
    target = response.headers.get("location", "no Location header")
    return (
        f"HTTP {response.status_code} redirect to {target!r} refused: redirects are not followed; "
        "set the base URL to the address that answers"
    )


def read_body(response: httpx.Response, kind: Kind, subject: str) -> bytes:
    """The whole body of a streamed ``response``; the gate's ``Refused`` as soon as it passes the byte limit of
    ``kind`` (nothing past the limit is read)."""
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        check_count(size, kind, subject)
        chunks.append(chunk)
    return b"".join(chunks)


RETRYABLE_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))
ERROR_EXCERPT_CHARS = 300
"""Characters of a response body quoted in an error (after the key is redacted from the whole body)."""
Parsed = TypeVar("Parsed")


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


class EndpointError(RuntimeError):
    """A request failed for good: a non-retryable reply or error, or retries exhausted."""


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


REVEALING_HEADER = re.compile(r"server|.*(version|revision|model|fingerprint).*", re.IGNORECASE)
"""Reply headers that say which server, version or model answered (``server``, ``openai-version``,
``x-model-revision``, ...)."""
REVEALING_FIELDS = ("model", "system_fingerprint")
"""Top-level reply fields that say which model and server build answered."""
MAX_FACT_CHARS = 200
MAX_FACT_VALUES = 8
"""Distinct values kept per fact: a fact that changes with every reply (a bad header) stays bounded."""


def server_root(base_url: str) -> str:
    """The server's root of an OpenAI-compatible base URL: ``http://h:8000/v1`` -> ``http://h:8000``."""
    base = base_url.rstrip("/")
    return base.removesuffix("/v1") if base.endswith("/v1") else base


class ServerFacts:
    """What a server's replies reveal about it, collected across requests (thread-safe): the revealing headers
    (:data:`REVEALING_HEADER`) and fields (:data:`REVEALING_FIELDS`), each with its distinct values."""

    def __init__(self) -> None:
        self._values: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def note_headers(self, headers: Mapping[str, str]) -> None:
        self._note(
            {f"header {name.lower()}": value for name, value in headers.items() if REVEALING_HEADER.fullmatch(name)}
        )

    def note_body(self, body: object) -> None:
        if isinstance(body, dict):
            self._note({name: body[name] for name in REVEALING_FIELDS if isinstance(body.get(name), str | int | float)})

    def _note(self, found: Mapping[str, object]) -> None:
        with self._lock:
            for name, value in found.items():
                values = self._values.setdefault(name, set())
                if len(values) < MAX_FACT_VALUES:
                    values.add(str(value)[:MAX_FACT_CHARS])

    def as_dict(self) -> dict[str, list[str]]:
        """Each fact with its distinct values, sorted."""
        with self._lock:
            return {name: sorted(values) for name, values in sorted(self._values.items())}


class HttpEndpoint:
    """One OpenAI-compatible server under the rules of this module: each attempt within ``deadline_s`` as a
    whole, redirects refused, HTTP 408/409/429/5xx, deadlines, connection errors and malformed 200 replies
    retried per ``retry`` (a ``Retry-After`` setting the least wait), a body over the gate's limit of its kind
    refused at once, the key redacted from every error before it is cut. At most ``concurrency`` attempts are
    on the wire at once (None: no bound); ``budget_s``, when given, bounds a call and all its retries together
    (:meth:`_attempts`); failures raise ``error`` (an :class:`EndpointError`); ``sleep`` waits
    between attempts (tests record the waits instead); ``label`` names the requests in retry warnings; ``facts``, when
    given, collects what every successful reply reveals of the server (:class:`ServerFacts`)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        deadline_s: float,
        retry: RetryPolicy,
        concurrency: int | None = None,
        error: type[EndpointError] = EndpointError,
        label: str = "model",
        sleep: Callable[[float], None] = time.sleep,
        facts: ServerFacts | None = None,
        budget_s: float | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry
        self.sleep = sleep
        self._api_key = api_key
        self._auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = DeadlineClient(deadline_s)
        self._slots = threading.BoundedSemaphore(concurrency) if concurrency else None
        self._error = error
        self._label = label
        self.facts = facts
        self.budget_s = budget_s

    def post(self, path: str, kind: Kind, parse: Callable[[object], Parsed], **request: Any) -> Parsed:
        """``parse`` of the JSON reply of ``POST <base_url>/<path>`` (``json=``, or ``data=``/``files=``), its body
        limited as ``kind``; ``parse`` raises ``ValueError`` for a malformed reply (retried)."""
        url = f"{self.base_url}/{path}"
        return self._attempts(
            functools.partial(self._send, "POST", url, self._auth, kind, self._json(parse, url), request)
        )

    def get(self, path: str, kind: Kind, parse: Callable[[object], Parsed], *, retry: bool = True) -> Parsed:
        """``parse`` of the JSON reply of ``GET <base_url>/<path>`` (a path starting with ``/`` is taken from the
        server's root: ``/version``), with the API key; one attempt only unless ``retry``."""
        url = f"{server_root(self.base_url)}{path}" if path.startswith("/") else f"{self.base_url}/{path}"
        send = functools.partial(self._send, "GET", url, self._auth, kind, self._json(parse, url), {})
        if retry:
            return self._attempts(send)
        try:
            return send(self.budget_s)
        except (_Retryable, EndpointError) as exc:
            raise self._error(redact(str(exc), self._api_key)) from None

    def _json(self, parse: Callable[[object], Parsed], url: str) -> Callable[[bytes], Parsed]:
        """``parse`` of a reply body read as JSON, the body shown to :attr:`facts` first."""

        def parsed(raw: bytes) -> Parsed:
            body = parse_json(raw, url)
            if self.facts is not None:
                self.facts.note_body(body)
            return parse(body)

        return parsed

    def download(self, url: str, kind: Kind) -> bytes:
        """The bytes at ``url`` (a file a reply points to), fetched without the API key."""
        return self._attempts(functools.partial(self._send, "GET", url, {}, kind, lambda raw: raw, {}))

    def close(self) -> None:
        self._http.close()

    def _attempts(self, send: Callable[[float | None], Parsed]) -> Parsed:
        """``send(deadline)``, retried per the policy; every error text redacted of the key. With ``budget_s`` the
        attempts and the waits between them share that one deadline: each attempt gets what is left of it, and a
        wait that would pass it (a long ``Retry-After`` included) fails at once, saying so."""
        started = time.monotonic()
        for attempt in range(self.retry.max_retries + 1):
            left = None if self.budget_s is None else self.budget_s - (time.monotonic() - started)
            try:
                return send(left)
            except _Retryable as exc:
                reason = redact(str(exc), self._api_key)
                if attempt == self.retry.max_retries:
                    raise self._error(f"giving up after {attempt + 1} attempts: {reason}") from None
                delay = self.retry.delay(attempt, exc.retry_after)
                left = None if self.budget_s is None else self.budget_s - (time.monotonic() - started)
                if left is not None and max(delay, exc.retry_after or 0.0) >= left:
                    wait = f"Retry-After {exc.retry_after:g} s" if exc.retry_after is not None else "backoff"
                    raise self._error(
                        f"giving up after {attempt + 1} attempts: {reason}; the next retry ({wait}, {delay:.1f} s) "
                        f"would pass the {self.budget_s:g} s budget of the whole call ({max(left, 0):.1f} s left)"
                    ) from None
                logger.warning(f"{self._label} request failed ({reason}); retry {attempt + 1} in {delay:.1f}s")
                self.sleep(delay)
            except EndpointError as exc:
                raise self._error(redact(str(exc), self._api_key)) from None
        raise AssertionError("unreachable")

    def _send(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        kind: Kind,
        parse: Callable[[bytes], Parsed],
        request: dict[str, Any],
        deadline_s: float | None,
    ) -> Parsed:
        """One attempt, within ``deadline_s`` when given (else the client's deadline)."""
        if deadline_s is not None and deadline_s <= 0:
            raise EndpointError(f"the {self.budget_s:g} s budget of the whole call is spent")
        extensions = {DEADLINE_EXTENSION: deadline_s} if deadline_s is not None else {}
        with self._slots or nullcontext():
            try:
                with self._http.stream(method, url, headers=headers, extensions=extensions, **request) as response:
                    refused = redirect_error(response)
                    if refused:
                        raise EndpointError(refused)
                    try:
                        raw = read_body(response, kind, f"{self._label} reply from {url}")
                    except Refused as exc:
                        raise EndpointError(f"HTTP {response.status_code}: reply refused: {exc}") from None
            except DeadlineExceeded as exc:
                raise _Retryable(str(exc)) from None
            except httpx.TimeoutException as exc:
                raise _Retryable(f"timeout ({type(exc).__name__})") from None
            except httpx.TransportError as exc:
                raise _Retryable(f"transport error ({type(exc).__name__})") from None
        if response.status_code in RETRYABLE_STATUS:
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            raise _Retryable(f"HTTP {response.status_code}: {self._excerpt(raw)}", retry_after)
        if response.status_code >= 400:
            raise EndpointError(f"HTTP {response.status_code}: {self._excerpt(raw)}")
        if self.facts is not None:
            self.facts.note_headers(response.headers)
        try:
            return parse(raw)
        except (Refused, ValueError) as exc:
            detail = exc.detail if isinstance(exc, Refused) else str(exc)
            raise _Retryable(f"malformed response body ({detail}) {self._excerpt(raw, 80)!r}") from None

    def _excerpt(self, raw: bytes, chars: int = ERROR_EXCERPT_CHARS) -> str:
        """The start of a body for an error message: the key is redacted from the whole text, then it is cut."""
        return redact(raw.decode("utf-8", errors="replace"), self._api_key)[:chars]


# --------------------------------------------------------------------------- provenance
SNAPSHOT_REVISION = re.compile(r"/snapshots/(?P<revision>[0-9a-f]{40})(?:/|$)")
"""A Hugging Face cache snapshot folder in a served model's path: its name is the weights' commit."""
LISTED_MODEL_FIELDS = ("id", "owned_by", "root", "parent", "max_model_len", "revision")


def listed_models(body: object, wanted: Collection[str]) -> list[dict[str, object]]:
    """The entries of a ``GET /models`` reply whose id is ``wanted``: their revealing fields
    (:data:`LISTED_MODEL_FIELDS`), with the ``revision`` read from a Hugging Face snapshot path in ``root`` when the
    server names none; ``ValueError`` when the reply is no model list."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise ValueError("the reply has no model list")
    found = []
    for item in data:
        if not (isinstance(item, dict) and item.get("id") in wanted):
            continue
        entry = {name: item[name] for name in LISTED_MODEL_FIELDS if isinstance(item.get(name), str | int)}
        snapshot = SNAPSHOT_REVISION.search(str(item.get("root", "")))
        if snapshot and "revision" not in entry:
            entry["revision"] = snapshot["revision"]
        found.append(entry)
    return found


def server_version(body: object) -> str:
    """The ``version`` of a ``GET /version`` reply (vLLM, SGLang)."""
    version = body.get("version") if isinstance(body, dict) else None
    if not isinstance(version, str | int | float):
        raise ValueError("the reply has no version")
    return str(version)[:MAX_FACT_CHARS]


def public_url(url: str) -> str:
    """``url`` without the user and password it may carry."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=netloc)) if parts.username or parts.password else url


def probe_server(endpoint: HttpEndpoint, model_ids: Collection[str]) -> dict[str, object]:
    """What a server says of itself, asked once per question and never retried: its public URL, the ``model_ids``
    it lists (``GET /models``: owner, path, revision) and its version (``GET /version``); what it does not reveal
    is recorded as such, with the reason."""
    found: dict[str, object] = {"base_url": public_url(endpoint.base_url)}
    questions: dict[str, tuple[str, Callable[[object], object]]] = {
        "models": ("models", lambda body: listed_models(body, set(model_ids))),
        "version": ("/version", server_version),
    }
    for name, (path, parse) in questions.items():
        try:
            found[name] = endpoint.get(path, "record", parse, retry=False)
        except EndpointError as exc:
            found[name] = f"not revealed: {str(exc)[:MAX_FACT_CHARS]}"
    return found
