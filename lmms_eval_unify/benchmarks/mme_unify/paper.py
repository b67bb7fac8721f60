"""MME-Unify (MME-U) scores, as defined in the paper's Appendix H and computed by its official scripts.

All scores are on a 0-100 scale. Table 2 layout: understanding (SIPU, MITIU, VPU), generation
(CIVG, FIR, TIE, TIG, TVG, VP), unify (IEE, CSQ, AL, SD, VCoT), and the MME-U score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from lmms_eval_unify.benchmarks.mme_unify.spec import (  # noqa: F401 - re-exported for the boards
    CLIP_SCORED,
    GENERATION,
    HAS_OFFICIAL,
    UNDERSTANDING,
    UNIFY,
    UNIFY_QA,
    VIDEO,
    task_name,
)
from lmms_eval_unify.scoring.aggregate import FloatOrArray, Score, Value, mean_missing_as_zero
from lmms_eval_unify.scoring.samples import Features, TaskMeans, field

# Table 2 column order.
TABLE2_COLUMNS = (
    *UNDERSTANDING, "Und. Avg", *GENERATION, "Gen. Avg", *UNIFY, "Unify Avg", "MME-U"
)  # fmt: skip


# --- pure scoring functions (paper scale, 0-100) -------------------------------------------------


def normalised_fvd_fid(raw: FloatOrArray) -> FloatOrArray:
    """FVD/FID on the paper's 0-100 scale: 100 * (1 - (s - 1) / 999); not clipped, like the official code,
    so a distance below 1 scores above 100 (at most 100.1 at distance 0)."""
    return 100.0 * (1.0 - (raw - 1.0) / 999.0)


def released_normalised_fvd_fid(raw: np.ndarray) -> np.ndarray:
    """The released script's set rule on top of ``normalised_fvd_fid``: when every scored sample of the subtask
    has the same distance, each scores 100 (NaN = not scored, kept)."""
    scored = raw[np.isfinite(raw)]
    if scored.size and scored.min() == scored.max():
        return np.where(np.isfinite(raw), 100.0, np.nan)
    return normalised_fvd_fid(raw)


def video_score(fvd_norm: Value, fid_norm: Value, clipsim: Value | None = None) -> Value:
    """CIVG/TVG = (FVD_norm + FID_norm + CLIPSIM) / 3; VP (no CLIPSIM) = (FVD_norm + FID_norm) / 2."""
    parts = [fvd_norm, fid_norm] if clipsim is None else [fvd_norm, fid_norm, clipsim]
    return sum(parts) / len(parts)


def fir_score(lpips: FloatOrArray) -> FloatOrArray:
    """FIR = (1 - LPIPS) x 100."""
    return 100.0 * (1.0 - lpips)


def clip_edit_score(clip_i: Value, clip_t: Value) -> Value:
    """TIE/TIG = (CLIP-I + CLIP-T) / 2, CLIP-I in percent, CLIP-T as CLIP's logit (~15-40)."""
    return (clip_i + clip_t) / 2.0


def unify_acc(text_acc: Value, image_acc: Value) -> Value:
    """IEE/CSQ/AL/SD accuracy = (text accuracy + image accuracy) / 2."""
    return (text_acc + image_acc) / 2.0


def vcot_acc(action_acc: Value, coordinate_acc: Value, image_acc: Value) -> Value:
    """VCoT accuracy = mean of the step-pooled action, coordinate and image accuracies."""
    return (action_acc + coordinate_acc + image_acc) / 3.0


def understanding_score(subtasks: Sequence[Score]) -> Score:
    """Mean of SIPU, MITIU, VPU (missing counted as 0)."""
    return mean_missing_as_zero(subtasks)


def generation_score(subtasks: Sequence[Score]) -> Score:
    """Mean of the six generation subtask scores, unsupported ones counted as 0."""
    return mean_missing_as_zero(subtasks)


def unify_score(subtask_accs: Sequence[Score]) -> Score:
    """Mean acc over the five unify subtasks, unsupported ones counted as 0."""
    return mean_missing_as_zero(subtask_accs)


def mme_u_score(understanding: Score, generation: Score, unify: Score) -> Score:
    """MME-U = mean of the understanding, generation and unify scores (missing counted as 0)."""
    return mean_missing_as_zero([understanding, generation, unify])


# --- per-sample records -> features -> Table 2/3 rows ---------------------------------------------


def task_features(subtask: str, rows: Sequence[Mapping], variant: str = "corrected") -> Features:
    """Per-sample features of one subtask in one scoring variant; see docs/scoring.md for the record fields.

    ``official`` applies the released scripts' set-level rules: FVD/FID all equal -> 100 each; VCoT accuracies
    over (longest maze length x number of mazes) step slots.
    """
    if subtask in UNDERSTANDING:
        return {"acc": 100.0 * field(rows, "acc", "zero")}
    if subtask == "FIR":
        return {"fir": fir_score(field(rows, "lpips", "skip"))}
    if subtask in CLIP_SCORED:
        return {"clip_i": 100.0 * field(rows, "clip_i", "skip"), "clip_t": field(rows, "clip_t", "skip")}
    if subtask in VIDEO:
        normalise = released_normalised_fvd_fid if variant == "official" else normalised_fvd_fid
        features = {
            "fvd": normalise(field(rows, "fvd", "skip")),
            "fid": normalise(field(rows, "fid", "skip")),
        }
        if subtask != "VP":
            features["clipsim"] = 100.0 * field(rows, "clipsim", "skip")
        return features
    if subtask in UNIFY_QA:
        text, image = field(rows, "text_correct", "zero"), field(rows, "image_correct", "zero")
        return {"text": 100.0 * text, "image": 100.0 * image, "both": 100.0 * text * image}
    if subtask == "VCoT":
        return vcot_features(rows, variant)
    raise KeyError(f"unknown MME-Unify subtask {subtask!r}")


def vcot_features(rows: Sequence[Mapping], variant: str) -> Features:
    """Correct-step counts and their denominators per maze.

    ``corrected``: Σ correct / Σ steps (Appendix H.3.2), images over the image-scored steps. ``official``
    (Evaluate_VSP.py): every maze gets as many step slots as the longest maze, so each accuracy is
    Σ correct / (max n_steps x number of mazes). acc+ needs every step of the maze right in all three.
    """
    steps = field(rows, "n_steps", "zero")
    counts = {k: field(rows, f"{k}_steps_correct", "zero") for k in ("action", "coordinate", "image")}
    image_steps = field(rows, "image_steps", "zero")
    perfect = ((counts["action"] >= steps) & (counts["coordinate"] >= steps) & (counts["image"] >= image_steps)) & (
        steps > 0
    )
    if variant == "official":
        steps = np.full_like(steps, steps.max() if steps.size else 0.0)
        image_steps = steps
    return {**counts, "steps": steps, "image_steps": image_steps, "perfect": 100.0 * perfect}


def subtask_scores(means: TaskMeans) -> dict[str, Score]:
    """Table 3 detail (text/image acc, acc, acc+) and Table 2 subtask scores from feature means."""
    out: dict[str, Score] = {}
    for subtask in (*UNDERSTANDING, *GENERATION, *UNIFY):
        m = means.get(task_name(subtask))
        if m is None:
            out[subtask] = None
        elif subtask in UNDERSTANDING:
            out[subtask] = m["acc"]
        elif subtask == "FIR":
            out[subtask] = m["fir"]
        elif subtask in CLIP_SCORED:
            out[subtask] = clip_edit_score(m["clip_i"], m["clip_t"])
        elif subtask in VIDEO:
            out[subtask] = video_score(m["fvd"], m["fid"], m.get("clipsim"))
        elif subtask in UNIFY_QA:
            out[f"{subtask} Text"], out[f"{subtask} Image"] = m["text"], m["image"]
            out[subtask] = unify_acc(m["text"], m["image"])
            out[f"{subtask} Acc+"] = m["both"]
        else:
            accs = [100.0 * m["action"] / m["steps"], 100.0 * m["coordinate"] / m["steps"]]
            accs.append(100.0 * m["image"] / m["image_steps"])
            out["VCoT Action"], out["VCoT Coordinate"], out["VCoT Image"] = accs
            out[subtask] = vcot_acc(*accs)
            out["VCoT Acc+"] = m["perfect"]
    return out


def table2_row(means: TaskMeans) -> dict[str, Score]:
    """One model's MME-U Table 2 row (plus the Table 3 acc+ columns) from its feature means."""
    row = subtask_scores(means)
    row["Und. Avg"] = understanding_score([row[s] for s in UNDERSTANDING])
    row["Gen. Avg"] = generation_score([row[s] for s in GENERATION])
    row["Unify Avg"] = unify_score([row[s] for s in UNIFY])
    row["Unify Acc+"] = unify_score([row.get(f"{s} Acc+") for s in UNIFY])
    row["MME-U"] = mme_u_score(row["Und. Avg"], row["Gen. Avg"], row["Unify Avg"])
    return row
