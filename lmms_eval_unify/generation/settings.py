"""Typed ``--model_args`` of every adapter: :class:`ModelSettings`, which converts and checks lmms-eval's
model arguments into a frozen dataclass, and the field markers adapters use (:func:`run_only`, ``PARSE``)."""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from lmms_eval_unify.redaction import redact_secrets, redact_text

RUN_ONLY = "run_only"
"""Metadata key of a settings field that does not change outputs (left out of ``describe()``)."""

PARSE = "parse"
"""Metadata key of a settings field's own parser of ``--model_args`` values (instead of its type's)."""


def run_only(default: Any = None) -> Any:
    """A settings field that does not change outputs (paths to code, credentials, retries, batching)."""
    return field(default=default, metadata={RUN_ONLY: True})


class ModelArgumentError(TypeError):
    """A ``--model_args`` key the adapter does not take, or a value that does not convert to its type."""


@dataclass(frozen=True, kw_only=True)
class ModelSettings:
    """``--model_args`` of every adapter. Adapters subclass it (a dataclass) with their own fields; every
    field is a ``--model_args`` key, typed and defaulted, and every field not marked :func:`run_only` is
    part of ``describe()`` (the resume signature and the media folder name)."""

    output_dir: str | None = run_only()
    seed: int = 0
    resume: bool = run_only(True)
    device: str | None = run_only()
    dtype: str | None = None
    batch_size: int | str = run_only(1)
    """lmms-eval passes ``--batch_size`` here: a number, or ``auto`` (served as 1)."""
    max_batch_size: int | None = run_only()
    """Passed by lmms-eval itself; unused."""

    @classmethod
    def from_model_args(cls, model_id: str, model_args: dict[str, Any]) -> ModelSettings:
        """The settings from ``--model_args`` values (strings, or what lmms-eval parsed them into), each
        converted to its field's type; unknown keys and unconvertible values are errors naming the key."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(model_args) - set(fields))
        if unknown:
            raise ModelArgumentError(f"{model_id}: unknown model arguments {unknown}; valid: {sorted(fields)}")
        missing = sorted(name for name, f in fields.items() if name not in model_args and _required(f))
        if missing:
            raise ModelArgumentError(f"{model_id}: missing model arguments {missing}")
        hints = typing.get_type_hints(cls)
        values = {}
        for name, value in model_args.items():
            parse = fields[name].metadata.get(PARSE)
            try:
                values[name] = parse(value) if parse else convert(value, hints[name])
            except (TypeError, ValueError) as exc:
                expected = "a nested argument list" if parse else type_name(hints[name])
                shown = redact_secrets({name: value})[name]
                raise ModelArgumentError(
                    f"{model_id}: model argument {name}={shown!r}: expected {expected} ({redact_text(str(exc))})"
                ) from None
        return cls(**values)

    def described(self) -> dict[str, Any]:
        """Every field that changes outputs, by name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if not f.metadata.get(RUN_ONLY)}


def _required(settings_field: dataclasses.Field) -> bool:
    return settings_field.default is dataclasses.MISSING and settings_field.default_factory is dataclasses.MISSING


TRUE_WORDS, FALSE_WORDS = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
NONE_WORDS = ("", "none", "null")


def _members(annotation: Any) -> tuple[Any, ...]:
    """The types of a union (``int | None``, ``Optional[int]``), or the type itself."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return typing.get_args(annotation) if union else (annotation,)


def type_name(annotation: Any) -> str:
    """``int``, ``float | None``, … as written in the settings class."""
    members = _members(annotation)
    return " | ".join("None" if m is type(None) else getattr(m, "__name__", str(m)) for m in members)


def convert(value: Any, annotation: Any) -> Any:
    """A model argument as ``annotation`` (``str``, ``int``, ``float``, ``bool``, unions of them with
    ``None``); raises ``ValueError`` when it is not one."""
    members = _members(annotation)
    if type(None) in members and (value is None or str(value).strip().lower() in NONE_WORDS):
        return None
    errors = []
    for member in (m for m in members if m is not type(None)):
        try:
            return _convert_one(value, member)
        except (TypeError, ValueError) as exc:
            errors.append(str(exc))
    raise ValueError("; ".join(errors) or f"{value!r} is not None")


def _convert_one(value: Any, kind: type) -> Any:
    if kind is bool:
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word in TRUE_WORDS + FALSE_WORDS:
            return word in TRUE_WORDS
        raise ValueError(f"expected one of {TRUE_WORDS + FALSE_WORDS}")
    if kind is int:
        if isinstance(value, bool):
            raise ValueError("a boolean is not an integer")
        if isinstance(value, float):
            if not value.is_integer():
                raise ValueError("not a whole number")
            return int(value)
        return int(str(value).strip())
    if kind is float:
        if isinstance(value, bool):
            raise ValueError("a boolean is not a number")
        return float(value)
    if kind is str:
        return str(value)
    raise TypeError(f"settings fields of type {kind!r} need a parse function (field metadata {PARSE!r})")
