"""The cost model of ``lmms-eval-unify judge estimate``: the judge calls and tokens a run will make, before any
request is sent.

The command (``commands/judge.py``) builds the tasks the way lmms-eval builds them (their data read the same way:
``LMMS_EVAL_UNIFY_DATA_DIR`` or the Hub dataset; groups expanded), without their judge check, and their requests
are built with the run's ``--limit``, so the samples counted are the ones the run scores (a task's ``repeats`` rows
included). Each sample
is planned by its benchmark's ``judge_plan.planned_judgements(task, metadata, doc)``: the judgements the task's
scorer asks for it. A judgement makes one call, two for a two-turn template (``two_turn`` / ``turns`` resolved as
the judge layer resolves them).

The call counts are exact under three assumptions, which the report states:

- an empty judge cache (a cached judgement makes no call, so a resumed or repeated run makes fewer);
- every answer is non-empty (an empty answer is scored 0 without a call);
- every image judgement gets one generated image (a missing image is scored 0 without a call; Uni-MMMU's code
  judge makes one call per generated image).

Tokens are estimates, not counts (:func:`judgement_cost`): text is characters / :data:`CHARS_PER_TOKEN` of the
template's own text and follow-up, plus :data:`VARIABLE_TOKENS` per declared variable (questions, references and
the model's answers are not read), :data:`IMAGE_TOKENS` per image and :data:`REPLY_TOKENS` per reply. A reasoning
judge's thinking is not in them; the ``max_tokens`` bound of the replies is reported beside.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lmms_eval_unify.benchmarks import part
from lmms_eval_unify.judges.config import JudgeConfig
from lmms_eval_unify.judges.service import decoding, followup_turn
from lmms_eval_unify.judges.templates import Template, get_template

CHARS_PER_TOKEN = 4
"""Characters of English text per token (the usual rule of thumb of OpenAI's and Qwen's tokenizers)."""
VARIABLE_TOKENS = 250
"""Assumed tokens of each variable a template declares (a question, a reference, the model's answer)."""
IMAGE_TOKENS = 1000
"""Assumed tokens of one image: a 1024x1024 image is 765 tokens for GPT-4o (high detail, 512-pixel tiles) and
1,369 for Qwen2.5-VL (one token per 28x28 pixels)."""
REPLY_TOKENS = 150
"""Assumed tokens of one reply: a JSON verdict with a short reason (a reasoning judge's thinking not included)."""
ASSUMPTIONS = (
    "calls assume an empty judge cache (a cached judgement makes no call), a non-empty answer per sample and one "
    "generated image per image judgement"
)
TOKEN_METHOD = (
    f"tokens are estimates: text = characters / {CHARS_PER_TOKEN} of the templates, {VARIABLE_TOKENS} per "
    f"template variable, {IMAGE_TOKENS} per image, {REPLY_TOKENS} per reply (thinking not counted)"
)


@dataclass(frozen=True)
class PlannedJudgement:
    """One judgement a task's scorer asks for a sample: its template, the images it sends and the judge config
    the scorer passes (``None``: the global settings)."""

    template_id: str
    images: int = 0
    config: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class JudgeCost:
    """Judgements, the calls they make and their estimated tokens; ``completion_bound`` (the sum of the calls'
    ``max_tokens``) is ``None`` once a call has none. Costs add up with ``+``."""

    judgements: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    completion_bound: int | None = 0

    def __add__(self, other: JudgeCost) -> JudgeCost:
        bound = (
            None
            if self.completion_bound is None or other.completion_bound is None
            else self.completion_bound + other.completion_bound
        )
        return JudgeCost(
            self.judgements + other.judgements,
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            bound,
        )


@dataclass(frozen=True)
class TaskEstimate:
    """A judged task's samples (those the run scores) and what judging them costs."""

    task: str
    samples: int
    cost: JudgeCost


def text_tokens(chars: int) -> int:
    """Estimated tokens of ``chars`` characters of text."""
    return math.ceil(chars / CHARS_PER_TOKEN)


def template_chars(template: Template) -> int:
    """Characters of a template's own text: system message, text segments, image labels and its longest
    category addendum (variables not substituted)."""
    texts = [template.system or "", *(segment.text or segment.label or "" for segment in template.segments)]
    addendum = max(map(len, template.addendum.texts.values()), default=0) if template.addendum else 0
    return sum(map(len, texts)) + addendum


def judgement_cost(planned: PlannedJudgement) -> JudgeCost:
    """Calls and estimated tokens of one judgement (module docstring); a two-turn judgement's second call sends
    the first turn, the reply and the follow-up."""
    template, config = get_template(planned.template_id), JudgeConfig.coerce(planned.config)
    variables = VARIABLE_TOKENS * len(template.variables)
    first = text_tokens(template_chars(template)) + variables + IMAGE_TOKENS * planned.images
    followup = followup_turn(template, config)
    prompts = [first] if followup is None else [first, first + REPLY_TOKENS + text_tokens(len(followup))]
    max_tokens = decoding(template, config).get("max_tokens")
    bound = None if max_tokens is None else int(max_tokens) * len(prompts)
    return JudgeCost(1, len(prompts), sum(prompts), REPLY_TOKENS * len(prompts), bound)


def task_estimate(task: Any, limit: float | None) -> TaskEstimate:
    """What judging a built task costs on the samples a run with ``--limit`` scores."""
    from lmms_eval.evaluator_utils import get_sample_size

    task.build_all_requests(limit=get_sample_size(task, limit))
    name, metadata = task.config.task, task.config.metadata
    plan = part(metadata["benchmark"], "judge_plan").planned_judgements
    docs = task.eval_docs  # read after building the requests: a task with repeats expands them there
    doc_ids = sorted({instance.doc_id for instance in task.instances})
    cost = sum((judgement_cost(p) for i in doc_ids for p in plan(name, metadata, docs[i])), JudgeCost())
    return TaskEstimate(name, len(doc_ids), cost)


def report(estimates: Sequence[TaskEstimate], not_judged: Sequence[str]) -> str:
    """The printed table: one line per judged task and a total, the assumptions and the token method."""
    header = ("task", "samples", "judgements", "calls", "prompt tokens", "completion tokens", "completion bound")
    total = TaskEstimate("total", sum(e.samples for e in estimates), sum((e.cost for e in estimates), JudgeCost()))
    rows = [
        (
            e.task,
            f"{e.samples:,}",
            f"{e.cost.judgements:,}",
            f"{e.cost.calls:,}",
            f"~{e.cost.prompt_tokens:,}",
            f"~{e.cost.completion_tokens:,}",
            "unbounded" if e.cost.completion_bound is None else f"{e.cost.completion_bound:,}",
        )
        for e in [*estimates, total]
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in [header, *rows]
    ]
    notes = [f"# judge estimate, no request sent: {ASSUMPTIONS}", f"# {TOKEN_METHOD}"]
    if not_judged:
        notes.append(f"# not judged (no judge calls): {', '.join(not_judged)}")
    return "\n".join([*lines, *notes])
