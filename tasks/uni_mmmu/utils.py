"""Hooks of the Uni-MMMU tasks: thin glue to lmms_eval_unify (puzzles, output contract)."""

from lmms_eval_unify.benchmarks.uni_mmmu.jigsaw import score_jigsaw
from lmms_eval_unify.model import to_pil_images
from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.scoring import score_move_sequence


def maze_doc_to_visual(doc: dict) -> list:
    return to_pil_images(doc["initial_image"])


def sliding_doc_to_visual(doc: dict) -> list:
    goal = [doc["final_image"]] if doc.get("final_image") else []
    return to_pil_images([doc["initial_image"], *goal])


def puzzle_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    note = kwargs.get("goal_note") if doc.get("final_image") else None
    return kwargs["prompt"] + (f"\n\n{note}" if note else "")


def maze_process_results(doc: dict, results: list[str]) -> dict:
    return score_move_sequence(DOMAINS["maze"], doc, results[0], to_pil_images(doc["initial_image"])[0])


def sliding_process_results(doc: dict, results: list[str]) -> dict:
    return score_move_sequence(DOMAINS["sliding"], doc, results[0], to_pil_images(doc["initial_image"])[0])


def jigsaw_doc_to_visual(doc: dict) -> list:
    return to_pil_images([doc["ref_image"], doc["cand0_image"], doc["cand1_image"]])


def jigsaw_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    return (lmms_eval_specific_kwargs or {})["prompt"]


def jigsaw_process_results(doc: dict, results: list[str]) -> dict:
    return score_jigsaw(doc, results[0])
