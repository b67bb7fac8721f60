"""Per-sample UniG2U scores (the tasks' ``process_results``): ``acc`` in [0, 1] (``None`` when the model
could not run the task), ``invalid_outputs`` (failure reason or "") and ``details``; none raises on model
output. Pure scores wrapped by ``lmms_eval_unify.scoring.scorer.scorer``; ``subtask`` (and the judged tasks'
``judge`` overrides) come from the task's ``metadata``."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from lmms_eval_unify.benchmarks.unig2u.prompts import babyvision_is_choice, vsp_kind
from lmms_eval_unify.benchmarks.unig2u.spec import METRICS, SUBTASKS, task_name
from lmms_eval_unify.judges import judge as ask_judge
from lmms_eval_unify.output.record import ParsedOutput
from lmms_eval_unify.puzzles.jigsaw import parse_jigsaw_choice
from lmms_eval_unify.puzzles.scoring import score_puzzle_sample
from lmms_eval_unify.scoring.answers import extract_choice, normalise_text
from lmms_eval_unify.scoring.scorer import Score, raw_scorer, scorer

LABELS = ("A", "B", "C", "D")
_ENCLOSED = re.compile(r"`+\s*\(?([A-Za-z])\)?\s*`+|\{\s*\(?([A-Za-z])\)?\s*\}")


def choice_from_text(text: str, labels: tuple[str, ...] = LABELS, options: list[str] | None = None) -> str | None:
    """The option letter an answer commits to: a letter enclosed in backticks or braces (MMSI's requested
    form) wins; otherwise the core's robust ``extract_choice``."""
    enclosed = [a or b for a, b in _ENCLOSED.findall(normalise_text(text))]
    enclosed = [m.upper() for m in enclosed if m.upper() in labels]
    return enclosed[-1] if enclosed else extract_choice(text, labels, options)


def mc_correct(doc: dict, text: str) -> tuple[float, dict]:
    options = doc.get("options")
    options = list(options) if options is not None and len(options) >= 2 else None
    labels = LABELS[: len(options)] if options else LABELS
    predicted = choice_from_text(text, labels, options)
    truth = str(doc["answer"]).strip().strip("()").upper()[:1]
    return float(predicted == truth), {"predicted": predicted, "truth": truth}


def _to_float(text: str) -> float | None:
    try:
        return float(text.rstrip("%")) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        return None


def relaxed_correct(prediction: str, target: str, tolerance: float = 0.05) -> bool:
    """ChartQA relaxed accuracy on the raw answer: numbers within 5 % relative error, else exact (case-free)."""
    prediction, target = prediction.strip(), str(target).strip()
    predicted, truth = _to_float(prediction), _to_float(target)
    if predicted is not None and truth:
        return abs(predicted - truth) / abs(truth) <= tolerance
    return prediction.lower() == target.lower()


def illusion_labels(image_name: str) -> dict[str, str]:
    """Ground truth from the file name, e.g. ``animal-1-Medieval_Village-Easy-1.5-90.png``."""
    parts = PurePath(str(image_name)).name.split("-")
    return {"shape": parts[0], "scene": parts[2]}


def label_recalled(label: str, text: str) -> bool:
    """IllusionBench recall: the label (also with ``_``/``-`` read as spaces) is a substring of the answer."""
    answer, label = text.lower(), label.lower()
    return label in answer or label.replace("_", " ").replace("-", " ") in answer


_DIRECTION = re.compile(r"\b(north|south|east|west)\s*:\s*(\d+)", re.IGNORECASE)
_TIME = re.compile(r"(Car|Person):\s*([0-9]*\.?[0-9]+)", re.IGNORECASE)


def net_displacement(text: str) -> tuple[int, int] | None:
    """(north − south, east − west) crossroads of a ``<Direction>: <n>`` path after the last "Output"."""
    tail = text[text.rfind("Output") + len("Output") :] if "Output" in text else text
    moves = _DIRECTION.findall(tail)
    if not moves:
        return None
    totals = {"north": 0, "south": 0, "east": 0, "west": 0}
    for direction, count in moves:
        totals[direction.lower()] += int(count)
    return totals["north"] - totals["south"], totals["east"] - totals["west"]


def collision_times(text: str) -> dict[str, float]:
    """The last ``Car: t`` and ``Person: t`` values (missing ones are absent)."""
    return {who.lower(): float(value) for who, value in _TIME.findall(text)}


def vsp_score(doc: dict, text: str) -> tuple[float, dict]:
    if vsp_kind(doc) == "gmap":
        predicted = net_displacement(text)
        truth = (int(doc["gt_north_south"]), int(doc["gt_east_west"]))
        return float(predicted == truth), {"kind": "gmap", "predicted": predicted, "truth": truth}
    times = collision_times(text)
    car = abs(times.get("car", -999.0) - float(doc["gt_car"])) <= 1.0
    person = abs(times.get("person", -999.0) - float(doc["gt_person"])) <= 1.0
    return (car + person) / 2.0, {"kind": "collision", "predicted": times, "car": car, "person": person}


def chartqa_score(doc: dict, text: str) -> tuple[float, dict]:
    return float(relaxed_correct(text, doc["answer"])), {"truth": doc["answer"], "type": doc.get("type")}


def illusion_score(question: str) -> Callable[[dict, str], tuple[float, dict]]:
    """Recall scorer of the ``scene`` or ``shape`` question of an IllusionBench image."""

    def score(doc: dict, text: str) -> tuple[float, dict]:
        label = illusion_labels(doc["image_name"])[question]
        return float(label_recalled(label, text)), {"truth": label}

    return score


ANSWER_CHECKS: dict[str, Callable[[dict, str], tuple[float, dict]]] = {
    "realunify": mc_correct,
    "mmsi": mc_correct,
    "visual_puzzles": mc_correct,
    "chartqa": chartqa_score,
    "vsp": vsp_score,
}
"""Family -> check of a text answer (IllusionBench's depends on the subtask's question, ``answer_check``)."""


def answer_check(subtask: str) -> Callable[[dict, str], tuple[float, dict]]:
    """The ``(doc, text) -> (acc, details)`` check of a programmatically scored subtask."""
    family = SUBTASKS[subtask].family
    return illusion_score(subtask.rsplit("_", 1)[1]) if family == "illusion" else ANSWER_CHECKS[family]


@scorer(*METRICS)
def score_answer(doc: dict, parsed: ParsedOutput, *, subtask: str) -> Score:
    """A text answer of a programmatically scored subtask (Direct or GtA)."""
    acc, details = answer_check(subtask)(doc, parsed.text)
    return Score({"acc": acc}, details=details)


# --- judged subtasks (GPT-4o in the paper; the judge layer here) ---------------------------------
MAX_JUDGED_CHARS = 50_000
"""The released Geometry3K/AuxSolidMath scorers send the judge only the last 50,000 characters."""
_BACKTICK = re.compile(r"`([^`]+)`")


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{…}`` (nested braces allowed), or ``None``."""
    start = text.rfind("\\boxed{")
    while start != -1:
        depth, i = 1, start + len("\\boxed{")
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            return text[start + len("\\boxed{") : i - 1].strip()
        start = text.rfind("\\boxed{", 0, start)
    return None


def extracted_answer(text: str, labels: tuple[str, ...] = (), options: list[str] | None = None) -> str:
    """What the PhyX/BabyVision judge compares with the truth: the last ``\\boxed{}``, else the last backtick
    span, else for a choice item the committed option letter (``extract_choice``), else the first 200
    characters (the released order; its choice step takes the first standalone letter anywhere)."""
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed
    spans = _BACKTICK.findall(text)
    if spans:
        return spans[-1].strip()
    letter = extract_choice(text, labels, options) if labels else None
    return letter or text.strip()[:200]


def tail(text: str, limit: int = MAX_JUDGED_CHARS) -> str:
    return text if len(text) <= limit else "...[truncated]...\n" + text[-limit:]


def babyvision_truth(doc: dict) -> str:
    """``chr(65 + choiceAns)`` for a choice item, else ``blankAns``."""
    return chr(65 + int(doc["choiceAns"])) if babyvision_is_choice(doc) else str(doc["blankAns"])


def judge_request(family: str, doc: dict, text: str) -> tuple[str, dict, str]:
    """(template id, variables, verdict field) of the judgement of ``text`` on ``doc``."""
    if family == "geometry3k":
        variables = {"problem": doc["problem"], "answer": doc["answer"], "response": tail(text)}
        return "unig2u.geometry3k", variables, "answer_correct"
    if family == "auxsolidmath":
        variables = {"problem": doc["question"], "auxiliary_lines": doc.get("auxiliary_line_description") or "",
                     "answer": doc["answer"], "response": tail(text)}  # fmt: skip
        return "unig2u.auxsolidmath", variables, "text_ok"
    if family == "phyx":
        truth = str(doc["answer"]).strip()
        letters: tuple[str, ...] = LABELS if len(truth) == 1 and truth.upper() in LABELS else ()
        return "unig2u.answer_match", {"question": doc["question"], "answer": truth,
                                       "response": extracted_answer(text, letters)}, "correct"  # fmt: skip
    if family == "babyvision":
        options = list(doc["options"]) if babyvision_is_choice(doc) else None
        letters = tuple(chr(65 + i) for i in range(len(options))) if options else ()
        response = extracted_answer(text, letters, options)
        return "unig2u.answer_match", {"question": doc["question"], "answer": babyvision_truth(doc),
                                       "response": response}, "correct"  # fmt: skip
    raise KeyError(f"{family!r} is not a judged family")


@scorer(*METRICS)
def score_judged(doc: dict, parsed: ParsedOutput, *, subtask: str, judge: dict | None = None) -> Score:
    """A judged subtask's answer: one judgement (cached by the judge layer) per answer; an empty answer is
    wrong without a judge call."""
    if not parsed.text.strip():
        return Score({"acc": 0.0}, details={"empty": True})
    family = SUBTASKS[subtask].family
    template, variables, verdict = judge_request(family, doc, parsed.text)
    result = ask_judge(template, variables=variables, config=judge, task=task_name(subtask))
    judged = variables.get("response") if family in ("phyx", "babyvision") else None
    return Score.judged(result, verdict, "acc", judged=judged, truth=variables["answer"])


@scorer(*METRICS)
def score_jigsaw(doc: dict, parsed: ParsedOutput) -> Score:
    """UniG2U's jigsaw score: the text accuracy of the Uni-MMMU jigsaw (``choice`` of the first
    ``<FINAL_ANSWER_JSON>`` block, as the official parser reads it, equals ``label``); the released UniG2U
    code scores the text only. GtA panels are kept in the record, not scored (Uni-MMMU scores them with
    DreamSim in its own jigsaw task)."""
    choice = parse_jigsaw_choice(parsed.text)
    acc = float(choice is not None and choice == int(doc["label"]))
    return Score({"acc": acc}, details={"choice": choice, "truth": int(doc["label"])})


@raw_scorer(*METRICS)
def score_move_puzzle(doc: dict, results: list[Any], *, subtask: str) -> dict:
    """UniG2U's maze/sliding score: ``acc`` = the text step (frame) accuracy of the shared puzzle scorer,
    whose own metrics are kept (it reads the output and handles unusable ones itself)."""
    metrics = score_puzzle_sample(subtask, doc, results[0])
    return {"acc": metrics["text_step_acc"], **metrics}
