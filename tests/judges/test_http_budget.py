"""One budget for a call and all its retries (``HttpEndpoint(budget_s=…)``): each attempt gets what is left, and a
wait that would pass it fails at once."""

from __future__ import annotations

import pytest

from lmms_eval_unify.judges.http import EndpointError, HttpEndpoint, RetryPolicy
from lmms_eval_unify.testing.openai_server import Fault, OpenAICompatServer, fixed_reply


def _reply(body: object) -> str:
    return str(body)


@pytest.fixture
def server():
    with OpenAICompatServer(fixed_reply("ok")) as running:
        yield running


def endpoint(server, waits: list[float], budget_s: float | None, deadline_s: float = 30.0) -> HttpEndpoint:
    return HttpEndpoint(server.base_url, None, deadline_s=deadline_s, retry=RetryPolicy(max_retries=6),
                        budget_s=budget_s, sleep=waits.append)  # fmt: skip


def test_a_retry_after_past_the_budget_fails_at_once_with_the_reason(server):
    waits: list[float] = []
    server.inject([Fault.http(429, retry_after=999_999_999)])
    with pytest.raises(EndpointError, match=r"Retry-After 1e\+09 s.*would pass the 60 s budget"):
        endpoint(server, waits, budget_s=60).post("chat/completions", "judge_reply", _reply, json={"model": "m"})
    assert waits == [] and server.request_count == 1


def test_without_a_budget_the_same_reply_is_waited_for_capped(server):
    waits: list[float] = []
    server.inject([Fault.http(429, retry_after=999_999_999)])
    endpoint(server, waits, budget_s=None).post("chat/completions", "judge_reply", _reply, json={"model": "m"})
    assert waits == [300.0] and server.request_count == 2


def test_a_dripping_server_holds_a_call_no_longer_than_its_budget_over_all_retries(server):
    """Every attempt is dripped (1 byte per 0.2 s): without a budget each of the 7 attempts would get its own 30 s
    deadline; with a 1.5 s budget the first attempt is cut when the budget is spent and no retry starts."""
    waits: list[float] = []
    server.inject([Fault.drip(0.2)] * 7)
    with pytest.raises(EndpointError, match="budget"):
        endpoint(server, waits, budget_s=1.5).post("chat/completions", "judge_reply", _reply, json={"model": "m"})
    assert server.request_count == 1 and waits == []
