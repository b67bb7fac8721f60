"""Hooks of the MME-Unify tasks: thin glue to lmms_eval_unify.benchmarks.mme_unify."""

from collections.abc import Callable

from lmms_eval_unify.benchmarks.mme_unify.generation import score_generation
from lmms_eval_unify.benchmarks.mme_unify.prompts import (
    generation_prompt,
    understanding_prompt,
    unify_prompt,
    vcot_prompt,
)
from lmms_eval_unify.benchmarks.mme_unify.scoring import score_multiple_choice, score_unify_qa, score_vcot
from lmms_eval_unify.visuals import to_pil_images


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


def _hook(score: Callable[..., dict], subtask: str, variant: str) -> Callable[[dict, list[str]], dict]:
    """A ``process_results`` hook scoring one subtask in one variant."""

    def process_results(doc: dict, results: list[str]) -> dict:
        return score(doc=doc, raw_output=results[0], subtask=subtask, variant=variant)

    return process_results


iee_process_results = _hook(score_unify_qa, "IEE", "corrected")
iee_official_process_results = _hook(score_unify_qa, "IEE", "official")
csq_process_results = _hook(score_unify_qa, "CSQ", "corrected")
csq_official_process_results = _hook(score_unify_qa, "CSQ", "official")
al_process_results = _hook(score_unify_qa, "AL", "corrected")
al_official_process_results = _hook(score_unify_qa, "AL", "official")
sd_process_results = _hook(score_unify_qa, "SD", "corrected")
sd_official_process_results = _hook(score_unify_qa, "SD", "official")
fir_process_results = _hook(score_generation, "FIR", "corrected")
fir_official_process_results = _hook(score_generation, "FIR", "official")
tie_process_results = _hook(score_generation, "TIE", "corrected")
tie_official_process_results = _hook(score_generation, "TIE", "official")
tig_process_results = _hook(score_generation, "TIG", "corrected")
tig_official_process_results = _hook(score_generation, "TIG", "official")
civg_process_results = _hook(score_generation, "CIVG", "corrected")
civg_official_process_results = _hook(score_generation, "CIVG", "official")
tvg_process_results = _hook(score_generation, "TVG", "corrected")
tvg_official_process_results = _hook(score_generation, "TVG", "official")
vp_process_results = _hook(score_generation, "VP", "corrected")
vp_official_process_results = _hook(score_generation, "VP", "official")
