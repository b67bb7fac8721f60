"""What a judged Uni-MMMU task shows the model (the YAMLs' ``doc_to_visual`` / ``doc_to_text``); the maze,
sliding and jigsaw tasks use ``lmms_eval_unify.puzzles.inputs``."""

from lmms_eval_unify.benchmarks.uni_mmmu import geometry
from lmms_eval_unify.generation.visuals import to_pil_images


def geometry_doc_to_visual(doc: dict) -> list:
    return to_pil_images(doc["original_image"])


def geometry_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    base = geometry.prompt(doc, kwargs["prompt"])
    return (
        f"[GEN_PROMPT]{base}\n{kwargs['overlay_step']}[/GEN_PROMPT]"
        f"[QUESTION]{base}\n{kwargs['reasoning_step']}[/QUESTION]"
    )


def science_doc_to_visual(doc: dict) -> list:
    return to_pil_images(doc["initial_image"])


def science_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    return f"{kwargs['prompt']}\nInitial image: (image 1)\nCondition: {doc['input_prompt']}"


def code_doc_to_visual(doc: dict) -> list:
    return []


def code_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    return f"{(lmms_eval_specific_kwargs or {})['prompt']}\n{doc['svg']}"
