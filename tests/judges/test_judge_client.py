"""The judge client against the reply shapes a vLLM (or SGLang, OpenRouter) judge gives, through the whole judge
layer and a real local server: reasoning in its own field or inline, ``content`` null, ``finish_reason: "length"``,
``usage`` and ``model`` fields."""

from __future__ import annotations

from pathlib import Path

import pytest
from log_capture import logged

from lmms_eval_unify.judges import INVALID, OK, judge
from lmms_eval_unify.judges.cache import JudgeCache
from lmms_eval_unify.judges.client import chat_reply
from lmms_eval_unify.testing.openai_server import OpenAICompatServer, ServedReply

TEMPLATE = "uni_mmmu.geometry.text"  # the Qwen3-32B judge, official with thinking on
VARIABLES = {"task_type": "CALCULATION", "problem": "Find AB.", "solution": "AB = 5.", "response": "AB = 5."}
VERDICT = '{"reasoning_rigorous": 1, "conclusion_correct": 1, "text_ok": 1, "text_reason": "ok"}'
THINKING = 'The candidate gets AB = 5. A draft verdict {"text_ok": 0} would be wrong: \\frac{1}{2} is not used.'
CONFIG = {"backoff_base_s": 0.01, "backoff_max_s": 0.05, "max_retries": 2, "timeout_s": 5.0}


def judged(server: OpenAICompatServer, reply: ServedReply):
    server.policy = lambda _request: reply
    return judge(TEMPLATE, variables=VARIABLES, config=CONFIG)


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content"])
def test_reasoning_parser_reply_parses_the_content_only(judge_env: Path, server: OpenAICompatServer, field: str):
    """vLLM with ``--reasoning-parser qwen3``: the thinking in its own field is not the judge's reply."""
    result = judged(server, ServedReply(VERDICT, reasoning=THINKING, reasoning_field=field))
    assert result.status == OK and result.fields["text_ok"] == 1
    assert result.raw == VERDICT and server.request_count == 1


def test_inline_thinking_is_removed_before_parsing(judge_env: Path, server: OpenAICompatServer):
    """No reasoning parser: ``<think>…</think>`` in ``content``. The official evaluator would take the first
    ``{…}`` of the whole text (inside the thinking); we parse the answer after it (docs/judges.md)."""
    result = judged(server, ServedReply(f"<think>\n{THINKING}\n</think>\n\n{VERDICT}"))
    assert result.status == OK and result.fields["text_ok"] == 1


@pytest.mark.parametrize(
    "reply",
    [
        ServedReply(None, reasoning=THINKING, finish_reason="length"),
        ServedReply("", reasoning=THINKING, reasoning_field="reasoning_content", finish_reason="length"),
        ServedReply(f"<think>\n{THINKING}", finish_reason="length"),
    ],
    ids=["content-null", "content-empty", "unclosed-think"],
)
def test_thinking_cut_at_max_tokens_is_invalid_once_and_cached(
    judge_env: Path, server: OpenAICompatServer, reply: ServedReply
):
    """The thinking used up ``max_tokens``: no verdict is taken from the thinking, the reply is not retried (a
    greedy judge would think the same again), the warning names the cause and a re-run reads the cache."""
    with logged("WARNING") as warnings:
        result = judged(server, reply)
    assert result.status == INVALID and result.fields == {}
    assert result.reason and result.reason.startswith("no answer after the reasoning")
    assert THINKING in result.raw and server.request_count == 1
    assert any("max_tokens (32767, finish_reason 'length')" in w for w in warnings), warnings
    again = judge(TEMPLATE, variables=VARIABLES, config=CONFIG)
    assert again.cached and again.status == INVALID and server.request_count == 1
    assert len(JudgeCache(judge_env)) == 1


def test_a_verdict_before_the_length_stop_counts_and_a_cut_verdict_is_invalid(
    judge_env: Path, server: OpenAICompatServer
):
    complete = judged(server, ServedReply(f"{VERDICT}\nFurther notes: the fig", finish_reason="length"))
    assert complete.status == OK and complete.fields["text_ok"] == 1
    server.policy = lambda _request: ServedReply('{"reasoning_rigorous": 1, "conclusion_corr', finish_reason="length")
    cut = judge(TEMPLATE, variables={**VARIABLES, "response": "AB = 7."}, config=CONFIG)
    assert cut.status == INVALID and cut.fields == {} and cut.reason == "no JSON object with the required fields"
    assert server.request_count == 2


@pytest.mark.parametrize(
    "usage",
    [None, {"prompt_tokens": 412, "completion_tokens": 9, "total_tokens": 421}, {"prompt_tokens": None}],
    ids=["absent", "counted", "partial"],
)
def test_usage_and_a_different_reply_model_do_not_change_the_judgement(
    judge_env: Path, server: OpenAICompatServer, usage: dict | None
):
    """vLLM reports ``usage`` and echoes its ``--served-model-name``; the judgement records the requested model."""
    result = judged(server, ServedReply(VERDICT, usage=usage, model="served-alias"))
    (request,) = server.requests_to()
    assert result.status == OK and result.model == request.model == "Qwen/Qwen3-32B"


def test_chat_reply_of_each_message_shape():
    def body(message: object, finish_reason: object = "stop") -> dict:
        return {"choices": [{"index": 0, "message": message, "finish_reason": finish_reason}]}

    assert chat_reply(body({"content": "x", "reasoning": "r"})).text == "x"
    assert chat_reply(body({"content": None, "reasoning_content": "r"}, "length")).text == "<think>r</think>"
    assert chat_reply(body({"content": "x"}, None)).finish_reason is None
    assert chat_reply(body({"content": "x"}, "length")).finish_reason == "length"
    for malformed in ({"content": None}, {"content": None, "reasoning": 5}, {"content": 5, "reasoning": ""}):
        with pytest.raises(ValueError, match="no reasoning"):
            chat_reply(body(malformed))
