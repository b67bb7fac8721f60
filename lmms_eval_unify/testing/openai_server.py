"""A local OpenAI-compatible HTTP server for tests.

It answers ``POST /v1/chat/completions`` through a pluggable *answer policy* (a callable that sees the parsed
request and returns the assistant text, or a :class:`ServedReply` in the shape a served model gives it: null
``content``, reasoning in its own field, ``finish_reason``, ``usage``, ``model``), can inject faults (HTTP status
codes with optional ``Retry-After``, stalls longer than the client timeout, non-JSON bodies, replies dripped one
byte at a time, redirects), counts requests and records the maximum number of requests in flight at once and every
client that closed its connection in the middle of a dripped reply. Further endpoints are added with
:meth:`OpenAICompatServer.add_route` (``POST`` bodies in JSON or ``multipart/form-data``, or ``GET``).

:meth:`OpenAICompatServer.serve_images` adds the Images API as an OpenAI-compatible image server (vLLM-Omni's, for
one) serves it: ``POST /v1/images/generations`` (JSON) and ``POST /v1/images/edits`` (multipart, input files in
``image`` or ``image[]``), each answering ``n`` images of the requested ``size`` as ``b64_json`` or as a ``url``
served by ``GET /v1/images/files``. Every image is a function of the prompt, the seed, the input images and its
index in the reply (:func:`drawn_image`): equal seeds give equal images, a request without a seed gets a random one.
:meth:`OpenAICompatServer.serve_chat_images` makes chat completions answer a request whose ``modalities`` name
``image`` with ``n`` such images (prompt = the request's text, inputs = its image parts), in one of the two shapes
served models use: OpenRouter's ``message.images`` list, or image parts in ``message.content`` (vLLM-Omni), each
as a data URL or as a file URL. :meth:`OpenAICompatServer.reveal` makes the server say who it is, as vLLM does
(``GET /v1/models``, ``GET /version``, reply headers).

The server binds to 127.0.0.1 on a free port, runs in daemon threads and stops itself after
``max_lifetime_s`` even if a test forgets to stop it.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import json
import random
import re
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from PIL import Image

__all__ = [
    "ChatRequest",
    "Fault",
    "OpenAICompatServer",
    "Reply",
    "RouteHandler",
    "ServedReply",
    "drawn_image",
    "fixed_reply",
    "marker_reply",
]

DATA_URL_RE = re.compile(r"^data:(?P<mime>[\w/+.-]+);base64,(?P<data>.*)$", re.DOTALL)


@dataclass(frozen=True)
class ChatRequest:
    """A parsed request as an answer policy or a route sees it: the JSON body, or for ``multipart/form-data``
    ``{"fields": {name: text}, "files": [(name, content_type, bytes), ...]}``, or for ``GET`` ``{"query": {name:
    [values]}}``; the headers with lower-case names."""

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


@dataclass(frozen=True)
class ServedReply:
    """A chat reply in a served model's own shape, as an answer policy may return it instead of the text.

    vLLM with ``--reasoning-parser`` answers a reasoning model with the thinking in ``reasoning`` (named
    ``reasoning_content`` before vLLM renamed it, and by SGLang) and ``content`` null when the thinking used up
    ``max_tokens`` (``finish_reason`` ``"length"``); without a parser the thinking stays in ``content`` as
    ``<think>…</think>``. ``usage`` ``None`` leaves the field out; ``model`` ``None`` echoes the requested one."""

    content: str | None
    reasoning: str | None = None
    reasoning_field: str = "reasoning"
    finish_reason: str = "stop"
    usage: dict[str, int] | None = None
    model: str | None = None

    def message(self) -> dict[str, Any]:
        """The ``choices[0].message`` object."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.reasoning is not None:
            message[self.reasoning_field] = self.reasoning
        return message


AnswerPolicy = Callable[[ChatRequest], "str | ServedReply"]


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
    drip_s: float = 0.0
    drip_body_only: bool = False
    location: str | None = None

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

    @classmethod
    def drip(cls, interval_s: float, body_only: bool = False) -> Fault:
        """Send the normal reply one byte every ``interval_s`` seconds, from its status line on (or, with
        ``body_only``, the head at once and then the body byte by byte): no per-read timeout ever fires."""
        return cls(drip_s=interval_s, drip_body_only=body_only)

    @classmethod
    def redirect(cls, location: str, status: int = 307) -> Fault:
        """Answer ``status`` with a ``Location`` header."""
        return cls(status=status, location=location)


@dataclass(frozen=True)
class Reply:
    """What a route handler returns: status, body (JSON-serialisable, or ``bytes`` sent as they are with the
    ``Content-Type`` of ``headers``), extra headers."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    drip_s: float = 0.0
    drip_body_only: bool = False


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
        port: int = 0,
        record: bool = True,
    ) -> None:
        self.policy: AnswerPolicy = policy or fixed_reply("")
        self.api_key = api_key
        self.delay_s = delay_s
        self.max_lifetime_s = max_lifetime_s
        self.port = port
        self.record = record
        """Whether every request is kept in ``requests`` (a long-running server keeps only the count)."""
        self.served = 0
        self.requests: list[tuple[str, ChatRequest]] = []
        self.max_in_flight = 0
        self.dripped_bytes = 0
        self.closed_mid_drip = threading.Event()
        """Set when a client closed its connection before a dripped reply was complete."""
        self._in_flight = 0
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._routes: dict[tuple[str, str], RouteHandler] = {("POST", "/v1/chat/completions"): self._chat}
        self._public: set[tuple[str, str]] = set()
        self.image_files: dict[str, bytes] = {}
        """PNG files of the Images API's ``url`` replies, by id."""
        self.image_reply = "b64_json"
        """How the Images API answers a request that names no ``response_format``."""
        self.chat_image_shape: str | None = None
        """``images`` (OpenRouter's ``message.images``) or ``content`` (image parts): chat answers images."""
        self.chat_image_url = "data"
        self.ignore_prompts = False
        self.listed_models: list[dict[str, Any]] = []
        """What ``GET /v1/models`` lists (:meth:`reveal`)."""
        self.version: str | None = None
        """What ``GET /version`` answers (vLLM's ``{"version": ...}``); ``None``: 404."""
        self.reply_headers: dict[str, str] = {}
        """Headers added to every reply (``x-model-revision``, ...)."""
        self._httpd: ThreadingHTTPServer | None = None
        self._timer: threading.Timer | None = None

    # ----------------------------------------------------------------- configuration
    def add_route(self, path: str, handler: RouteHandler, method: str = "POST", public: bool = False) -> None:
        """Serve ``method path`` with ``handler`` (faults and counting apply to it too, and the API key unless
        ``public``, as for a pre-signed file URL)."""
        self._routes[(method, path)] = handler
        if public:
            self._public.add((method, path))

    def serve_images(self, image_reply: str = "b64_json", ignore_prompts: bool = False) -> OpenAICompatServer:
        """Add the Images API (module docstring); ``image_reply`` (``b64_json`` or ``url``) answers the requests
        that name no ``response_format``; ``ignore_prompts`` draws every image as if its prompt were empty (a
        server that drifted from its model, as BAGEL on vLLM-Omni ignoring prompts did)."""
        self.image_reply = image_reply
        self.ignore_prompts = ignore_prompts
        self.add_route("/v1/images/generations", self._images)
        self.add_route("/v1/images/edits", self._images)
        self.add_route("/v1/images/files", self._image_file, method="GET", public=True)
        return self

    def serve_chat_images(self, shape: str = "images", url: str = "data") -> OpenAICompatServer:
        """Chat completions answer image requests (module docstring) in ``shape`` (``images`` or ``content``),
        each image a ``data`` URL or a ``file`` URL served by ``GET /v1/images/files``."""
        if shape not in ("images", "content") or url not in ("data", "file"):
            raise ValueError(f"shape must be images or content and url data or file, got {shape!r}, {url!r}")
        self.chat_image_shape, self.chat_image_url = shape, url
        self.add_route("/v1/images/files", self._image_file, method="GET", public=True)
        return self

    def reveal(
        self, models: Iterable[dict[str, Any]], version: str | None = None, headers: dict[str, str] | None = None
    ) -> OpenAICompatServer:
        """Tell who is serving, as vLLM does: ``GET /v1/models`` lists ``models``, ``GET /version`` answers
        ``version``, every reply carries ``headers`` (neither GET is counted or recorded)."""
        self.listed_models, self.version, self.reply_headers = list(models), version, dict(headers or {})
        return self

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
        host, port = self._httpd.socket.getsockname()[:2]
        return f"http://{host}:{port}/v1"

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> OpenAICompatServer:
        self._httpd = _QuietServer(("127.0.0.1", self.port), _handler_class(self))
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self._timer = threading.Timer(self.max_lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    @property
    def running(self) -> bool:
        """Whether the server is serving (it stops itself after ``max_lifetime_s``)."""
        return self._httpd is not None

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
        wants_images = "image" in (request.body.get("modalities") or [])
        content: Any = self.chat_images(request) if wants_images and self.chat_image_shape else self.policy(request)
        served = content if isinstance(content, ServedReply) else ServedReply(None, usage=ZERO_USAGE)
        message = served.message() if isinstance(content, ServedReply) else _assistant_message(content)
        body: dict[str, Any] = {
            "id": f"chatcmpl-test-{self.served}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": served.model or request.model,
            "choices": [{"index": 0, "message": message, "finish_reason": served.finish_reason}],
        }
        if served.usage is not None:
            body["usage"] = served.usage
        return Reply(200, body)

    def chat_images(self, request: ChatRequest) -> Any:
        """What answers an image request: the image parts as the message's ``content`` (``content`` shape), or an
        :class:`_ImagesMessage` that :func:`_assistant_message` puts in ``message.images`` (``images`` shape)."""
        seed = int(request.body["seed"]) if request.body.get("seed") is not None else random.randrange(2**32)
        n = int(request.body.get("n", 1))
        size = _image_size(request.body.get("size"), request.images)
        urls = [self._image_url(drawn_image(request.text, seed, request.images, i, size)) for i in range(n)]
        parts = [{"type": "image_url", "image_url": {"url": url}} for url in urls]
        return _ImagesMessage(parts) if self.chat_image_shape == "images" else parts

    def _image_url(self, png: bytes) -> str:
        if self.chat_image_url == "data":
            return "data:image/png;base64," + base64.b64encode(png).decode()
        with self._lock:
            file_id = str(len(self.image_files))
            self.image_files[file_id] = png
        return f"{self.base_url}/images/files?id={file_id}"

    def _images(self, request: ChatRequest) -> Reply:
        """``n`` drawn images of the requested ``size``, from a JSON generation or a multipart edit."""
        multipart = "fields" in request.body
        fields = request.body["fields"] if multipart else request.body
        inputs = [data for name, _, data in request.body["files"] if name in ("image", "image[]")] if multipart else []
        try:
            n = int(fields.get("n", 1))
            seed = int(fields["seed"]) if fields.get("seed") is not None else random.randrange(2**32)
            size = _image_size(fields.get("size"), inputs)
        except ValueError as exc:
            return Reply(400, {"error": {"message": str(exc), "type": "invalid_request_error"}})
        if not 1 <= n <= 10:
            return Reply(400, {"error": {"message": f"n must be between 1 and 10, got {n}"}})
        data = []
        for index in range(n):
            png = drawn_image("" if self.ignore_prompts else str(fields.get("prompt", "")), seed, inputs, index, size)
            if (fields.get("response_format") or self.image_reply) == "url":
                with self._lock:
                    file_id = str(len(self.image_files))
                    self.image_files[file_id] = png
                data.append({"url": f"{self.base_url}/images/files?id={file_id}"})
            else:
                data.append({"b64_json": base64.b64encode(png).decode()})
        return Reply(200, {"created": int(time.time()), "data": data})

    def _image_file(self, request: ChatRequest) -> Reply:
        file_id = request.body["query"].get("id", [""])[0]
        if file_id not in self.image_files:
            return Reply(404, {"error": {"message": f"no image file {file_id!r}"}})
        return Reply(200, self.image_files[file_id], {"Content-Type": "image/png"})

    def _handle(self, method: str, path: str, request: ChatRequest) -> Reply | Fault:
        """Record the request, then return the fault to apply or the route's reply."""
        with self._lock:
            self.served += 1
            if self.record:
                self.requests.append((path, request))
        keyed = self.api_key is not None and (method, path) not in self._public
        if keyed and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return Reply(401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}})
        with self._lock:
            fault = self._faults.popleft() if self._faults else None
        if fault is not None and (fault.status != 200 or fault.garbage):
            return fault
        if fault is not None:
            time.sleep(fault.stall_s)
        time.sleep(self.delay_s)
        reply = self._routes[(method, path)](request)
        if fault is not None and fault.drip_s:
            return dataclasses.replace(reply, drip_s=fault.drip_s, drip_body_only=fault.drip_body_only)
        return reply

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


@dataclass(frozen=True)
class _ImagesMessage:
    """Image parts to be answered in OpenRouter's ``message.images`` (with an empty text ``content``)."""

    parts: list[dict[str, Any]]


ZERO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
"""The ``usage`` of a reply whose policy returned plain text (the test server counts no tokens)."""


def _assistant_message(content: Any) -> dict[str, Any]:
    if isinstance(content, _ImagesMessage):
        return {"role": "assistant", "content": "", "images": content.parts}
    return {"role": "assistant", "content": content}


DEFAULT_IMAGE_SIZE = (64, 64)
"""Size of a generated image when the request names none (an edit's default is its first input's size)."""


def drawn_image(prompt: str, seed: int, inputs: list[bytes], index: int, size: tuple[int, int]) -> bytes:
    """The PNG the Images API routes answer: one colour per (prompt, seed, input images, index in the reply)."""
    key = json.dumps([prompt, seed, [hashlib.sha256(data).hexdigest() for data in inputs], index])
    colour = tuple(hashlib.sha256(key.encode()).digest()[:3])
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def _image_size(size: Any, inputs: list[bytes]) -> tuple[int, int]:
    """``WIDTHxHEIGHT``; absent or ``auto``: the first input image's size, else :data:`DEFAULT_IMAGE_SIZE`."""
    if size is None or size == "auto":
        if inputs:
            with Image.open(io.BytesIO(inputs[0])) as first:
                return first.size
        return DEFAULT_IMAGE_SIZE
    match = re.fullmatch(r"(\d{1,5})x(\d{1,5})", str(size))
    if not match:
        raise ValueError(f"size must be WIDTHxHEIGHT, got {size!r}")
    return int(match[1]), int(match[2])


def _form(content_type: str, raw: bytes) -> dict[str, Any]:
    """A ``multipart/form-data`` body as ``{"fields": {name: text}, "files": [(name, content_type, bytes)]}``."""
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    fields: dict[str, str] = {}
    files: list[tuple[str, str, bytes]] = []
    for part in message.iter_parts():
        name = str(part.get_param("name", header="content-disposition"))
        if part.get_filename():
            files.append((name, part.get_content_type(), bytes(part.get_payload(decode=True))))
        else:
            fields[name] = part.get_content()
    return {"fields": fields, "files": files}


class _QuietServer(ThreadingHTTPServer):
    """Does not print the clients that reset their connection (a client that gave up on a reply)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler_class(server: OpenAICompatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if ("GET", url.path) in server._routes:
                self._serve("GET", url.path, {"query": parse_qs(url.query)})
            elif url.path.rstrip("/") == "/v1/models":
                self._send(Reply(200, {"object": "list", "data": server.listed_models}))
            elif url.path == "/version" and server.version is not None:
                self._send(Reply(200, {"version": server.version}))
            else:
                self._send(Reply(404, {"error": {"message": "not found"}}))

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            raw = self.rfile.read(length)
            if ("POST", self.path) not in server._routes:
                self._send(Reply(404, {"error": {"message": f"no route {self.path}"}}))
                return
            content_type = self.headers.get("content-type", "")
            if content_type.startswith("multipart/form-data"):
                self._serve("POST", self.path, _form(content_type, raw))
                return
            try:
                body = json.loads(raw)
            except json.JSONDecodeError:
                self._send(Reply(400, {"error": {"message": "body is not JSON"}}))
                return
            self._serve("POST", self.path, body)

        def _serve(self, method: str, path: str, body: Any) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            server._enter()
            try:
                outcome = server._handle(method, path, ChatRequest(body=body, headers=headers))
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
                if outcome.location is not None:
                    headers["Location"] = outcome.location
                status = outcome.status
            else:
                payload = outcome.body if isinstance(outcome.body, bytes) else json.dumps(outcome.body).encode()
                headers, status = {**server.reply_headers, **outcome.headers}, outcome.status
            headers.setdefault("Content-Type", "application/json")
            if isinstance(outcome, Reply) and outcome.drip_s:
                self._drip(status, payload, headers["Content-Type"], outcome.drip_s, outcome.drip_body_only)
                return
            try:
                self.send_response(status)
                self.send_header("Content-Length", str(len(payload)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def _drip(self, status: int, payload: bytes, content_type: str, interval_s: float, body_only: bool) -> None:
            head = (
                f"HTTP/1.1 {status} OK\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
            ).encode()
            self.close_connection = True
            dripped = payload if body_only else head + payload
            try:
                if body_only:
                    self.connection.sendall(head)
                for i in range(len(dripped)):
                    self.connection.sendall(dripped[i : i + 1])
                    with server._lock:
                        server.dripped_bytes += 1
                    time.sleep(interval_s)
                    if _peer_closed(self.connection):
                        server.closed_mid_drip.set()
                        return
            except OSError:
                server.closed_mid_drip.set()

    return Handler


def _peer_closed(connection: socket.socket) -> bool:
    """Whether the client has closed its end (its FIN is waiting to be read)."""
    readable, _, _ = select.select([connection], [], [], 0)
    try:
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True
