"""The image-output contract between unified models and task scorers.

lmms-eval passes one string per request from the model to ``process_results``. Our models return a JSON
``UnifiedOutput``: the final text, the output images (PNG files under a media root, referenced by paths
relative to it), the ordered protocol steps, and why the output is missing when it is. Every task reads it
back with :func:`parse_output`, which never raises: a malformed record, a missing or corrupt image or a
wrong image count becomes an ``OutputFailure`` that the task scores 0 and counts.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from loguru import logger
from PIL import Image, UnidentifiedImageError

SCHEMA = "lmms_eval_unify/output@1"
OUTPUT_DIR_ENV = "LMMS_EVAL_UNIFY_OUTPUT_DIR"


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
        return json.dumps({"schema": SCHEMA, **asdict(self)}, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict) -> UnifiedOutput:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["steps"] = [
            Step(**s) if isinstance(s, dict) else Step(text=str(s)) for s in known.get("steps", [])
        ]
        return cls(**known)


class UnsafePathError(ValueError):
    """A media path that would leave the media root."""


def resolve_media_path(root: str | Path, relative: str) -> Path:
    """Absolute path of ``relative`` inside ``root``; raises ``UnsafePathError`` on traversal or absolute paths."""
    root_path = Path(root).resolve()
    if os.path.isabs(relative):
        raise UnsafePathError(f"absolute media path {relative!r}; records hold paths relative to the root")
    candidate = (root_path / relative).resolve()
    if not candidate.is_relative_to(root_path):
        raise UnsafePathError(f"media path {relative!r} escapes the media root {root_path}")
    return candidate


@dataclass(frozen=True)
class OutputFailure:
    """Why an output cannot be scored: a short machine-readable reason and a human-readable detail."""

    reason: str
    detail: str = ""


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
            return OutputFailure(
                "wrong_image_count", f"expected {expected} images, got {len(self.record.images)}"
            )
        return load_media(self.record.root, self.record.images)


def load_media(root: str, paths: Sequence[str]) -> list[Image.Image] | OutputFailure:
    """Load images referenced by a record; relative paths are confined to ``root``."""
    images = []
    for path in paths:
        try:
            full = Path(path) if not root and os.path.isabs(path) else resolve_media_path(root, path)
            with Image.open(full) as handle:
                handle.load()
                images.append(handle.convert("RGB"))
        except UnsafePathError as exc:
            return OutputFailure("unsafe_path", str(exc))
        except FileNotFoundError:
            return OutputFailure("missing_image", f"{path} not found under {root or '/'}")
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            return OutputFailure("corrupt_image", f"{path}: {exc}")
    return images


def parse_output(raw: object) -> ParsedOutput:
    """Read a model output string. Never raises.

    Accepted forms: our JSON record; the de-facto upstream JSON ``{"text": ..., "images": [abs paths]}``;
    plain text from text-only models. A string that looks like JSON but does not parse is a failure.
    """
    if not isinstance(raw, str):
        return ParsedOutput(UnifiedOutput("unknown"), OutputFailure("not_a_string", type(raw).__name__))
    stripped = raw.strip()
    if not stripped.startswith("{"):
        return ParsedOutput(UnifiedOutput("external", text=raw))
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError as exc:
        return ParsedOutput(UnifiedOutput("unknown", text=raw), OutputFailure("malformed_record", str(exc)))
    if not isinstance(data, dict):
        return ParsedOutput(
            UnifiedOutput("unknown", text=raw), OutputFailure("malformed_record", "not an object")
        )
    if data.get("schema") != SCHEMA:
        images = data.get("images") or []
        if not isinstance(images, list) or not all(isinstance(p, str) for p in images):
            return ParsedOutput(UnifiedOutput("external"), OutputFailure("malformed_record", "bad 'images'"))
        return ParsedOutput(UnifiedOutput("external", text=str(data.get("text", "")), images=images))
    try:
        record = UnifiedOutput.from_dict(data)
    except (TypeError, ValueError) as exc:
        return ParsedOutput(UnifiedOutput("unknown", text=raw), OutputFailure("malformed_record", str(exc)))
    if record.error:
        return ParsedOutput(record, OutputFailure("model_error", record.error))
    return ParsedOutput(record)


def failure_reason(item: object) -> str:
    """The failure reason of a per-sample metric value used for ``invalid_outputs`` ("" when valid)."""
    return item if isinstance(item, str) else ""


def count_invalid(items: Sequence[str]) -> int:
    """Aggregation for the ``invalid_outputs`` metric: how many samples failed, with reasons logged."""
    reasons = Counter(failure_reason(item) for item in items if failure_reason(item))
    if reasons:
        logger.warning(
            "{} of {} outputs could not be scored and count as 0: {}",
            sum(reasons.values()),
            len(items),
            ", ".join(f"{reason} x{n}" for reason, n in reasons.most_common()),
        )
    return sum(reasons.values())


def mean_supported(items: Sequence[float | None]) -> float | str:
    """Mean of per-sample scores; ``"-"`` when the model could not run the task (all items ``None``)."""
    values = [float(item) for item in items if item is not None]
    return sum(values) / len(values) if values else "-"
