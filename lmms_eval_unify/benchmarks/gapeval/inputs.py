"""What a GapEval task shows the model (the YAMLs' ``doc_to_visual`` / ``doc_to_text``)."""

from __future__ import annotations

from collections.abc import Mapping

from lmms_eval_unify.generation.visuals import to_pil_images


def input_images(doc: Mapping) -> list:
    """The question's images (what the understanding direction and editing items see)."""
    return to_pil_images(list(doc.get("images") or []))


def generation_inputs(doc: Mapping) -> list:
    """What the generation direction sees: the input images of editing items, nothing for text-to-image."""
    return input_images(doc) if doc["gen_uses_image"] else []


def und_prompt(doc: Mapping) -> str:
    return doc["und_prompt"]


def gen_prompt(doc: Mapping) -> str:
    return doc["gen_prompt"]
