"""Hooks of the MME-Unify tasks: thin glue to lmms_eval_unify.benchmarks.mme_unify."""

from lmms_eval_unify.benchmarks.mme_unify.generation import score_generation
from lmms_eval_unify.benchmarks.mme_unify.prompts import (
    generation_prompt,
    understanding_prompt,
    unify_prompt,
    vcot_prompt,
)
from lmms_eval_unify.benchmarks.mme_unify.scoring import score_multiple_choice, score_unify_qa, score_vcot
from lmms_eval_unify.model import to_pil_images


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


def mc_process_results(doc: dict, results: list[str]) -> dict:
    return score_multiple_choice(doc, results[0])


def iee_process_results(doc: dict, results: list[str]) -> dict:
    return score_unify_qa(doc, results[0], "corrected", explanation=True)


def iee_official_process_results(doc: dict, results: list[str]) -> dict:
    return score_unify_qa(doc, results[0], "official", explanation=True)


def letter_image_process_results(doc: dict, results: list[str]) -> dict:
    return score_unify_qa(doc, results[0], "corrected")


def letter_image_official_process_results(doc: dict, results: list[str]) -> dict:
    return score_unify_qa(doc, results[0], "official")


def vcot_process_results(doc: dict, results: list[str]) -> dict:
    return score_vcot(doc, results[0], "corrected")


def vcot_official_process_results(doc: dict, results: list[str]) -> dict:
    return score_vcot(doc, results[0], "official")


def doc_to_target(doc: dict) -> str:
    if "actions" in doc:
        return " ".join(doc["actions"])
    return str(doc.get("answer", doc.get("Text_Prompt", "")))


def generation_doc_to_visual(doc: dict) -> list:
    return to_pil_images(doc["image"]) if doc.get("image") is not None else []


def generation_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    return generation_prompt((lmms_eval_specific_kwargs or {})["subtask"], doc)


def fir_process_results(doc: dict, results: list[str]) -> dict:
    return score_generation("FIR", doc, results[0])


def tie_process_results(doc: dict, results: list[str]) -> dict:
    return score_generation("TIE", doc, results[0])


def tig_process_results(doc: dict, results: list[str]) -> dict:
    return score_generation("TIG", doc, results[0])


def civg_process_results(doc: dict, results: list[str]) -> dict:
    return score_generation("CIVG", doc, results[0])


def tvg_process_results(doc: dict, results: list[str]) -> dict:
    return score_generation("TVG", doc, results[0])


def vp_process_results(doc: dict, results: list[str]) -> dict:
    return score_generation("VP", doc, results[0])
