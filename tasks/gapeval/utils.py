"""Hooks of the GapEval tasks: thin glue to lmms_eval_unify.benchmarks.gapeval."""

from lmms_eval_unify.benchmarks.gapeval.scoring import input_images, score_gen, score_und


def und_doc_to_visual(doc: dict) -> list:
    return input_images(doc)


def gen_doc_to_visual(doc: dict) -> list:
    return input_images(doc) if doc["gen_uses_image"] else []


def und_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    return doc["und_prompt"]


def gen_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    return doc["gen_prompt"]


def und_process_results(doc: dict, results: list[str], judge_config: dict | None = None) -> dict:
    return score_und(doc, results[0], judge_config)


def gen_process_results(doc: dict, results: list[str], judge_config: dict | None = None) -> dict:
    return score_gen(doc, results[0], judge_config)
