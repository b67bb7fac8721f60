"""Per-sample MME-Unify scores (the tasks' ``process_results``): understanding multiple choice, unify
text+image QA, VCoT steps.

Each is a pure score wrapped by ``lmms_eval_unify.scoring.scorer.scorer`` (which reads the output and handles
unsupported and failed outputs); the keys are the scoring contract of ``spec.METRICS`` (docs/scoring.md).
``subtask`` and ``variant`` come from the task's ``metadata``; ``variant`` is ``corrected`` (default) or
``official`` (the released scripts, bugs included; see docs/fidelity/mme_unify.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from PIL import Image

from lmms_eval_unify import metrics
from lmms_eval_unify.benchmarks.mme_unify import vcot
from lmms_eval_unify.benchmarks.mme_unify.spec import METRICS, SCORING_VARIANTS, VCOT_METRICS
from lmms_eval_unify.env_vars import read
from lmms_eval_unify.generation.visuals import to_pil_images
from lmms_eval_unify.output.media_reader import load_media
from lmms_eval_unify.output.record import OutputFailure, ParsedOutput, Step
from lmms_eval_unify.scoring.answers import extract_choice, normalise_text, split_option
from lmms_eval_unify.scoring.scorer import Score, scorer

METRICS_ENV = "LMMS_EVAL_UNIFY_MME_UNIFY_METRICS"
"""JSON mapping family -> MetricConfig fields for the MME-Unify scorers, e.g.
``{"clip_choice": {"backbone": "tiny", "weights": "random"}}`` (tests); unset = the papers' checkpoints."""


def metric_config(family: str) -> dict | None:
    """The configured metric fields of ``family`` (``clip_choice``, ``clip_score``, ...) or None (defaults)."""
    return (read(METRICS_ENV) or {}).get(family)


def check_variant(variant: str) -> None:
    """Raise ValueError unless ``variant`` is ``corrected`` or ``official``."""
    if variant not in SCORING_VARIANTS:
        raise ValueError(f"MME-Unify scoring variant must be one of {SCORING_VARIANTS}, got {variant!r}")


def option_labels(choices: Sequence[str]) -> list[str]:
    """The labels embedded in the choice strings, in list order (unlabelled options get A, B, ... by position)."""
    return [split_option(c)[0] or chr(ord("A") + i) for i, c in enumerate(choices)]


def choose_option(text: str, choices: Sequence[str]) -> str | None:
    """The option label a free-text answer commits to (letter, "Answer: X" or a unique option text)."""
    return extract_choice(text, option_labels(choices), [split_option(c)[1] for c in choices])


def _invalid(values: dict, reason: str, **details: Any) -> Score:
    return Score(values, reason, {"failure": reason, **details})


@scorer(*METRICS["SIPU"])
def score_multiple_choice(doc: dict, parsed: ParsedOutput) -> Score:
    """SIPU/MITIU/VPU: ``acc`` 1 when the committed option equals ``answer`` (denominator = all items)."""
    chosen = choose_option(parsed.text, list(doc["choice"]))
    details = {
        "chosen": chosen,
        "answer": doc["answer"],
        "category": doc.get("category"),
        "source": doc.get("source"),
    }
    if chosen is None:
        return _invalid({"acc": 0.0}, "no_choice", **details)
    return Score({"acc": float(chosen == str(doc["answer"]).strip())}, details=details)


def accuracy_by(samples: Sequence[dict], key: str) -> dict[str, float]:
    """Understanding accuracy (0-100) per ``details[key]`` (``category`` or ``source``) from the logged
    samples of one task; a missing ``acc`` counts as wrong (denominator = all items)."""
    groups: dict[str, list[float]] = {}
    for sample in samples:
        groups.setdefault(str(sample["details"].get(key)), []).append(float(sample.get("acc") or 0.0))
    return {group: 100.0 * sum(values) / len(values) for group, values in sorted(groups.items())}


# --- unify QA (IEE, CSQ, AL, SD) -----------------------------------------------------------------------------


ImageFailure = Literal["no_image", "missing_path", "corrupt_file"]

OFFICIAL_FAILED_IMAGE_CORRECT: dict[str, dict[ImageFailure, bool]] = {
    # IEE: empty path skipped; any load error -> compute_image_similarity returns None -> "failed".
    "IEE": {"no_image": False, "missing_path": False, "corrupt_file": False},
    # CSQ/SD: `os.path.exists` guards the output; an unreadable file gives similarity 0.0 to every candidate
    # and max() over the dict keeps the first key, the reference.
    "CSQ": {"no_image": False, "missing_path": False, "corrupt_file": True},
    "SD": {"no_image": False, "missing_path": False, "corrupt_file": True},
    # AL: empty path skipped; compute_clip_similarity returns 0.0 for a missing or unreadable file, all ties.
    "AL": {"no_image": False, "missing_path": True, "corrupt_file": True},
}
"""Released scripts: is a failed output image counted correct? (docs/fidelity/mme_unify.md, per subtask)."""


def image_failure_kind(failure: OutputFailure) -> ImageFailure:
    """How the released scripts see a failed output image: no path, a path that does not exist, or a file
    that cannot be decoded. Paths we refuse to read (``unsafe_path``) count as missing."""
    if failure.reason in ("missing_image", "unsafe_path"):
        return "missing_path"
    if failure.reason == "corrupt_image":
        return "corrupt_file"
    return "no_image"


def image_choice_correct(
    image: Image.Image | OutputFailure, candidates: list[Image.Image], subtask: str, variant: str
) -> bool:
    """CLIP-choice (ViT-B/32) of the output image among the candidates, the reference first.

    A failed image is wrong in ``corrected``; ``official`` follows the released script of ``subtask``
    (``OFFICIAL_FAILED_IMAGE_CORRECT``).
    """
    if isinstance(image, OutputFailure):
        return variant == "official" and OFFICIAL_FAILED_IMAGE_CORRECT[subtask][image_failure_kind(image)]
    return metrics.clip_choice(image, candidates, metric_config("clip_choice")).index == 0


def iee_text_correct(explanation: str, choices: Sequence[str], answer: str, variant: str) -> tuple[bool, str]:
    """IEE text half: CLIP text-text choice (ViT-B/32) between the explanation and the options.

    ``official`` compares with the whole choice strings (label prefix included) and turns the argmax position
    into a letter (``chr(65 + i)``) although the labels are shuffled in the list; ``corrected`` compares with
    the option texts and takes the label of the chosen option.
    """
    official = variant == "official"
    options = list(choices) if official else [split_option(c)[1] for c in choices]
    index = metrics.clip_text_choice(explanation, options, metric_config("clip_choice")).index
    predicted = chr(ord("A") + index) if official else option_labels(choices)[index]
    return predicted == answer, predicted


def iee_explanation(text: str) -> str:
    """The explanation of an IEE answer, as its text half compares it: normalised, without a leading
    ``Explanation:`` label."""
    return re.sub(r"^\s*explanation\s*:\s*", "", normalise_text(text), flags=re.IGNORECASE)


@scorer(*METRICS["IEE"])
def score_unify_qa(doc: dict, parsed: ParsedOutput, *, subtask: str, variant: str = "corrected") -> Score:
    """``text_correct`` and ``image_correct`` of one IEE/CSQ/AL/SD item (answer_and_image protocol).

    The text half is an option letter (CSQ, AL, SD) or, for IEE, a free explanation.
    """
    check_variant(variant)
    choices, answer = list(doc["choice"]), str(doc["answer"]).strip()
    if subtask == "IEE":
        text = iee_explanation(parsed.text)
        text_ok, predicted = iee_text_correct(text, choices, answer, variant) if text else (False, None)
    else:
        predicted = choose_option(parsed.text, choices)
        text_ok = predicted == answer
    loaded = parsed.load_images(expected=1)
    image = loaded if isinstance(loaded, OutputFailure) else loaded[0]
    image_ok = image_choice_correct(image, to_pil_images(list(doc["candidates"])), subtask, variant)
    values = {"text_correct": float(text_ok), "image_correct": float(image_ok)}
    details = {"predicted": predicted, "answer": answer, "variant": variant}
    if isinstance(image, OutputFailure):
        return _invalid(values, image.reason, **details)
    return Score(values, details=details)


# --- VCoT -----------------------------------------------------------------------------------------------------


def parse_step(text: str) -> tuple[str | None, list[int] | None]:
    """``Action: <Left|Right|Up|Down|Finish>`` and ``Location: [x, y]`` of one step's text (None when absent)."""
    normal = normalise_text(text)
    action = re.search(r"action\s*:?\s*\**\s*(left|right|up|down|finish)\b", normal, re.IGNORECASE)
    if action is None:
        action = re.search(r"\b(finish)\b", normal, re.IGNORECASE)
    location = re.search(r"location\s*:?\s*\**\s*[\[\(]\s*(-?\d+)\s*,\s*(-?\d+)\s*[\]\)]", normal, re.IGNORECASE)
    return (
        action.group(1).capitalize() if action else None,
        [int(location.group(1)), int(location.group(2))] if location else None,
    )


def raw_coordinates(doc: dict) -> list[list[int] | None]:
    """The dataset's coordinates (1-indexed [row, col] before each action); malformed ones (e.g. ``[1.3]``) -> None."""
    out: list[list[int] | None] = []
    for item in doc["coordinates"]:
        value = json.loads(item) if isinstance(item, str) else item
        ok = isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value)
        out.append(list(value) if ok else None)
    return out


def prompt_coordinates(doc: dict) -> list[list[int] | None]:
    """Corrected ground truth: 0-indexed [x=col, y=row] of the position AFTER each action (what the prompt asks).

    Derived from the start (first coordinate) and the actions, so malformed dataset coordinates do not matter.
    """
    start = raw_coordinates(doc)[0]
    if start is None:
        return [None] * len(doc["actions"])
    row, col = start[0] - 1, start[1] - 1
    out: list[list[int] | None] = []
    for action in doc["actions"]:
        d_row, d_col = vcot.MOVES.get(action, (0, 0))  # "Finish" stays
        row, col = row + d_row, col + d_col
        out.append([col, row])
    return out


def board_states(doc: dict) -> list[Image.Image]:
    """The maze's board states as far as the data hold them: the initial map, then the map after each move.

    Synthetic data store the initial map apart from ``Step_0..`` (the maps after each move). The prepared
    release shows ``Step_0`` as the initial map (it has no other), so there ``Step_k`` is the map before move k
    and the map after the last move is missing.
    """
    initial = to_pil_images(doc["initial_image"])[0]
    steps = to_pil_images(list(doc["step_images"]))
    if steps and steps[0].size == initial.size and steps[0].tobytes() == initial.tobytes():
        steps = steps[1:]
    return [initial, *steps]


def _step_image(root: str, step: Step) -> Image.Image | OutputFailure:
    if not step.image:
        return OutputFailure("no_image", "the step has no image")
    loaded = load_media(root, [step.image])
    return loaded if isinstance(loaded, OutputFailure) else loaded[0]


def official_step_image_correct(image: Image.Image | OutputFailure, step_images: list[Image.Image], i: int) -> bool:
    """Evaluate_VSP.py: argmax of CLIP similarity over all ``Step_k`` must be ``i``. An empty path is never
    attempted; a path that fails to load has similarity 0.0 to every ``Step_k``, so argmax 0 (step 0 right)."""
    if isinstance(image, OutputFailure):
        return image.reason != "no_image" and i == 0
    return metrics.clip_choice(image, step_images, metric_config("clip_choice")).index == i


def vcot_references(doc: dict, variant: str) -> tuple[list[Image.Image], int]:
    """The reference images step images are chosen among, and how many steps are image-scored."""
    n = len(doc["actions"])
    if variant == "official":
        return to_pil_images(list(doc["step_images"])), n
    references = board_states(doc)
    return references, min(n - 1, len(references) - 1)


def vcot_failed(doc: dict, variant: str = "corrected", **params: Any) -> dict:
    """The step counts of an unusable VCoT output, nothing correct."""
    image_steps = vcot_references(doc, variant)[1]
    return {"n_steps": len(doc["actions"]), "image_steps": image_steps, **dict.fromkeys(VCOT_METRICS[2:], 0)}


@scorer(*VCOT_METRICS, failed=vcot_failed)
def score_vcot(doc: dict, parsed: ParsedOutput, *, variant: str = "corrected") -> Score:
    """Step counts of one maze: ``n_steps``, ``image_steps`` and per-aspect ``*_steps_correct``.

    Model step i is compared with reference step i (visual_cot_steps protocol); extra model steps are ignored
    and missing ones are wrong (early stop). Images, ``official``: CLIP-choice among the ``Step_k`` must pick
    k = i, every step slot counts (``image_steps`` = ``n_steps``; "Finish" has no ``Step_k``, so acc+ is
    always 0, as in the paper). ``corrected``: step i's image must be the map after move i, chosen among all
    board states including the initial map (copying the input earns nothing); only moves whose after-move map
    is in the data count (``image_steps``), "Finish" draws nothing and is not image-scored.
    """
    check_variant(variant)
    actions = list(doc["actions"])
    n = len(actions)
    official = variant == "official"
    references, image_steps = vcot_references(doc, variant)
    truth_coords = raw_coordinates(doc) if official else prompt_coordinates(doc)
    root, steps = parsed.record.root, parsed.record.steps
    counts = {"action": 0, "coordinate": 0, "image": 0}
    failures: list[str] = []
    for i, step in enumerate(steps[:n]):
        action, location = parse_step(step.text)
        counts["action"] += action == actions[i]
        counts["coordinate"] += location is not None and location == truth_coords[i]
        if i >= image_steps or (not step.image and action == "Finish"):  # nothing to draw / stopped early
            continue
        image = _step_image(root, step)
        if isinstance(image, OutputFailure):
            failures.append(f"step {i + 1}: {image.reason}")
        if official:
            counts["image"] += official_step_image_correct(image, references, i)
        elif not isinstance(image, OutputFailure):
            counts["image"] += metrics.clip_choice(image, references, metric_config("clip_choice")).index == i + 1
    values = {
        "n_steps": n,
        "image_steps": image_steps,
        **{f"{k}_steps_correct": v for k, v in counts.items()},
    }
    details = {"variant": variant, "model_steps": len(steps), "failures": failures}
    return Score(values, failures[0].split(": ", 1)[1] if failures else "", details)
