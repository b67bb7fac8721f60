"""Per-sample UniG2U scorers. Each returns ``acc`` in [0, 1] (``None`` when the model could not run the
task), ``invalid_outputs`` (failure reason or "") and ``details``; none of them raises on model output."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from lmms_eval_unify.answers import extract_choice, normalise_text
from lmms_eval_unify.benchmarks.unig2u.prompts import vsp_kind
from lmms_eval_unify.record import parse_output

LABELS = ("A", "B", "C", "D")
_ENCLOSED = re.compile(r"`+\s*\(?([A-Za-z])\)?\s*`+|\{\s*\(?([A-Za-z])\)?\s*\}")


def choice_from_text(
    text: str, labels: tuple[str, ...] = LABELS, options: list[str] | None = None
) -> str | None:
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


SCORERS: dict[str, Callable[[dict, str], tuple[float, dict]]] = {
    "mc": mc_correct,
    "chartqa": chartqa_score,
    "vsp": vsp_score,
    "illusion_scene": illusion_score("scene"),
    "illusion_shape": illusion_score("shape"),
}


def score_answer(scorer: str, doc: dict, raw_output: Any) -> dict:
    """``process_results`` of a text-answer subtask (Direct or GtA); ``scorer`` is a key of ``SCORERS``."""
    parsed = parse_output(raw_output)
    if parsed.unsupported:
        return {"acc": None, "invalid_outputs": "", "details": {"unsupported": parsed.record.unsupported}}
    if parsed.failure:
        return {
            "acc": 0.0,
            "invalid_outputs": parsed.failure.reason,
            "details": {"failure": parsed.failure.detail},
        }
    acc, details = SCORERS[scorer](doc, parsed.text)
    if parsed.record.images:
        details["generated_images"] = [str(p) for p in parsed.record.images]
    return {"acc": acc, "invalid_outputs": "", "details": details}


def move_puzzle_acc(metrics: dict) -> dict:
    """UniG2U's maze/sliding score: the text step (frame) accuracy of the Uni-MMMU scorer's metrics."""
    return {"acc": metrics["text_step_acc"], **metrics}
