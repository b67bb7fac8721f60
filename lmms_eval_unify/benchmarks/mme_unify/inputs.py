"""What an MME-Unify task shows the model (the YAMLs' ``doc_to_visual`` / ``doc_to_text`` / ``doc_to_target``)."""

from lmms_eval_unify.benchmarks.mme_unify.prompts import (
    generation_prompt,
    understanding_prompt,
    unify_prompt,
    vcot_prompt,
)
from lmms_eval_unify.generation.visuals import to_pil_images


def image_doc_to_visual(doc: dict) -> list:
    return to_pil_images(list(doc["image"]))


def video_doc_to_visual(doc: dict) -> list:
    return [{"video": doc["video"]}]


def inputs_doc_to_visual(doc: dict) -> list:
    return to_pil_images(list(doc["inputs"]))


def vcot_doc_to_visual(doc: dict) -> list:
    return to_pil_images(doc["initial_image"])


def understanding_doc_to_text(doc: dict) -> str:
    return understanding_prompt(doc)


def unify_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    return unify_prompt((lmms_eval_specific_kwargs or {})["subtask"], doc)


def vcot_doc_to_text(doc: dict) -> str:
    return vcot_prompt(doc)


def doc_to_target(doc: dict) -> str:
    if "actions" in doc:
        return " ".join(doc["actions"])
    return str(doc.get("answer", doc.get("Text_Prompt", "")))


def generation_doc_to_visual(doc: dict) -> list:
    return to_pil_images(doc["image"]) if doc.get("image") is not None else []


def generation_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    return generation_prompt((lmms_eval_specific_kwargs or {})["subtask"], doc)
