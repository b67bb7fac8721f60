"""The local OpenAI-compatible test server, exercised with plain httpx."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from lmms_eval_unify.testing.openai_server import (
    ChatRequest,
    Fault,
    OpenAICompatServer,
    Reply,
    fixed_reply,
    marker_reply,
)


def chat(base_url: str, text: str, **headers: str) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]}
    return httpx.post(f"{base_url}/chat/completions", json=body, headers=headers, timeout=5)


def content(response: httpx.Response) -> str:
    return response.json()["choices"][0]["message"]["content"]


def test_policy_answers_from_request_content() -> None:
    with OpenAICompatServer(marker_reply(default="none")) as server:
        assert content(chat(server.base_url, 'judge this <<REPLY:{"score": 1}>> please')) == '{"score": 1}'
        assert content(chat(server.base_url, "no marker")) == "none"
        assert server.request_count == 2
        assert server.requests_to()[0].text == 'judge this <<REPLY:{"score": 1}>> please'


def test_faults_are_consumed_in_order() -> None:
    with OpenAICompatServer(fixed_reply("fine")) as server:
        # the stall outlasts the 0.1 s client timeout by 30 s (its daemon thread sleeps on after the test)
        server.inject([Fault.http(429, retry_after=3), Fault.http(500), Fault.garbage_body(), Fault.stall(30)])
        first = chat(server.base_url, "a")
        assert first.status_code == 429 and first.headers["retry-after"] == "3"
        assert chat(server.base_url, "b").status_code == 500
        garbage = chat(server.base_url, "c")
        assert garbage.status_code == 200 and not garbage.text.startswith("{")
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{server.base_url}/chat/completions", json={"messages": []}, timeout=0.1)
        assert content(chat(server.base_url, "e")) == "fine"
        assert server.request_count == 5


def test_api_key_is_enforced() -> None:
    with OpenAICompatServer(fixed_reply("ok"), api_key="k1") as server:
        assert chat(server.base_url, "x").status_code == 401
        assert chat(server.base_url, "x", Authorization="Bearer k1").status_code == 200


def test_extra_routes_and_unknown_paths() -> None:
    def images(request: ChatRequest) -> Reply:
        return Reply(200, {"data": [{"b64_json": request.body["prompt"]}]})

    with OpenAICompatServer() as server:
        server.add_route("/v1/images/generations", images)
        reply = httpx.post(f"{server.base_url}/images/generations", json={"prompt": "cat"}, timeout=5)
        assert reply.json() == {"data": [{"b64_json": "cat"}]}
        assert len(server.requests_to("/v1/images/generations")) == 1
        assert httpx.post(f"{server.base_url}/nope", json={}, timeout=5).status_code == 404
        assert httpx.get(f"{server.base_url}/models", timeout=5).status_code == 200


def test_in_flight_maximum_is_tracked() -> None:
    """One request alone is 1 in flight; three held by a barrier until all three are in (no timing) are 3."""
    barrier = threading.Barrier(3, timeout=60)

    def policy(request: ChatRequest) -> str:
        if request.text.startswith("together"):
            barrier.wait()
        return "ok"

    with OpenAICompatServer(policy) as server:
        assert content(chat(server.base_url, "alone")) == "ok" and server.max_in_flight == 1
        replies: list[str] = []

        def together(i: int) -> None:
            body = {"messages": [{"role": "user", "content": f"together {i}"}]}
            replies.append(content(httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=120)))

        threads = [threading.Thread(target=together, args=(i,)) for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=180)
        assert replies == ["ok"] * 3 and not barrier.broken
        assert server.max_in_flight == 3


def test_server_stops_itself() -> None:
    """Serving at once, and after ``max_lifetime_s`` stopped by its own timer: connections are refused. The first
    request has the whole 2 s lifetime to be answered; the stop is waited for (an event), not slept for."""
    lifetime_s = 2.0
    stopped = threading.Event()
    server = OpenAICompatServer(fixed_reply("ok"), max_lifetime_s=lifetime_s)
    stop = server.stop

    def stop_and_say_so() -> None:
        stop()
        stopped.set()

    server.stop = stop_and_say_so  # what start() arms its lifetime timer with
    started = time.monotonic()
    base_url = server.start().base_url
    assert chat(base_url, "x").status_code == 200
    assert stopped.wait(60), "the server did not stop itself"
    assert time.monotonic() - started >= lifetime_s and not server.running
    with pytest.raises(httpx.ConnectError):
        chat(base_url, "x")
