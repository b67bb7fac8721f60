"""A local OpenAI-compatible HTTP server for tests.

It answers ``POST /v1/chat/completions`` through a pluggable *answer policy* (a callable that sees the
parsed request and returns the assistant text), can inject faults (HTTP status codes with optional
``Retry-After``, stalls longer than the client timeout, non-JSON bodies), counts requests and records the
maximum number of requests in flight at once. Further endpoints (e.g. ``/v1/images/generations``) are
added with :meth:`OpenAICompatServer.add_route`.

The server binds to 127.0.0.1 on a free port, runs in daemon threads and stops itself after
``max_lifetime_s`` even if a test forgets to stop it.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "ChatRequest",
    "Fault",
    "OpenAICompatServer",
    "Reply",
    "RouteHandler",
    "fixed_reply",
    "marker_reply",
]

DATA_URL_RE = re.compile(r"^data:(?P<mime>[\w/+.-]+);base64,(?P<data>.*)$", re.DOTALL)


@dataclass(frozen=True)
class ChatRequest:
    """A parsed chat-completions request as an answer policy sees it."""

    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def user_turns(self) -> int:
        """Number of user messages (2 on the follow-up of a two-turn judgement)."""
        return sum(1 for m in self.messages if m.get("role") == "user")

    def texts(self, role: str | None = None) -> list[str]:
        """All text parts, in order, optionally only those of one role."""
        return [
            part
            for m in self.messages
            if role is None or m.get("role") == role
            for part in _text_parts(m.get("content"))
        ]

    @property
    def text(self) -> str:
        return "\n".join(self.texts())

    @property
    def image_urls(self) -> list[str]:
        return [
            part["image_url"]["url"]
            for m in self.messages
            if isinstance(m.get("content"), list)
            for part in m["content"]
            if part.get("type") == "image_url"
        ]

    @property
    def images(self) -> list[bytes]:
        """Decoded bytes of every base64 data-URL image, in message order."""
        out = []
        for url in self.image_urls:
            match = DATA_URL_RE.match(url)
            if match:
                out.append(base64.b64decode(match["data"]))
        return out


def _text_parts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p.get("text", "") for p in content if p.get("type") == "text"]
    return []


AnswerPolicy = Callable[[ChatRequest], str]


def fixed_reply(text: str) -> AnswerPolicy:
    """Policy that always answers ``text``."""
    return lambda _request: text


def marker_reply(pattern: str = r"<<REPLY:(.*?)>>", default: str = "") -> AnswerPolicy:
    """Policy that answers the first capture of ``pattern`` found in the latest user turn.

    Tests embed the desired judge verdict (e.g. the ground truth) in the prompt, so the answer is a
    deterministic function of the request content.
    """
    regex = re.compile(pattern, re.DOTALL)

    def policy(request: ChatRequest) -> str:
        match = regex.search("\n".join(request.texts("user")))
        return match.group(1) if match else default

    return policy


@dataclass(frozen=True)
class Fault:
    """One injected fault, consumed by the next request to a fault-enabled route."""

    status: int = 200
    retry_after: str | None = None
    stall_s: float = 0.0
    garbage: bool = False

    @classmethod
    def http(cls, status: int, retry_after: float | str | None = None) -> Fault:
        return cls(status=status, retry_after=None if retry_after is None else str(retry_after))

    @classmethod
    def stall(cls, seconds: float) -> Fault:
        """Sleep ``seconds`` before answering normally (a client timeout when longer than its limit)."""
        return cls(stall_s=seconds)

    @classmethod
    def garbage_body(cls) -> Fault:
        """Answer 200 with a body that is not JSON."""
        return cls(garbage=True)


@dataclass(frozen=True)
class Reply:
    """What a route handler returns: status, JSON-serialisable body, extra headers."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


RouteHandler = Callable[[ChatRequest], Reply]


class OpenAICompatServer:
    """Threaded OpenAI-compatible server on 127.0.0.1; use as a context manager."""

    def __init__(
        self,
        policy: AnswerPolicy | None = None,
        *,
        api_key: str | None = None,
        delay_s: float = 0.0,
        max_lifetime_s: float = 120.0,
    ) -> None:
        self.policy: AnswerPolicy = policy or fixed_reply("")
        self.api_key = api_key
        self.delay_s = delay_s
        self.max_lifetime_s = max_lifetime_s
        self.requests: list[tuple[str, ChatRequest]] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._routes: dict[str, RouteHandler] = {"/v1/chat/completions": self._chat}
        self._httpd: ThreadingHTTPServer | None = None
        self._timer: threading.Timer | None = None

    # ----------------------------------------------------------------- configuration
    def add_route(self, path: str, handler: RouteHandler) -> None:
        """Serve ``POST path`` with ``handler`` (faults, auth and counting apply to it too)."""
        self._routes[path] = handler

    def inject(self, faults: Iterable[Fault]) -> None:
        """Queue faults; each is consumed by one subsequent request, in order."""
        with self._lock:
            self._faults.extend(faults)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def requests_to(self, path: str = "/v1/chat/completions") -> list[ChatRequest]:
        with self._lock:
            return [req for p, req in self.requests if p == path]

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> OpenAICompatServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self._timer = threading.Timer(self.max_lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if self._timer is not None:
            self._timer.cancel()
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()

    def __enter__(self) -> OpenAICompatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----------------------------------------------------------------- request handling
    def _chat(self, request: ChatRequest) -> Reply:
        content = self.policy(request)
        body = {
            "id": f"chatcmpl-test-{self.request_count}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
        return Reply(200, body)

    def _handle(self, path: str, request: ChatRequest) -> Reply | Fault:
        """Record the request, then return the fault to apply or the route's reply."""
        with self._lock:
            self.requests.append((path, request))
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return Reply(401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}})
        with self._lock:
            fault = self._faults.popleft() if self._faults else None
        if fault is not None and (fault.status != 200 or fault.garbage):
            return fault
        if fault is not None:
            time.sleep(fault.stall_s)
        time.sleep(self.delay_s)
        return self._routes[path](request)

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


def _handler_class(server: OpenAICompatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(Reply(200, {"object": "list", "data": []}))
            else:
                self._send(Reply(404, {"error": {"message": "not found"}}))

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            raw = self.rfile.read(length)
            if self.path not in server._routes:
                self._send(Reply(404, {"error": {"message": f"no route {self.path}"}}))
                return
            try:
                body = json.loads(raw)
            except json.JSONDecodeError:
                self._send(Reply(400, {"error": {"message": "body is not JSON"}}))
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            server._enter()
            try:
                outcome = server._handle(self.path, ChatRequest(body=body, headers=headers))
            finally:
                server._leave()
            self._send(outcome)

        def _send(self, outcome: Reply | Fault) -> None:
            if isinstance(outcome, Fault):
                payload = (
                    b"<html>upstream garbage"
                    if outcome.garbage
                    else json.dumps({"error": {"message": f"injected {outcome.status}"}}).encode()
                )
                headers = {"Retry-After": outcome.retry_after} if outcome.retry_after is not None else {}
                status = outcome.status
            else:
                payload, headers, status = json.dumps(outcome.body).encode(), outcome.headers, outcome.status
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

    return Handler
