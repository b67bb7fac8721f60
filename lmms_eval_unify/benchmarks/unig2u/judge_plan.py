"""The judgements a judged UniG2U task asks per sample (``lmms-eval-unify judge estimate``): one, with the
template ``scoring.judge_request`` picks for the subtask's family (text only) and the task's ``metadata.judge``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval_unify.benchmarks.unig2u.scoring import judge_request
from lmms_eval_unify.benchmarks.unig2u.spec import SUBTASKS
from lmms_eval_unify.judges.estimate import PlannedJudgement

STAND_IN_ANSWER = "The answer is A."
"""A model answer for ``judge_request`` (the template it picks does not depend on the answer)."""


def planned_judgements(task: str, metadata: Mapping[str, Any], doc: Mapping[str, Any]) -> list[PlannedJudgement]:
    template, _, _ = judge_request(SUBTASKS[metadata["subtask"]].family, dict(doc), STAND_IN_ANSWER)
    return [PlannedJudgement(template, 0, metadata.get("judge"))]
