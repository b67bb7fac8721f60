"""Any OpenAI-compatible endpoint: chat completions for understanding, the Images API or chat completions for
drawing.

Understanding sends one user message with the images as ``data:image/png;base64`` URLs followed by the
prompt. Generation calls ``POST /images/generations`` (JSON) without input images and ``POST /images/edits``
(multipart: field ``image`` for one file, ``image[]`` for several) with them, asking ``n`` images of ``size``;
with ``send_seed`` the sample's seed goes in the request's ``seed`` field (vLLM-Omni reads it there, in the JSON
body and as a form field; OpenAI's own API refuses it). Sampler settings of served diffusion models
(``num_inference_steps``, ``guidance_scale``, ``negative_prompt``) are sent when set, and ``extra_body`` (a JSON
object) is merged into every image request verbatim, last, so a run can be pinned to a paper's recipe; all of
them are part of ``describe()``. A reply's images are ``b64_json`` or a ``url``, which is downloaded without the
API key. With ``endpoint=chat`` images come from chat completions instead: one user message (input images as data
URLs, then the prompt), ``modalities: ["image", "text"]`` and the same options; the reply's images are read from
OpenRouter's ``message.images`` and from image parts of ``message.content``, as base64 data URLs or URLs.

Every request (chat, images, downloads) goes through the judge client's own ``HttpEndpoint``
(``lmms_eval_unify.judges.http``), so it follows the same rules: it must
complete within ``timeout`` seconds as a whole (a server dripping bytes cannot outlive it); a redirect fails at
once, naming its target; HTTP 408/409/429/5xx, deadlines, connection errors and malformed 200 replies are
retried up to ``max_retries`` times with jittered exponential backoff, a ``Retry-After`` setting the least wait;
a reply body over the gate's limit (``record`` for chat, ``image`` for images) and an image over its pixel limit
fail at once. Errors carry the judge client's reasons, with the API key redacted; what still fails is recorded
for that sample by the base class.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from loguru import logger
from PIL import Image

from lmms_eval_unify.adapter import (
    PARSE,
    UNDERSTAND_AND_GENERATE,
    HttpEndpoint,
    Missing,
    ModelSettings,
    RetryPolicy,
    ServerFacts,
    UnifiedModel,
    check_image_bytes,
    missing_env,
    probe_server,
    reply_content,
    run_only,
)

OPENAI_BASE_URL = "https://api.openai.com/v1"
Result = TypeVar("Result")


def png_bytes(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def data_url(image: Image.Image) -> str:
    return "data:image/png;base64," + base64.b64encode(png_bytes(image)).decode()


def _base_url_from_environment() -> str | None:
    return os.environ.get("OPENAI_BASE_URL")


def reply_images(body: object, n: int) -> list[bytes | str]:
    """The images of an Images API reply, each the bytes of its ``b64_json`` or else its ``url``; ``ValueError``
    unless there are exactly ``n``, each with one of them."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or len(data) != n:
        raise ValueError(f"{len(data) if isinstance(data, list) else 'no'} images for n={n}")
    images: list[bytes | str] = []
    for index, item in enumerate(data):
        encoded, url = (item.get("b64_json"), item.get("url")) if isinstance(item, dict) else (None, None)
        if isinstance(encoded, str) and encoded:
            try:
                images.append(base64.b64decode(encoded, validate=True))
            except binascii.Error as exc:
                raise ValueError(f"image {index}: b64_json is not base64 ({exc})") from None
        elif isinstance(url, str) and url:
            images.append(url)
        else:
            raise ValueError(f"image {index} has neither b64_json nor url")
    return images


DATA_URL = re.compile(r"data:image/[\w.+-]+;base64,(?P<data>.*)", re.DOTALL)


def chat_reply_images(body: object, n: int) -> list[bytes | str]:
    """The images of a chat-completions reply: OpenRouter's ``message.images`` and the image parts of
    ``message.content``, each the bytes of a base64 data URL or else its URL; ``ValueError`` unless there are
    exactly ``n``."""
    choices = body.get("choices") if isinstance(body, dict) else None
    message = (
        choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    )
    if not isinstance(message, dict):
        raise ValueError("the reply has no message")
    content = message.get("content")
    parts = [*(message.get("images") or []), *(content if isinstance(content, list) else [])]
    urls = [
        part["image_url"].get("url") if isinstance(part.get("image_url"), dict) else part.get("image_url")
        for part in parts
        if isinstance(part, dict) and part.get("type") in ("image_url", None) and "image_url" in part
    ]
    if len(urls) != n:
        raise ValueError(f"{len(urls)} images in the chat reply for n={n}")
    images: list[bytes | str] = []
    for index, url in enumerate(urls):
        if not isinstance(url, str) or not url:
            raise ValueError(f"image {index} has no URL")
        match = DATA_URL.fullmatch(url)
        if match is None:
            images.append(url)
            continue
        try:
            images.append(base64.b64decode(match["data"], validate=True))
        except binascii.Error as exc:
            raise ValueError(f"image {index}: its data URL is not base64 ({exc})") from None
    return images


IMAGE_ENDPOINTS = ("images", "chat")


def image_endpoint(value: object) -> str:
    """The ``endpoint`` model argument: one of :data:`IMAGE_ENDPOINTS`."""
    name = str(value).strip().lower()
    if name not in IMAGE_ENDPOINTS:
        raise ValueError(f"expected one of {IMAGE_ENDPOINTS}, got {value!r}")
    return name


def parse_json_object(value: object) -> dict[str, Any]:
    """A ``--model_args`` value holding a JSON object (``extra_body={"true_cfg_scale":4.0}``); empty: ``{}``."""
    if isinstance(value, dict):
        return value
    text = str(value or "").strip()
    if not text:
        return {}
    parsed = json.loads(text)
    if not isinstance(parsed, dict):
        raise ValueError(f"expected a JSON object, got {type(parsed).__name__}")
    return parsed


def form_value(value: object) -> str:
    """A request option as a multipart form field: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


@dataclass(frozen=True, kw_only=True)
class OpenAIImageSettings(ModelSettings):
    model: str = "gpt-image-1"
    """Images API model (a vLLM-Omni server refuses any name but the one it serves)."""
    chat_model: str = "gpt-4.1"
    """Chat model that answers (understanding)."""
    base_url: str | None = field(default_factory=_base_url_from_environment)
    """Endpoint ``…/v1`` (default ``$OPENAI_BASE_URL``, else OpenAI's); several separated by ``|`` (servers of the
    same weights): image requests are spread over them in turn."""
    chat_base_url: str | None = None
    """The understanding endpoint when it is another server (default: the first ``base_url``)."""
    api_key_env: str | None = run_only("OPENAI_API_KEY")
    """Name of the environment variable holding the API key (``none``: send no key)."""
    size: str | None = "1024x1024"
    """``WIDTHxHEIGHT`` of each image (``none``: the server's default)."""
    quality: str | None = None
    response_format: str | None = None
    """``b64_json`` or ``url``, sent when set (``none``: the server's default)."""
    send_seed: bool = False
    """Send each sample's seed in the ``seed`` field (servers that take one, e.g. vLLM-Omni)."""
    edit: bool = True
    """Send input images to ``/images/edits`` (``false``: generate from the text only)."""
    endpoint: str = field(default="images", metadata={PARSE: image_endpoint})
    """Where images come from: ``images`` (the Images API) or ``chat`` (chat completions asked for the ``image``
    modality, e.g. OpenRouter's Nano Banana, vLLM-Omni's chat route)."""
    num_inference_steps: int | None = None
    """Diffusion steps, sent when set (servers of diffusion models, e.g. vLLM-Omni)."""
    guidance_scale: float | None = None
    """Classifier-free guidance, sent when set."""
    negative_prompt: str | None = None
    """Negative prompt, sent when set."""
    extra_body: dict[str, Any] = field(default_factory=dict, metadata={PARSE: parse_json_object})
    """A JSON object merged verbatim into every image request, last (``extra_body={"true_cfg_scale":4.0}``)."""
    max_concurrency: int = run_only(1)
    """Requests of one batch (``--batch_size``) in flight at once; results equal serial ones, in order."""
    max_retries: int = run_only(5)
    timeout: float = run_only(300.0)
    """Deadline of one whole request, in seconds (each retry gets its own)."""


class OpenAIImage(UnifiedModel):
    """GPT-image, or any server speaking the same API (vLLM-Omni serving a unified model), as a unified model."""

    model_id = "openai_image"
    capabilities = UNDERSTAND_AND_GENERATE
    settings_class = OpenAIImageSettings
    settings: OpenAIImageSettings

    @classmethod
    def missing(cls, settings: OpenAIImageSettings) -> list[Missing]:
        if settings.api_key_env is None:
            return []
        return missing_env(cls.model_id, settings.api_key_env, "the API key", "api_key_env")

    def __init__(self, **model_args: Any) -> None:
        super().__init__(**model_args)
        settings = self.settings
        api_key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
        if settings.api_key_env and not api_key:
            raise RuntimeError(
                f"{self.model_id}: set the API key in ${settings.api_key_env} (model argument api_key_env "
                "names the variable; api_key_env=none sends no key)"
            )
        if settings.max_concurrency < 1:
            raise ValueError(f"{self.model_id}: max_concurrency must be at least 1, got {settings.max_concurrency}")
        retry = RetryPolicy(max_retries=settings.max_retries)
        urls = [url.strip() for url in (settings.base_url or OPENAI_BASE_URL).split("|") if url.strip()]
        endpoint = partial(HttpEndpoint, api_key=api_key, deadline_s=settings.timeout, retry=retry)
        self.endpoints = [endpoint(url, facts=ServerFacts()) for url in urls]
        self.endpoint = self.endpoints[0]
        self.chat_endpoint = (
            endpoint(settings.chat_base_url, facts=ServerFacts()) if settings.chat_base_url else self.endpoint
        )
        self._server_facts: dict[str, dict[str, object]] = {}
        if not settings.send_seed:
            logger.warning(f"{self.model_id}: images are not reproducible: send_seed=false sends no seed")

    def provenance(self) -> dict[str, Any]:
        """Per server: what it says of itself (asked once: ``/models`` entries of the models used, ``/version``) and
        what its replies revealed so far (server and version headers, the ``model`` and ``system_fingerprint``
        fields)."""
        servers = []
        for endpoint in dict.fromkeys([*self.endpoints, self.chat_endpoint]):
            if endpoint.base_url not in self._server_facts:
                models = (self.settings.model, self.settings.chat_model)
                self._server_facts[endpoint.base_url] = probe_server(endpoint, models)
            replies = endpoint.facts.as_dict() if endpoint.facts is not None else {}
            servers.append({**self._server_facts[endpoint.base_url], "replies": replies})
        return {"servers": servers}

    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": data_url(im)}} for im in images]
        content.append({"type": "text", "text": prompt})
        body: dict[str, Any] = {
            "model": self.settings.chat_model,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": int(decoding.get("max_new_tokens", 1024)),
        }
        if "temperature" in decoding:
            body["temperature"] = float(decoding["temperature"])
        if "seed" in decoding:
            body["seed"] = int(decoding["seed"])
        return self.chat_endpoint.post("chat/completions", "record", reply_content, json=body)

    def understand_batch(self, batch: list[tuple[list[Image.Image], str]], **decoding: Any) -> list[str]:
        """Up to ``max_concurrency`` answers in flight at once, in order."""
        return self._concurrently([partial(self.understand, images, prompt, **decoding) for images, prompt in batch])

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        (image,) = self.draw(prompt, images, n=1, seed=decoding.get("seed"))
        return image

    def generate_image_batch(self, batch: list[tuple[str, list[Image.Image], dict[str, Any]]]) -> list[Image.Image]:
        """Up to ``max_concurrency`` image requests in flight at once, spread over the ``base_url`` servers in
        turn, each with its own sample's seed; in order."""
        calls = [
            partial(self.draw, prompt, images, n=1, seed=decoding.get("seed"), endpoint=index % len(self.endpoints))
            for index, (prompt, images, decoding) in enumerate(batch)
        ]
        return [images[0] for images in self._concurrently(calls)]

    def _concurrently(self, calls: Sequence[Callable[[], Result]]) -> list[Result]:
        if self.settings.max_concurrency == 1 or len(calls) < 2:
            return [call() for call in calls]
        with ThreadPoolExecutor(max_workers=min(self.settings.max_concurrency, len(calls))) as pool:
            return list(pool.map(lambda call: call(), calls))

    def draw(
        self, prompt: str, images: list[Image.Image], *, n: int, seed: int | None, endpoint: int = 0
    ) -> list[Image.Image]:
        """``n`` images for ``prompt`` from the ``endpoint``-th server: an edit of ``images`` when there are any (and
        ``edit``), else a generation; ``seed`` is sent with ``send_seed``."""
        server = self.endpoints[endpoint]
        settings = self.settings
        options: dict[str, Any] = {"model": settings.model, "prompt": prompt, "n": n}
        optional = {
            "size": settings.size,
            "quality": settings.quality,
            "response_format": settings.response_format,
            "num_inference_steps": settings.num_inference_steps,
            "guidance_scale": settings.guidance_scale,
            "negative_prompt": settings.negative_prompt,
        }
        options.update({name: value for name, value in optional.items() if value is not None})
        if settings.send_seed and seed is not None:
            options["seed"] = int(seed)
        options.update(settings.extra_body)
        if settings.endpoint == "chat":
            return self._draw_by_chat(server, prompt, images if settings.edit else [], options)
        parse = partial(reply_images, n=n)
        if images and settings.edit:
            field_name = "image" if len(images) == 1 else "image[]"
            files = [(field_name, (f"image_{i}.png", png_bytes(im), "image/png")) for i, im in enumerate(images)]
            form = {name: form_value(value) for name, value in options.items()}
            found = server.post("images/edits", "image", parse, data=form, files=files)
        else:
            found = server.post("images/generations", "image", parse, json=options)
        return [self._decode(server, image, index) for index, image in enumerate(found)]

    def _draw_by_chat(
        self, server: HttpEndpoint, prompt: str, images: list[Image.Image], options: dict[str, Any]
    ) -> list[Image.Image]:
        """The images of a chat completion asked for the ``image`` modality: the input images as data URLs, then
        the prompt, in one user message; every option of an image request (model, n, size, seed, sampler
        settings, ``extra_body``) in the body."""
        content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": data_url(im)}} for im in images]
        content.append({"type": "text", "text": prompt})
        body = {**options, "messages": [{"role": "user", "content": content}], "modalities": ["image", "text"]}
        del body["prompt"]
        found = server.post("chat/completions", "image", partial(chat_reply_images, n=options["n"]), json=body)
        return [self._decode(server, image, index) for index, image in enumerate(found)]

    @staticmethod
    def _decode(server: HttpEndpoint, found: bytes | str, index: int) -> Image.Image:
        """An image of a reply (its bytes, or the URL to download them from), checked by the gate, in RGB."""
        raw = found if isinstance(found, bytes) else server.download(found, "image")
        check_image_bytes(raw, f"image {index} of the reply")
        image = Image.open(io.BytesIO(raw))
        image.load()
        return image.convert("RGB")
