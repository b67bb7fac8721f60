"""Strict parsing of judge replies against a template's declared output fields.

A reply is valid only when every required field is found with an allowed value. JSON is looked for in code fences
first, then as balanced ``{...}`` objects anywhere in the text (after dropping the reasoning: ``<think>`` blocks,
the text before a dangling ``</think>`` and after an unclosed ``<think>``); when no JSON object carries the fields,
``"key": value`` pairs are read with a regex. Anything else is *invalid* and the caller records the raw text;
nothing is guessed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN_RE = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE_RE = re.compile(r"</think>", re.IGNORECASE)
_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRUE = {"1", "true", "yes", "pass", "correct"}
_FALSE = {"0", "false", "no", "fail", "incorrect"}


@dataclass(frozen=True)
class FieldSpec:
    """One output field: ``kind`` is 'binary', 'int' (with ``minimum``/``maximum``) or 'text'."""

    name: str
    kind: str
    required: bool = True
    minimum: int | None = None
    maximum: int | None = None
    aliases: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, name: str, spec: Mapping[str, Any]) -> FieldSpec:
        kind = spec["type"]
        if kind not in ("binary", "int", "text"):
            raise ValueError(f"field {name}: unknown type {kind!r}")
        return cls(
            name=name,
            kind=kind,
            required=bool(spec.get("required", True)),
            minimum=spec.get("min"),
            maximum=spec.get("max"),
            aliases=tuple(spec.get("aliases", ())),
        )

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def coerce(self, value: Any) -> Any:
        """Return the normalised value, or raise ``ValueError`` when it is not allowed."""
        if self.kind == "text":
            return "" if value is None else str(value)
        if self.kind == "binary":
            token = str(value).strip().strip('"').lower()
            if token in _TRUE:
                return 1
            if token in _FALSE:
                return 0
            raise ValueError(f"{self.name}: {value!r} is not a binary verdict")
        number = _as_int(value)
        if (self.minimum is not None and number < self.minimum) or (self.maximum is not None and number > self.maximum):
            raise ValueError(f"{self.name}: {number} outside [{self.minimum}, {self.maximum}]")
        return number


def _as_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not an integer score")
    number = float(str(value).strip().strip('"'))
    if not number.is_integer():
        raise ValueError(f"{value!r} is not an integer score")
    return int(number)


@dataclass(frozen=True)
class ParseOutcome:
    fields: dict[str, Any]
    error: str | None

    @property
    def valid(self) -> bool:
        return self.error is None


def strip_reasoning(text: str) -> str:
    """Drop ``<think>...</think>`` blocks, everything up to a dangling ``</think>`` (a chat template that opens
    the block itself) and everything from an unclosed ``<think>`` on (thinking cut off at ``max_tokens``)."""
    text = _THINK_CLOSE_RE.split(_THINK_RE.sub("", text))[-1]
    return _THINK_OPEN_RE.split(text, maxsplit=1)[0]


def iter_json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Yield every JSON object found in code fences, then every balanced ``{...}`` in the text."""
    for block in _FENCE_RE.findall(text):
        yield from _balanced_objects(block)
    yield from _balanced_objects(text)


def _balanced_objects(text: str) -> Iterator[dict[str, Any]]:
    decoder = json.JSONDecoder()
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            obj, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # not JSON, a number past int's digit limit, nesting past the stack
            continue
        if isinstance(obj, dict):
            yield obj


def parse_reply(text: str, specs: tuple[FieldSpec, ...]) -> ParseOutcome:
    """Parse ``text`` into the declared fields, or report why it cannot be parsed."""
    body = strip_reasoning(text or "")
    if not body.strip():
        if (text or "").strip():
            return ParseOutcome({}, "no answer after the reasoning (the judge may have reached max_tokens thinking)")
        return ParseOutcome({}, "empty reply")
    last_error = "no JSON object with the required fields"
    for obj in iter_json_objects(body):
        lowered = {str(k).lower(): v for k, v in obj.items()}
        try:
            return ParseOutcome(_extract(lowered.get, specs), None)
        except (ValueError, KeyError) as exc:
            last_error = str(exc)
    if any(spec.kind == "text" and spec.required for spec in specs):
        return ParseOutcome({}, last_error)
    scalar = tuple(spec for spec in specs if spec.kind != "text")
    try:
        return ParseOutcome(_extract(lambda key: _regex_value(body, key), scalar), None)
    except (ValueError, KeyError):
        return ParseOutcome({}, last_error)


def _extract(lookup: Any, specs: tuple[FieldSpec, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for spec in specs:
        value = next((v for v in (lookup(k.lower()) for k in spec.keys) if v is not None), None)
        if value is None:
            if spec.required:
                raise KeyError(f"missing field {spec.name!r}")
            continue
        out[spec.name] = spec.coerce(value)
    return out


def _regex_value(text: str, key: str) -> str | None:
    """Value of a ``"key": value`` / ``key: value`` pair, for scalar (non-text) fields only."""
    match = re.search(rf'(?<![\w])"?{re.escape(key)}"?\s*[:=]\s*"?([A-Za-z0-9.]+)"?', text, re.IGNORECASE)
    return match.group(1) if match else None
