"""Versioned judge prompt templates, loaded from each benchmark's ``judge_prompts.yaml`` (one file per paper).

A template's user message is a sequence of segments: text (with ``{variable}`` placeholders; only
declared variable names are substituted, so literal JSON braces stay untouched) and image slots (filled
by name at call time, optionally preceded by a label such as ``[Image]``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache, cached_property
from typing import Any

import yaml

from lmms_eval_unify.benchmarks import judge_prompt_files
from lmms_eval_unify.judges.images import EncodedImage, ImageInput, encode_image
from lmms_eval_unify.judges.parsing import FieldSpec

ORIGINS = ("transcribed", "reconstructed")
DIGEST_EXCLUDED = frozenset({"notes", "paper", "origin", "default_model"})
"""Template fields that do not shape a judgement (the judge model is recorded beside the digest)."""
ImageSlots = Mapping[str, ImageInput | Sequence[ImageInput] | None]


@dataclass(frozen=True)
class Segment:
    """Literal ``text``, an image ``slot`` (with an optional ``label`` line before it) or the addendum."""

    text: str | None = None
    slot: str | None = None
    label: str | None = None
    optional: bool = False
    addendum: bool = False


@dataclass(frozen=True)
class Addendum:
    """Category-specific text appended to the user prompt (e.g. per-category diagnostics)."""

    variable: str
    texts: Mapping[str, str]
    from_variable: str | None = None
    aliases: Mapping[str, str] = field(default_factory=dict)

    def select(self, values: Mapping[str, Any]) -> str | None:
        """The category: explicit variable, else the first alias found as a substring of ``from_variable``."""
        category = values.get(self.variable)
        if not category and self.from_variable:
            source = str(values.get(self.from_variable, "")).lower()
            category = next((cat for key, cat in self.aliases.items() if key in source), None)
        if category and category not in self.texts:
            raise ValueError(f"unknown {self.variable} {category!r}; known: {sorted(self.texts)}")
        return category or None


@dataclass(frozen=True)
class RenderedPrompt:
    """Messages ready to send, plus the hash of every image they carry, in order."""

    messages: list[dict[str, Any]]
    image_hashes: tuple[str, ...]


@dataclass(frozen=True)
class Template:
    id: str
    version: int
    paper: str
    origin: str
    segments: tuple[Segment, ...]
    outputs: tuple[FieldSpec, ...]
    variables: tuple[str, ...] = ()
    optional_variables: tuple[str, ...] = ()
    system: str | None = None
    default_model: str | None = None
    temperature: float | None = 0.0
    max_tokens: int | None = None
    turns: int = 1
    followup: str | None = None
    image_format: str = "original"
    image_max_width: int | None = None
    addendum: Addendum | None = None
    notes: str = ""

    @property
    def key(self) -> str:
        return f"{self.id}@v{self.version}"

    @cached_property
    def digest(self) -> str:
        """12 hex digits of the sha256 of everything that shapes the judge's prompt, parsing and decoding, so an
        edited text under an unchanged id and version still tells runs apart (notes, paper and origin excluded)."""
        shaping = {name: value for name, value in asdict(self).items() if name not in DIGEST_EXCLUDED}
        text = json.dumps(shaping, sort_keys=True, ensure_ascii=False)  # plain JSON only: no order-dependent str()
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]

    @property
    def slots(self) -> tuple[str, ...]:
        return tuple(s.slot for s in self.segments if s.slot)

    def render(self, variables: Mapping[str, Any], images: ImageSlots) -> RenderedPrompt:
        """Fill variables and image slots; raise ``ValueError`` on missing or unknown names."""
        self._check_names(variables, images)
        values = {name: "" for name in self.optional_variables} | {k: _text(v) for k, v in variables.items()}
        content: list[dict[str, Any]] = []
        hashes: list[str] = []
        for segment in self.segments:
            if segment.text is not None:
                content.append({"type": "text", "text": _substitute(segment.text, values)})
                continue
            if segment.addendum:
                if self.addendum and (category := self.addendum.select(values)):
                    content.append({"type": "text", "text": self.addendum.texts[category]})
                continue
            encoded = self._encode_slot(segment, images.get(segment.slot or ""))
            if encoded and segment.label:
                content.append({"type": "text", "text": segment.label})
            for image in encoded:
                content.append({"type": "image_url", "image_url": {"url": image.data_url}})
                hashes.append(image.sha256)
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.system}] if self.system else []
        messages.append({"role": "user", "content": _merge_text(content)})
        return RenderedPrompt(messages=messages, image_hashes=tuple(hashes))

    def _check_names(self, variables: Mapping[str, Any], images: ImageSlots) -> None:
        missing = [v for v in self.variables if v not in variables]
        unknown = set(variables) - set(self.variables) - set(self.optional_variables)
        bad_slots = set(images) - set(self.slots)
        if missing or unknown or bad_slots:
            raise ValueError(
                f"template {self.key}: missing variables {missing}, unknown variables {sorted(unknown)}, "
                f"unknown image slots {sorted(bad_slots)} (slots: {list(self.slots)})"
            )

    def _encode_slot(self, segment: Segment, value: Any) -> list[EncodedImage]:
        items = [] if value is None else list(value) if isinstance(value, list | tuple) else [value]
        if not items and not segment.optional:
            raise ValueError(f"template {self.key}: image slot {segment.slot!r} is required")
        return [encode_image(item, self.image_format, self.image_max_width) for item in items]


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _substitute(text: str, values: Mapping[str, str]) -> str:
    pattern = re.compile(r"\{(" + "|".join(map(re.escape, values)) + r")\}") if values else None
    return pattern.sub(lambda m: values[m.group(1)], text) if pattern else text


def _merge_text(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Join adjacent text parts with newlines so the prompt reads as written."""
    merged: list[dict[str, Any]] = []
    for part in content:
        if part["type"] == "text" and merged and merged[-1]["type"] == "text":
            merged[-1] = {"type": "text", "text": merged[-1]["text"] + "\n" + part["text"]}
        else:
            merged.append(part)
    return merged


# --------------------------------------------------------------------------- loading
def _join(value: str | Sequence[str]) -> str:
    return value if isinstance(value, str) else "\n".join(value)


def _segment(raw: Mapping[str, Any]) -> Segment:
    if "text" in raw:
        return Segment(text=_join(raw["text"]))
    if raw.get("addendum"):
        return Segment(addendum=True)
    return Segment(slot=raw["image"], label=raw.get("label"), optional=bool(raw.get("optional", False)))


def _template(template_id: str, raw: Mapping[str, Any], paper: str) -> Template:
    if raw["origin"] not in ORIGINS:
        raise ValueError(f"{template_id}: origin must be one of {ORIGINS}")
    addendum = raw.get("addendum")
    return Template(
        id=template_id,
        version=int(raw["version"]),
        paper=paper,
        origin=raw["origin"],
        notes=raw.get("notes", "").strip(),
        segments=tuple(_segment(s) for s in raw["content"]),
        outputs=tuple(FieldSpec.from_dict(k, v) for k, v in raw["output"].items()),
        variables=tuple(raw.get("variables", ())),
        optional_variables=tuple(raw.get("optional_variables", ())),
        system=_join(raw["system"]) if raw.get("system") else None,
        default_model=raw.get("default_model"),
        temperature=raw.get("temperature", 0.0),
        max_tokens=raw.get("max_tokens"),
        turns=int(raw.get("turns", 1)),
        followup=raw.get("followup"),
        image_format=raw.get("image_format", "original"),
        image_max_width=raw.get("image_max_width"),
        addendum=(
            Addendum(
                variable=addendum["variable"],
                texts={k: _join(v) for k, v in addendum["texts"].items()},
                from_variable=addendum.get("from_variable"),
                aliases=addendum.get("aliases", {}),
            )
            if addendum
            else None
        ),
    )


@cache
def load_templates() -> dict[str, Template]:
    """All templates shipped as ``benchmarks/<name>/judge_prompts.yaml`` (the benchmarks that have one), by id."""
    out: dict[str, Template] = {}
    for entry in judge_prompt_files():
        doc = yaml.safe_load(entry.read_text(encoding="utf-8"))
        for template_id, raw in doc["templates"].items():
            if template_id in out:
                raise ValueError(f"duplicate judge template id {template_id!r} in {entry.name}")
            out[template_id] = _template(template_id, raw, doc["paper"])
    return out


def get_template(template_id: str) -> Template:
    templates = load_templates()
    if template_id not in templates:
        raise KeyError(f"unknown judge template {template_id!r}; known: {sorted(templates)}")
    return templates[template_id]
