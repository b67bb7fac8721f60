"""What a Uni-MMMU task shows the model (the YAMLs' ``doc_to_visual`` / ``doc_to_text``)."""

from lmms_eval_unify.benchmarks.uni_mmmu import geometry
from lmms_eval_unify.generation.visuals import to_pil_images


def maze_doc_to_visual(doc: dict) -> list:
    return to_pil_images(doc["initial_image"])


def sliding_doc_to_visual(doc: dict) -> list:
    goal = [doc["final_image"]] if doc.get("final_image") else []
    return to_pil_images([doc["initial_image"], *goal])


def puzzle_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    note = kwargs.get("goal_note") if doc.get("final_image") else None
    return kwargs["prompt"] + (f"\n\n{note}" if note else "")


def jigsaw_doc_to_visual(doc: dict) -> list:
    return to_pil_images([doc["ref_image"], doc["cand0_image"], doc["cand1_image"]])


def jigsaw_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    return (lmms_eval_specific_kwargs or {})["prompt"]


def geometry_doc_to_visual(doc: dict) -> list:
    return to_pil_images(doc["original_image"])


def geometry_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    base = geometry.prompt(doc, kwargs["prompt"])
    return f"[GEN_PROMPT]{base}\n{kwargs['overlay_step']}[/GEN_PROMPT][QUESTION]{base}\n{kwargs['reasoning_step']}[/QUESTION]"


def science_doc_to_visual(doc: dict) -> list:
    return to_pil_images(doc["initial_image"])


def science_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    return f"{kwargs['prompt']}\nInitial image: (image 1)\nCondition: {doc['input_prompt']}"


def code_doc_to_visual(doc: dict) -> list:
    return []


def code_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    return f"{(lmms_eval_specific_kwargs or {})['prompt']}\n{doc['svg']}"
