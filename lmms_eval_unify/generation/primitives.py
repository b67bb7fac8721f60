"""The contract between protocols and models: the primitive names, the capability sets adapters declare,
the request being served, and :class:`Primitives`, what the protocol engine calls on a model.

``lmms_eval_unify.generation.protocols`` and ``lmms_eval_unify.generation.engine`` depend on this contract
only; ``lmms_eval_unify.integration.model.UnifiedModel`` is the lmms-eval model that fulfils it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from PIL import Image

from lmms_eval_unify.generation.media import MediaStore

UNDERSTAND, GENERATE_IMAGE, GENERATE_VIDEO = "understand", "generate_image", "generate_video"
UNDERSTAND_VIDEO = "understand_video"
"""Capability: ``understand`` takes ``lmms_eval_unify.generation.visuals.Video`` inputs (others get sampled frames)."""

UNDERSTANDING_ONLY = frozenset({UNDERSTAND})
UNDERSTAND_AND_GENERATE = frozenset({UNDERSTAND, GENERATE_IMAGE})
ALL_PRIMITIVES = frozenset({UNDERSTAND, GENERATE_IMAGE, GENERATE_VIDEO})


@dataclass(frozen=True)
class RequestInfo:
    """The request being served (instruments such as the oracle read their document through it)."""

    task: str
    split: str
    doc_id: Any
    options: dict[str, Any]
    index: int = 0
    """Position of the request in the list lmms-eval passed."""


class Primitives(Protocol):
    """A model as protocols and the engine use it: its primitives, their batched variants and its media."""

    model_id: ClassVar[str]
    capabilities: ClassVar[frozenset[str]]
    batch_size: int
    """How many requests of the same phase one batched call serves."""
    request: RequestInfo | None
    """The request a one-by-one primitive call serves (set by the engine before the call)."""

    @property
    def media(self) -> MediaStore:
        """Where the protocols save the images the model returns."""
        ...

    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        """A text answer to ``prompt`` about ``images``."""
        ...

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        """An image for ``prompt`` (an edit of ``images`` when there are any)."""
        ...

    def generate_video(self, prompt: str, images: list[Image.Image], **decoding: Any) -> list[Image.Image]:
        """The frames of a video for ``prompt``."""
        ...

    def understand_batch(self, batch: list[tuple[list[Image.Image], str]], **decoding: Any) -> list[str]:
        """Answers to several ``(images, prompt)`` pairs sharing decoding parameters."""
        ...

    def generate_image_batch(self, batch: list[tuple[str, list[Image.Image], dict[str, Any]]]) -> list[Image.Image]:
        """Images for several ``(prompt, images, decoding)`` requests, each with its own decoding."""
        ...

    def batches_understanding(self) -> bool:
        """Whether ``understand_batch`` is a real batched call."""
        ...

    def batches_generation(self) -> bool:
        """Whether ``generate_image_batch`` is a real batched call."""
        ...
