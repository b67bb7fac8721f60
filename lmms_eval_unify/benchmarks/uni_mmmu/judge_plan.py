"""The judgements a judged Uni-MMMU task asks per sample (``lmms-eval-unify judge estimate``): an image and a text
judgement (``geometry.py``, ``science.py``, ``code.py``), each with its per-template judge config
(``LMMS_EVAL_UNIFY_UNI_MMMU_JUDGES``) and one image in each of its template's slots."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval_unify.benchmarks.uni_mmmu.judged import template_config
from lmms_eval_unify.judges.estimate import PlannedJudgement
from lmms_eval_unify.judges.templates import get_template

TEMPLATES = {
    "uni_mmmu_geometry": ("uni_mmmu.geometry.image", "uni_mmmu.geometry.text"),
    "uni_mmmu_science": ("uni_mmmu.science.image", "uni_mmmu.science.text"),
    "uni_mmmu_code": ("uni_mmmu.code.image", "uni_mmmu.code.text"),
}
"""The judge templates of each judged task, image judgement first."""


def planned_judgements(task: str, metadata: Mapping[str, Any], doc: Mapping[str, Any]) -> list[PlannedJudgement]:
    return [PlannedJudgement(t, len(get_template(t).slots), template_config(t)) for t in TEMPLATES[task]]
