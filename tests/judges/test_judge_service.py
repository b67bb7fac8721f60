"""End-to-end tests of the judge layer against a real local HTTP server (no mocks of our client)."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path

import pytest
from loguru import logger
from PIL import Image

from lmms_eval_unify.judges import (
    FAILED,
    INVALID,
    OK,
    JudgeConfig,
    JudgeNotConfiguredError,
    JudgeRequest,
    get_template,
    judge,
    judge_many,
    judge_stats,
    judge_summary,
    reset_judge_state,
)
from lmms_eval_unify.testing.openai_server import ChatRequest, Fault, OpenAICompatServer, ServedReply

API_KEY = "sk-test-9f2c1e77-DO-NOT-LEAK"  # must equal the key of the ``server`` fixture (conftest.py)
FAST_RETRIES = {"backoff_base_s": 0.01, "backoff_max_s": 0.05, "max_retries": 4, "timeout_s": 5.0}
VERDICT_1 = '<<REPLY:{"reason": "matches", "score": 1}>>'
TEXT_TEMPLATE = "gapeval.und.reasoning"  # two-turn by default
IMAGE_TEMPLATE = "gapeval.gen.world_knowledge"


def png_bytes(color: tuple[int, int, int], size: tuple[int, int] = (8, 6)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def text_item(answer: str, question: str = "What happens?") -> dict[str, str]:
    return {"question": question, "answer": answer, "reference": "the ice melts"}


def test_request_shape_with_images(judge_env: Path, server: OpenAICompatServer, tmp_path: Path) -> None:
    reference = png_bytes((0, 0, 255))
    generated_path = tmp_path / "generated.png"
    generated_path.write_bytes(png_bytes((255, 0, 0)))
    original = Image.new("RGB", (4, 4), (0, 255, 0))

    result = judge(
        IMAGE_TEMPLATE,
        variables={"question": "A red square", "reference": VERDICT_1},
        images={"image": generated_path, "reference_image": reference, "original_image": original},
        config={"model": "judge-model-x", **FAST_RETRIES},
    )

    assert result.status == OK and result.fields == {"score": 1, "reason": "matches"}
    assert result.model == "judge-model-x" and not result.cached
    (request,) = server.requests_to()
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.model == "judge-model-x"
    assert "temperature" not in request.body  # GapEval's GPT-5-class judge: no temperature
    (message,) = request.messages
    assert message["role"] == "user"
    kinds = [part["type"] for part in message["content"]]
    assert kinds == ["text", "image_url", "text", "image_url", "text", "image_url", "text"]
    labels = [p["text"] for p in message["content"] if p["type"] == "text"][:3]
    assert labels == ["[Original_Image]", "[Image]", "[Reference_Image]"]
    assert all(url.startswith("data:image/png;base64,") for url in request.image_urls)
    sent = request.images
    assert sent[1] == generated_path.read_bytes() and sent[2] == reference
    assert Image.open(io.BytesIO(sent[0])).getpixel((0, 0)) == (0, 255, 0)
    assert "Here is the question: A red square" in request.text


def test_temperature_and_max_tokens_from_config(judge_env: Path, server: OpenAICompatServer) -> None:
    config = {"temperature": 0.0, "max_tokens": 64, "two_turn": False, **FAST_RETRIES}
    judge(TEXT_TEMPLATE, variables=text_item(VERDICT_1), config=config)
    (request,) = server.requests_to()
    assert request.body["temperature"] == 0.0 and request.body["max_tokens"] == 64


def test_extra_body_from_env_and_override(
    judge_env: Path, server: OpenAICompatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_EXTRA_BODY", '{"reasoning": {"enabled": true}}')
    judge(TEXT_TEMPLATE, variables=text_item(VERDICT_1), config=FAST_RETRIES | {"two_turn": False})
    override = {"chat_template_kwargs": {"enable_thinking": True}}
    judge(
        TEXT_TEMPLATE,
        variables=text_item(VERDICT_1),
        config=FAST_RETRIES | {"two_turn": False, "extra_body": override},
    )
    first, second = server.requests_to()
    assert first.body["reasoning"] == {"enabled": True} and "chat_template_kwargs" not in first.body
    assert second.body["chat_template_kwargs"] == {"enable_thinking": True} and "reasoning" not in second.body


def test_two_turn_uses_follow_up_and_second_reply(judge_env: Path, server: OpenAICompatServer) -> None:
    def policy(request: ChatRequest) -> str:
        return '{"score": 1}' if request.user_turns == 1 else '```json\n{"score": 0, "reason": "on reflection"}\n```'

    server.policy = policy
    result = judge(TEXT_TEMPLATE, variables=text_item("x"), config=FAST_RETRIES)
    first, second = server.requests_to()
    assert [m["role"] for m in second.messages] == ["user", "assistant", "user"]
    assert second.messages[1]["content"] == '{"score": 1}'
    assert second.messages[2]["content"] == "Are you sure? Think carefully."
    assert first.messages == second.messages[:1]
    assert result.fields["score"] == 0 and len(result.replies) == 2

    single = judge(TEXT_TEMPLATE, variables=text_item("y"), config={"two_turn": False, **FAST_RETRIES})
    assert single.fields["score"] == 1 and server.request_count == 3


def test_retries_then_success(judge_env: Path, server: OpenAICompatServer) -> None:
    # the stall outlasts the 0.5 s timeout by 30 s (its daemon thread sleeps on after the test)
    server.inject([Fault.http(429), Fault.http(500), Fault.http(503), Fault.stall(30), Fault.garbage_body()])
    config = {**FAST_RETRIES, "max_retries": 5, "timeout_s": 0.5}
    result = judge(TEXT_TEMPLATE, variables=text_item(VERDICT_1), config=config | {"two_turn": False})
    assert result.status == OK and result.fields["score"] == 1
    assert server.request_count == 6


def test_retry_after_is_honoured(judge_env: Path, server: OpenAICompatServer) -> None:
    server.inject([Fault.http(429, retry_after=1)])
    start = time.monotonic()
    result = judge(TEXT_TEMPLATE, variables=text_item(VERDICT_1), config=FAST_RETRIES | {"two_turn": False})
    assert result.valid and server.request_count == 2
    assert time.monotonic() - start >= 1.0  # backoff alone would wait ~0.01 s


def test_exhausted_retries_fail_and_are_not_cached(judge_env: Path, server: OpenAICompatServer) -> None:
    config = FAST_RETRIES | {"max_retries": 2, "two_turn": False}
    server.inject([Fault.http(500)] * 3)
    failed = judge(TEXT_TEMPLATE, variables=text_item(VERDICT_1), config=config, task="t")
    assert failed.status == FAILED and not failed.valid and failed.fields == {}
    assert "HTTP 500" in (failed.reason or "") and server.request_count == 3
    again = judge(TEXT_TEMPLATE, variables=text_item(VERDICT_1), config=config, task="t")
    assert again.status == OK and not again.cached and server.request_count == 4
    # both name the exact template text they rendered, failed or not
    assert failed.template_digest == again.template_digest == get_template(TEXT_TEMPLATE).digest
    assert judge_stats()["t"] == {"judgements": 2, "failed": 1, "requests": 1, "cache_hits": 0, "invalid": 0}


def test_client_errors_are_not_retried(judge_env: Path, server: OpenAICompatServer) -> None:
    config = FAST_RETRIES | {"api_key": "wrong-key", "two_turn": False}
    result = judge(TEXT_TEMPLATE, variables=text_item(VERDICT_1), config=config)
    assert result.status == FAILED and "HTTP 401" in (result.reason or "")
    assert server.request_count == 1


def test_cache_hit_on_rerun_makes_zero_requests(judge_env: Path, server: OpenAICompatServer) -> None:
    batch = [JudgeRequest(TEXT_TEMPLATE, text_item(VERDICT_1, question=f"q{i}")) for i in range(5)]
    batch.append(
        JudgeRequest(IMAGE_TEMPLATE, {"question": "c", "reference": VERDICT_1}, {"image": png_bytes((1, 2, 3))})
    )
    first = judge_many(batch, config=FAST_RETRIES, task="demo", progress=False)
    assert server.request_count == 11  # 5 two-turn text judgements + 1 image judgement
    assert judge_env.exists()

    reset_judge_state()  # as a fresh process would start
    second = judge_many(batch, config=FAST_RETRIES, task="demo", progress=False)
    assert server.request_count == 11
    assert all(r.cached for r in second)
    assert [r.fields for r in second] == [r.fields for r in first]
    assert judge_stats()["demo"]["cache_hits"] == 6
    assert judge_summary("demo") == "judge demo: 6 judgements, 0 calls made, 6 cache hits, 0 failed, 0 invalid"

    changed = JudgeRequest(IMAGE_TEMPLATE, {"question": "c", "reference": VERDICT_1}, {"image": png_bytes((1, 2, 4))})
    assert not judge_many([changed], config=FAST_RETRIES, progress=False)[0].cached  # new image content
    other_model = judge_many(batch[:1], config=FAST_RETRIES | {"model": "other"}, progress=False)
    assert not other_model[0].cached and server.request_count == 14


def test_unparseable_reply_is_recorded_as_invalid(judge_env: Path, server: OpenAICompatServer) -> None:
    items = [
        JudgeRequest(TEXT_TEMPLATE, text_item("<<REPLY:I think it is probably fine.>>")),
        JudgeRequest(TEXT_TEMPLATE, text_item('<<REPLY:{"score": 7}>>')),
        JudgeRequest(TEXT_TEMPLATE, text_item('<<REPLY:Verdict below.\n{"score": "yes", "reason": "ok"} done>>')),
    ]
    results = judge_many(items, config=FAST_RETRIES | {"two_turn": False}, task="inv", progress=False)
    assert [r.status for r in results] == [INVALID, INVALID, OK]
    assert results[0].raw == "I think it is probably fine." and results[0].fields == {}
    assert results[0].reason and results[1].reason
    assert judge_stats()["inv"]["invalid"] == 2


def test_concurrency_limit_is_respected(judge_env: Path, server: OpenAICompatServer) -> None:
    """The server holds each request until two are in flight (a barrier, so the test needs no timing): eight
    judgements with ``max_concurrency=2`` go two at a time, never more."""
    barrier, policy = threading.Barrier(2, timeout=60), server.policy

    def held(request: ChatRequest) -> str | ServedReply:
        barrier.wait()
        return policy(request)

    server.policy = held
    batch = [JudgeRequest(TEXT_TEMPLATE, text_item(VERDICT_1, question=f"q{i}")) for i in range(8)]
    config = FAST_RETRIES | {"max_concurrency": 2, "two_turn": False, "timeout_s": 120.0}
    results = judge_many(batch, config=config, progress=False)
    assert all(r.valid for r in results) and not barrier.broken
    assert server.max_in_flight == 2 and server.request_count == 8


def test_threads_share_one_limit_and_deduplicate(judge_env: Path, server: OpenAICompatServer) -> None:
    """Four worker threads (like lmms-eval's process_results) judging the same items."""
    server.delay_s = 0.05
    config = FAST_RETRIES | {"max_concurrency": 3, "two_turn": False}
    outputs: list[list[int]] = []

    def worker() -> None:
        outputs.append(
            [
                judge(TEXT_TEMPLATE, variables=text_item(VERDICT_1, f"q{i}"), config=config).fields["score"]
                for i in range(6)
            ]
        )

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert outputs == [[1] * 6] * 4
    assert server.request_count == 6 and server.max_in_flight <= 3


def test_missing_endpoint_raises_clear_error(judge_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL")
    with pytest.raises(JudgeNotConfiguredError, match="LMMS_EVAL_UNIFY_JUDGE_BASE_URL"):
        judge(TEXT_TEMPLATE, variables=text_item("x"))


def test_openai_env_fallback_and_api_key_env(
    judge_env: Path, server: OpenAICompatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL")
    monkeypatch.delenv("LMMS_EVAL_UNIFY_JUDGE_API_KEY")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("MY_JUDGE_KEY", API_KEY)
    result = judge(
        TEXT_TEMPLATE,
        variables=text_item(VERDICT_1),
        config={"api_key_env": "MY_JUDGE_KEY", "two_turn": False},
    )
    assert result.valid and server.requests_to()[0].headers["authorization"] == f"Bearer {API_KEY}"


def test_api_key_never_written(judge_env: Path, server: OpenAICompatServer, tmp_path: Path) -> None:
    log_file = tmp_path / "judge.log"
    sink = logger.add(log_file, level="DEBUG")
    try:
        server.inject([Fault.http(429), Fault.http(500)])
        results = judge_many(
            [JudgeRequest(TEXT_TEMPLATE, text_item(VERDICT_1, f"q{i}")) for i in range(3)]
            + [JudgeRequest(TEXT_TEMPLATE, text_item("<<REPLY:garbage>>"))],
            config=FAST_RETRIES,
            progress=False,
        )
        failing = judge(
            TEXT_TEMPLATE,
            variables=text_item("z"),
            config=FAST_RETRIES | {"max_retries": 0, "base_url": server.base_url + "/missing"},
        )
    finally:
        logger.remove(sink)
    assert failing.status == FAILED
    (tmp_path / "results.json").write_text(json.dumps([r.to_dict() for r in [*results, failing]]))
    log = log_file.read_text()
    assert "judge batch: 4 judgements, 8 calls made, 0 cache hits, 0 failed, 1 invalid" in log
    assert "retry 1" in log
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) >= 3
    for path in written:
        assert API_KEY.encode() not in path.read_bytes(), path
    assert API_KEY not in repr(JudgeConfig(api_key=API_KEY))


BAD_MESSAGES = [None, {"role": "assistant"}, {"content": None}, {"content": ["a"]}, {"content": 5},
                {"content": {"text": "x"}}, "just a string"]  # fmt: skip


def _chat_body(message: object) -> dict:
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


@pytest.mark.parametrize("message", BAD_MESSAGES, ids=repr)
def test_replies_without_string_content_are_retried_then_failed_and_never_cached(
    judge_env: Path, server: OpenAICompatServer, message: object
) -> None:
    from lmms_eval_unify.judges.cache import JudgeCache
    from lmms_eval_unify.testing.openai_server import Reply

    server.add_route("/v1/chat/completions", lambda request: Reply(200, _chat_body(message)))
    config = FAST_RETRIES | {"max_retries": 2, "two_turn": False}
    failed = judge(TEXT_TEMPLATE, variables=text_item(VERDICT_1), config=config, task="t")
    assert failed.status == FAILED and "malformed response body" in (failed.reason or "")
    assert server.request_count == 3 and len(JudgeCache(judge_env)) == 0
    for not_replies in ([None], [5], [], "text", [["a"]], [{"content": "x"}]):
        with pytest.raises(ValueError):
            JudgeCache(judge_env).put("k", "t", "m", not_replies)  # type: ignore[arg-type]


@pytest.mark.parametrize("status", [400, 401, 500])
def test_an_echoed_api_key_is_redacted_from_reasons_and_logs(
    judge_env: Path, server: OpenAICompatServer, tmp_path: Path, status: int
) -> None:
    from lmms_eval_unify.testing.openai_server import Reply

    def echo(request: ChatRequest) -> Reply:
        return Reply(status, {"error": {"message": f"bad header {request.headers['authorization']}"}})

    server.add_route("/v1/chat/completions", echo)
    log_file = tmp_path / "judge.log"
    sink = logger.add(log_file, level="DEBUG")
    try:
        result = judge(TEXT_TEMPLATE, variables=text_item(VERDICT_1), config=FAST_RETRIES | {"two_turn": False})
    finally:
        logger.remove(sink)
    assert result.status == FAILED
    written = json.dumps(result.to_dict()) + log_file.read_text()
    assert API_KEY not in written and "[REDACTED]" in written


@pytest.mark.parametrize(
    ("answered", "flag"),
    [("other/model-7b", "answered by other/model-7b"), (None, ""), ("{asked}-2024-08-06", "")],
    ids=["another-model", "names-none", "dated-snapshot"],
)
def test_a_reply_from_another_model_is_flagged_in_the_judge_record(
    judge_env: Path, server: OpenAICompatServer, answered: str | None, flag: str
) -> None:
    from lmms_eval_unify.scoring.scorer import judge_log
    from lmms_eval_unify.testing.openai_server import Reply

    def named(request: ChatRequest) -> Reply:
        reply = server._chat(request)
        body = dict(reply.body)
        if answered is None:
            body.pop("model")
        else:
            body["model"] = answered.format(asked=request.model)
        return Reply(200, body)

    server.add_route("/v1/chat/completions", named)
    result = judge(TEXT_TEMPLATE, variables=text_item(VERDICT_1), config=FAST_RETRIES | {"two_turn": False})
    assert result.status == OK and (flag in result.model_mismatch if flag else result.model_mismatch == "")
    assert ("model_mismatch" in judge_log(result)) == bool(flag)
    again = judge(TEXT_TEMPLATE, variables=text_item(VERDICT_1), config=FAST_RETRIES | {"two_turn": False})
    assert again.cached and again.model_mismatch == ""  # the cache keeps verdicts, not who gave them
