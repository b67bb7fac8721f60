"""Synthetic MME-Unify samples at the paper's sizes: test and bench support (``lmms_eval_unify.testing``),
never used by a run."""

from __future__ import annotations

import numpy as np

from lmms_eval_unify.benchmarks.mme_unify import paper as mu
from lmms_eval_unify.testing.synthetic import bits, unsupported_rows

SIZES = {"SIPU": 1200, "MITIU": 400, "VPU": 364, "CIVG": 200, "FIR": 200, "TIE": 200, "TIG": 200, "TVG": 200,
         "VP": 194, "IEE": 200, "CSQ": 101, "AL": 52, "SD": 104, "VCoT": 90}  # fmt: skip


def subtask_rows(subtask: str, n: int, skill: float, rng: np.random.Generator) -> list[dict]:
    """Per-sample records of one MME-Unify subtask."""
    if subtask in mu.UNDERSTANDING:
        return [{"acc": a} for a in bits(rng, skill, n)]
    if subtask == "FIR":
        return [{"lpips": v} for v in rng.uniform(0.1, 1.0 - 0.8 * skill, n)]
    if subtask in mu.CLIP_SCORED:
        return [
            {"clip_i": i, "clip_t": t}
            for i, t in zip(rng.uniform(0.4, 0.5 + 0.4 * skill, n), rng.uniform(15, 40, n), strict=True)
        ]
    if subtask in mu.VIDEO:
        rows = [
            {"fvd": a, "fid": b}
            for a, b in zip(rng.uniform(1, 1000 * (1 - skill / 2), n), rng.uniform(1, 600, n), strict=True)
        ]
        if subtask != "VP":
            for row, c in zip(rows, rng.uniform(0.2, 0.35, n), strict=True):
                row["clipsim"] = c
        return rows
    if subtask in mu.UNIFY_QA:
        return [
            {"text_correct": t, "image_correct": i}
            for t, i in zip(bits(rng, skill, n), bits(rng, skill, n), strict=True)
        ]
    steps = rng.integers(2, 8, n)
    return [
        {
            "n_steps": int(k),
            "image_steps": int(k) - 1,  # "Finish" draws nothing
            **{f"{a}_steps_correct": int(rng.binomial(k, skill)) for a in ("action", "coordinate")},
            "image_steps_correct": int(rng.binomial(k - 1, skill)),
        }
        for k in steps
    ]


def rows(skill: float, rng: np.random.Generator, generates_images: bool = True) -> dict[str, list[dict]]:
    """{task: rows} of every subtask; without image generation, the image-output subtasks are unsupported."""
    image_out = {*mu.GENERATION, *mu.UNIFY}
    return {
        mu.task_name(s): subtask_rows(s, n, skill, rng)
        if generates_images or s not in image_out
        else unsupported_rows(n)
        for s, n in SIZES.items()
    }
