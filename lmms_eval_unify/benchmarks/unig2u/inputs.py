"""What a UniG2U task shows the model (the YAMLs' ``doc_to_visual`` / ``doc_to_text`` / ``doc_to_target`` /
``process_docs``)."""

from lmms_eval_unify.benchmarks.unig2u.prompts import direct_prompt, gta_prompt, vsp_kind
from lmms_eval_unify.benchmarks.unig2u.spec import SUBTASKS
from lmms_eval_unify.benchmarks.unig2u.task import base64_image, rows_of_type
from lmms_eval_unify.generation.visuals import to_pil_images

VSP_VISUALS = {
    "gmap": ("example_image", "test_image"),
    "collision": ("icon_image", "example_image", "test_image"),
}


def image_doc_to_visual(doc: dict) -> list:
    return to_pil_images(doc["image"])


def images_doc_to_visual(doc: dict) -> list:
    return to_pil_images(list(doc["images"]))


def geometry3k_doc_to_visual(doc: dict) -> list:
    return to_pil_images(list(doc["images"])[:1])


def auxsolidmath_doc_to_visual(doc: dict) -> list:
    return to_pil_images(doc["original_image"])


def phyx_doc_to_visual(doc: dict) -> list:
    return [base64_image(doc["image"])]


def _subtask_rows(dataset, subtask: str):
    """The rows of ``subtask``'s own ``type`` in the file it shares with its siblings."""
    doc_type = SUBTASKS[subtask].doc_type
    if doc_type is None:
        raise ValueError(f"{subtask} reads every row of its file")
    return rows_of_type(dataset, doc_type)


def visual_track_docs(dataset):
    return _subtask_rows(dataset, "visual_track")


def fine_discrim_docs(dataset):
    return _subtask_rows(dataset, "fine_discrim")


def vsp_doc_to_visual(doc: dict) -> list:
    return to_pil_images([doc[key] for key in VSP_VISUALS[vsp_kind(doc)]])


def doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    build = gta_prompt if kwargs.get("mode") == "gta" else direct_prompt
    return build(kwargs["subtask"], doc)


def doc_to_target(doc: dict) -> str:
    if "test_image" in doc:  # VSP
        if vsp_kind(doc) == "collision":
            return f"Car: {doc['gt_car']}, Person: {doc['gt_person']}"
        return f"north-south: {doc['gt_north_south']}, east-west: {doc['gt_east_west']}"
    if "ansType" in doc:  # BabyVision
        return chr(65 + int(doc["choiceAns"])) if doc["ansType"] == "choice" else str(doc["blankAns"])
    return str(doc.get("answer", doc.get("image_name", "")))
