"""Model-as-judge layer shared by every task: one OpenAI-compatible client, a persistent cache, strict
parsing and the versioned judge prompts each benchmark ships as ``judge_prompts.yaml`` (see docs/judges.md)."""

from lmms_eval_unify.judges.config import JudgeConfig, JudgeNotConfiguredError
from lmms_eval_unify.judges.service import (
    FAILED,
    INVALID,
    OK,
    JudgeRequest,
    JudgeResult,
    judge,
    judge_many,
    judge_stats,
    judge_summary,
    reset_judge_state,
)
from lmms_eval_unify.judges.templates import Template, get_template, load_templates

__all__ = [
    "FAILED",
    "INVALID",
    "OK",
    "JudgeConfig",
    "JudgeNotConfiguredError",
    "JudgeRequest",
    "JudgeResult",
    "Template",
    "get_template",
    "judge",
    "judge_many",
    "judge_stats",
    "judge_summary",
    "load_templates",
    "reset_judge_state",
]
