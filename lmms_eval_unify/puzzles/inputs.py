"""What a puzzle task shows the model (the task YAMLs' ``doc_to_visual`` / ``doc_to_text``), on documents with
the released puzzle data's fields. The prompt comes from the task's ``lmms_eval_specific_kwargs``."""

from lmms_eval_unify.generation.visuals import to_pil_images


def maze_doc_to_visual(doc: dict) -> list:
    """The maze page."""
    return to_pil_images(doc["initial_image"])


def sliding_doc_to_visual(doc: dict) -> list:
    """The scrambled board, then the goal board when the document has one."""
    goal = [doc["final_image"]] if doc.get("final_image") else []
    return to_pil_images([doc["initial_image"], *goal])


def puzzle_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    """The task's ``prompt``, plus its ``goal_note`` when the document shows the goal board."""
    kwargs = lmms_eval_specific_kwargs or {}
    note = kwargs.get("goal_note") if doc.get("final_image") else None
    return kwargs["prompt"] + (f"\n\n{note}" if note else "")


def jigsaw_doc_to_visual(doc: dict) -> list:
    """The reference 2x2 image, then candidates 0 and 1."""
    return to_pil_images([doc["ref_image"], doc["cand0_image"], doc["cand1_image"]])


def jigsaw_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    """The task's ``prompt``."""
    return (lmms_eval_specific_kwargs or {})["prompt"]
