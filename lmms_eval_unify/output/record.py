"""The image-output contract between unified models and task scorers.

lmms-eval passes one string per request from the model to ``process_results``. Our models return a JSON
``UnifiedOutput``: the final text, the output images (PNG files under a media root, referenced by paths
relative to it), the ordered protocol steps, and why the output is missing when it is. Every task reads it
back with :func:`parse_output`, which never raises: a malformed record, a missing or corrupt image or a
wrong image count becomes an ``OutputFailure`` that the task scores 0 and counts.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields

from PIL import Image

from lmms_eval_unify import gate
from lmms_eval_unify.output.failure import OutputFailure
from lmms_eval_unify.output.media_reader import image_failure, load_media

SCHEMA = "lmms_eval_unify/output@1"
OUTPUT_DIR_ENV = "LMMS_EVAL_UNIFY_OUTPUT_DIR"


def clean_text(value: object) -> str:
    """``value`` as text that always encodes as UTF-8: bytes are decoded with replacement, lone
    surrogates and other unencodable code points become U+FFFD, and non-strings become ``""``."""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if not isinstance(value, str):
        return ""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-8", errors="surrogatepass").decode("utf-8", errors="replace")


@dataclass
class Step:
    """One step of a multi-step protocol: the model's text for it and the image it produced, if any."""

    text: str = ""
    image: str | None = None


@dataclass
class UnifiedOutput:
    """What a unified model produced for one request (serialised as JSON for lmms-eval)."""

    protocol: str
    text: str = ""
    images: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    video_frames: list[str] = field(default_factory=list)
    root: str = ""
    error: str | None = None
    unsupported: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    signature: str = ""

    def to_json(self) -> str:
        """The record as JSON; every text is cleaned (:func:`clean_text`) so it always encodes as UTF-8."""
        return json.dumps(_cleaned({"schema": SCHEMA, **asdict(self)}), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict) -> UnifiedOutput:
        """Build a record from parsed JSON; raises ``MalformedRecordError`` naming the first field of the
        wrong type (strings are cleaned, unknown keys ignored)."""
        known = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        for name, value in known.items():
            if name != "steps":
                known[name] = _checked(name, value, _FIELD_KINDS[name])
        steps = known.get("steps", [])
        if not isinstance(steps, list):
            raise MalformedRecordError(f"'steps' must be a list, got {type(steps).__name__}")
        known["steps"] = [_step(i, item) for i, item in enumerate(steps)]
        if not isinstance(known.get("protocol"), str):
            raise MalformedRecordError("'protocol' must be a string")
        return cls(**known)


class MalformedRecordError(ValueError):
    """A record field has the wrong type."""


_FIELD_KINDS = {
    "protocol": "str",
    "text": "str",
    "images": "str_list",
    "video_frames": "str_list",
    "root": "str",
    "error": "optional_str",
    "unsupported": "optional_str",
    "timings": "timings",
    "signature": "str",
}


def _checked(name: str, value: object, kind: str) -> object:
    """``value`` cleaned, if it is of ``kind``; else ``MalformedRecordError``."""
    if kind == "optional_str" and value is None:
        return None
    if kind in ("str", "optional_str") and isinstance(value, str):
        return clean_text(value)
    if kind == "str_list" and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [clean_text(v) for v in value]
    if kind == "timings" and isinstance(value, dict) and all(_is_finite_number(v) for v in value.values()):
        return {clean_text(k): float(v) for k, v in value.items()}
    raise MalformedRecordError(f"{name!r} must be {kind.replace('_', ' ')}, got {type(value).__name__}")


def _is_finite_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(float(value))


def _step(index: int, item: object) -> Step:
    if not isinstance(item, dict):
        raise MalformedRecordError(f"step {index} must be an object, got {type(item).__name__}")
    text = _checked(f"steps[{index}].text", item.get("text", ""), "str")
    image = _checked(f"steps[{index}].image", item.get("image"), "optional_str")
    return Step(text=text, image=image)  # type: ignore[arg-type]


def _cleaned(value: object) -> object:
    """``value`` with every string (keys included) cleaned for UTF-8."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k) if isinstance(k, str) else k: _cleaned(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cleaned(v) for v in value]
    return value


@dataclass
class ParsedOutput:
    """A model output read back by a scorer. ``failure`` is set when the output is unusable."""

    record: UnifiedOutput
    failure: OutputFailure | None = None

    @property
    def text(self) -> str:
        return self.record.text

    @property
    def unsupported(self) -> bool:
        return self.record.unsupported is not None

    def load_images(self, expected: int | None = None) -> list[Image.Image] | OutputFailure:
        """Decode the output images; an ``OutputFailure`` if any is missing/corrupt or the count differs."""
        if expected is not None and len(self.record.images) != expected:
            return OutputFailure("wrong_image_count", f"expected {expected} images, got {len(self.record.images)}")
        return load_media(self.record.root, self.record.images)


def parse_output(raw: object) -> ParsedOutput:
    """Read a model output string. Never raises.

    Accepted forms: our JSON record; the de-facto upstream JSON ``{"text": ..., "images": [abs paths]}``;
    plain text from text-only models. A string that looks like JSON but does not parse, or parses to the
    wrong shape or field types, is a ``malformed_record`` failure. All text comes back UTF-8 clean. The gate's
    limits (:mod:`lmms_eval_unify.gate`) apply before any scorer sees the output: a record over ``record_chars``
    is ``malformed_record``; a text (answer or step) over ``text_chars`` is ``text_too_long`` and its text is
    dropped, so no tokenizer or judge prompt gets it; more image references (images, step images, video frames)
    than ``images_per_sample`` is ``too_many_images``, before any is read.
    """
    try:
        return _within_limits(_parse_output(raw))
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises": any parser surprise is a failed record
        return ParsedOutput(UnifiedOutput("unknown"), OutputFailure("malformed_record", type(exc).__name__))


def _malformed(detail: str, text: str = "") -> ParsedOutput:
    return ParsedOutput(UnifiedOutput("unknown", text=text), OutputFailure("malformed_record", detail))


def _parse_output(raw: object) -> ParsedOutput:
    if isinstance(raw, bytes | bytearray):
        raw = clean_text(raw)
    if not isinstance(raw, str):
        return ParsedOutput(UnifiedOutput("unknown"), OutputFailure("not_a_string", type(raw).__name__))
    raw = clean_text(raw)
    stripped = raw.strip()
    if not stripped.startswith("{"):
        return ParsedOutput(UnifiedOutput("external", text=raw))
    try:
        gate.check_text(stripped, "record", f"record of {len(stripped)} characters")
    except gate.Refused as refused:
        return _malformed(str(refused))
    try:
        data = json.loads(stripped)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, int digit limit, deep nesting
        return _malformed(f"{type(exc).__name__}: {str(exc)[:200]}", raw)
    if not isinstance(data, dict):
        return _malformed("not an object", raw)
    if data.get("schema") != SCHEMA:
        images = data.get("images") or []
        text = data.get("text", "")
        if not isinstance(images, list) or not all(isinstance(p, str) for p in images):
            return ParsedOutput(UnifiedOutput("external"), OutputFailure("malformed_record", "bad 'images'"))
        if not isinstance(text, str):
            return ParsedOutput(UnifiedOutput("external"), OutputFailure("malformed_record", "bad 'text'"))
        images = [clean_text(p) for p in images]
        return ParsedOutput(UnifiedOutput("external", text=clean_text(text), images=images))
    try:
        record = UnifiedOutput.from_dict(data)
    except (TypeError, ValueError) as exc:
        return _malformed(str(exc), raw)
    if record.error:
        return ParsedOutput(record, OutputFailure("model_error", record.error))
    return ParsedOutput(record)


def _within_limits(parsed: ParsedOutput) -> ParsedOutput:
    """``parsed``, or the same output failed (``text_too_long``, text dropped; ``too_many_images``) when it is
    over the gate's text or image-count limits (an earlier failure is kept; over-long text is dropped anyway)."""
    record = parsed.record
    try:
        for index, text in enumerate([record.text, *(step.text for step in record.steps)]):
            gate.check_text(text, "text", "the answer" if index == 0 else f"the text of step {index - 1}")
        references = len(record.images) + sum(bool(step.image) for step in record.steps) + len(record.video_frames)
        gate.check_count(references, "images", "the output's image references")
    except gate.Refused as refused:
        if refused.reason == "too_large":
            record.text, record.steps = "", [Step(image=step.image) for step in record.steps]
        failure = (
            OutputFailure("text_too_long", str(refused)) if refused.reason == "too_large" else image_failure(refused)
        )
        return ParsedOutput(record, parsed.failure or failure)
    return parsed
