"""Deadlines, redirects and key redaction of every judge request, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from loguru import logger

from lmms_eval_unify.judges import FAILED, judge
from lmms_eval_unify.judges.client import ChatClient, JudgeRequestError, RetryPolicy
from lmms_eval_unify.judges.http import REDACTED, redact, secret_forms
from lmms_eval_unify.testing.openai_server import ChatRequest, Fault, OpenAICompatServer, Reply, fixed_reply

TEMPLATE = "gapeval.und.reasoning"
ITEM = {"question": "q", "answer": "a", "reference": "r"}
SINGLE_TURN = {"two_turn": False, "backoff_base_s": 0.01, "backoff_max_s": 0.02}
LEAKY_KEY = "sk-live/9f2c+1e77=DO&NOT?LEAK%41~tail"
"""A key with characters that URL, HTML and base64 encodings all change."""


def encoded_keys(key: str) -> dict[str, str]:
    """The forms a server may echo a key in: plain, percent-encoded (five ways, every byte or some), base64 of
    ``user:key``."""
    return {
        "plain": key,
        "percent": quote(key, safe=""),
        "percent-lower": quote(key, safe="").replace("%2F", "%2f").replace("%3F", "%3f"),
        "form": quote_plus(key),
        "every-byte": "".join(f"%{byte:02X}" for byte in key.encode()),  # even unreserved ones: sk%2D...
        "every-byte-mixed": "".join(f"%{b:02x}" if i % 2 else chr(b) for i, b in enumerate(key.encode())),
        "basic": base64.b64encode(f"user:{key}".encode()).decode(),
        "html": key.replace("&", "&amp;"),
    }


LEAK_CHARS = 10
"""A run of this many characters of a key form (of the key's own part of ``basic``) in a text is a leak."""


def leaks(text: str, key: str) -> list[str]:
    """The names of the key forms of which ``text`` holds any ``LEAK_CHARS`` consecutive characters."""
    found = []
    for name, form in encoded_keys(key).items():
        secret_part = form[8:] if name == "basic" else form  # base64 of "user:" covers the first 7 characters
        if any(secret_part[i : i + LEAK_CHARS] in text for i in range(len(secret_part) - LEAK_CHARS + 1)):
            found.append(name)
    return found


# --------------------------------------------------------------------------- deadlines
@pytest.mark.parametrize("body_only", [False, True], ids=["status-line-dripped", "body-dripped"])
def test_a_dripping_judge_fails_at_the_deadline_and_its_connection_is_closed(body_only: bool) -> None:
    """One byte every 50 ms never trips a per-read timeout; the 0.5 s deadline of the whole request does."""
    with OpenAICompatServer(fixed_reply('{"score": 1}'), max_lifetime_s=60) as server:
        server.inject([Fault.drip(0.05, body_only=body_only)])
        client = ChatClient(server.base_url, None, deadline_s=0.5, max_concurrency=1, retry=RetryPolicy(max_retries=0))
        with pytest.raises(JudgeRequestError, match=r"within the 0\.5 s deadline of the whole request"):
            client.complete("judge", [{"role": "user", "content": "x"}], {})
        assert server.closed_mid_drip.wait(10), "the server never saw the client close the connection"
        full_reply = len(json.dumps(server._chat(server.requests_to()[0]).body))
        assert server.dripped_bytes < full_reply, "the client waited for the whole dripped reply"
        client.close()


def test_each_retry_gets_its_own_deadline_and_a_judgement_fails_with_the_reason(judge_env: Path, server) -> None:
    server.inject([Fault.drip(0.05), Fault.drip(0.05, body_only=True)])
    result = judge(TEMPLATE, variables=ITEM, config=SINGLE_TURN | {"timeout_s": 0.4, "max_retries": 1})
    assert result.status == FAILED and "deadline" in (result.reason or "")
    assert server.request_count == 2 and server.closed_mid_drip.wait(10)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_fails_at_the_first_response_naming_its_target(judge_env: Path, server, status: int) -> None:
    server.inject([Fault.redirect("http://judge.example:8000/v1/chat/completions", status)])
    result = judge(TEMPLATE, variables=ITEM, config=SINGLE_TURN | {"max_retries": 6})
    assert result.status == FAILED and server.request_count == 1
    assert f"HTTP {status} redirect to 'http://judge.example:8000/v1/chat/completions' refused" in (result.reason or "")


def test_a_reply_over_the_gate_limit_is_refused_at_once(
    judge_env: Path, server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LMMS_EVAL_UNIFY_LIMITS", json.dumps({"judge_reply_bytes": 4096}))
    server.add_route("/v1/chat/completions", lambda request: Reply(200, {"choices": [], "pad": "x" * 10_000}))
    result = judge(TEMPLATE, variables=ITEM, config=SINGLE_TURN | {"max_retries": 6})
    assert result.status == FAILED and server.request_count == 1
    assert "judge_reply_bytes" in (result.reason or "") and "too_large" in (result.reason or "")


# --------------------------------------------------------------------------- key redaction
def test_every_encoded_form_is_redacted_wherever_it_sits() -> None:
    rng = random.Random(5)
    alphabet = "abcXYZ0189-_/+=&?%~ :."
    for _ in range(40):
        key = "sk-" + "".join(rng.choice(alphabet) for _ in range(rng.randint(12, 48)))
        for name, form in encoded_keys(key).items():
            for pad in range(4):  # base64 of "user:key" with any prefix length lands on every alignment
                text = "x" * pad + "Basic " + base64.b64encode(("u" * pad + ":" + key).encode()).decode() + " " + form
                cleaned = redact(text, key)
                assert not leaks(cleaned, key), (name, key, cleaned)
    assert redact("nothing here", LEAKY_KEY) == "nothing here"
    assert all(len(form) >= 12 for form in secret_forms(LEAKY_KEY))


def _echoing(status: int, offset: int, form: str):
    def route(request: ChatRequest) -> Reply:
        return Reply(status, {"error": {"message": "p" * offset + form + " q" * 200}})

    return route


@pytest.mark.parametrize("status", [401, 500])
def test_a_key_echoed_across_the_error_excerpt_cut_never_leaks(status: int, tmp_path: Path) -> None:
    """An error quotes the body's first 300 characters: the key, in every form, crosses that point at every
    offset; no part of it reaches the exception, the retry log or a written file."""
    log = tmp_path / "run.log"
    sink = logger.add(log, level="DEBUG")
    reasons = []
    try:
        with OpenAICompatServer(max_lifetime_s=120) as server:
            client = ChatClient(
                server.base_url, LEAKY_KEY, deadline_s=5, max_concurrency=1, retry=RetryPolicy(1, 0.0, 0.0)
            )
            for name, form in encoded_keys(LEAKY_KEY).items():
                for offset in range(300 - len(form) - 1, 301):
                    server.add_route("/v1/chat/completions", _echoing(status, offset, form))
                    with pytest.raises(JudgeRequestError) as raised:
                        client.complete("judge", [{"role": "user", "content": "x"}], {})
                    reasons.append(str(raised.value))
                    assert not leaks(str(raised.value), LEAKY_KEY), (name, offset, str(raised.value))
            client.close()
    finally:
        logger.remove(sink)
    (tmp_path / "reasons.json").write_text(json.dumps(reasons))
    assert any(REDACTED in reason for reason in reasons)
    for path in tmp_path.iterdir():
        assert not leaks(path.read_text(), LEAKY_KEY), path


def test_a_judged_sample_never_stores_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through ``judge``: the reason of a failed judgement is what a samples file stores."""
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_CACHE", str(tmp_path / "cache.sqlite"))
    with OpenAICompatServer(max_lifetime_s=60) as server:
        rows = []
        for form in encoded_keys(LEAKY_KEY).values():
            for offset in (300 - len(form) // 2, 200 - len(form) // 2):
                server.add_route("/v1/chat/completions", _echoing(400, offset, form))
                config = SINGLE_TURN | {"base_url": server.base_url, "api_key": LEAKY_KEY, "model": "m"}
                rows.append(judge(TEMPLATE, variables=ITEM, config=config).to_dict())
    (tmp_path / "samples.jsonl").write_text("\n".join(json.dumps(row) for row in rows))
    assert all(row["status"] == FAILED for row in rows) and any(REDACTED in row["reason"] for row in rows)
    for path in tmp_path.iterdir():
        assert not leaks(path.read_bytes().decode("utf-8", "replace"), LEAKY_KEY), path
