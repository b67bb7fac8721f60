"""What an OpenAI-compatible server reveals of itself: ``ServerFacts`` over replies, ``probe_server`` asking it."""

from __future__ import annotations

import pytest

from lmms_eval_unify.judges.http import (
    MAX_FACT_CHARS,
    MAX_FACT_VALUES,
    HttpEndpoint,
    RetryPolicy,
    ServerFacts,
    listed_models,
    probe_server,
    public_url,
    server_root,
)
from lmms_eval_unify.testing.openai_server import Fault, OpenAICompatServer, fixed_reply

REVISION = "0123456789abcdef" * 2 + "01234567"


def test_facts_keep_revealing_headers_and_fields_each_value_once_and_bounded():
    facts = ServerFacts()
    facts.note_headers({"Server": "uvicorn", "X-Request-Id": "r1", "openai-version": "2020-10-01"})
    facts.note_headers({"server": "uvicorn", "x-vllm-version": "0.11.0", "Set-Cookie": "secret"})
    facts.note_body({"model": "m", "system_fingerprint": "fp", "choices": [], "usage": {"model": "x"}})
    facts.note_body(["not", "a", "reply"])
    for index in range(MAX_FACT_VALUES + 5):
        facts.note_body({"model": f"m{index:03d}" + "x" * MAX_FACT_CHARS})
    found = facts.as_dict()
    assert found["header server"] == ["uvicorn"] and found["header x-vllm-version"] == ["0.11.0"]
    assert found["header openai-version"] == ["2020-10-01"] and found["system_fingerprint"] == ["fp"]
    assert not any("request-id" in name or "cookie" in name for name in found)
    assert len(found["model"]) == MAX_FACT_VALUES and all(len(v) <= MAX_FACT_CHARS for v in found["model"])


def test_listed_models_keeps_the_asked_ids_and_reads_a_snapshot_revision():
    a = {"id": "a", "root": f"/hub/models--o--a/snapshots/{REVISION}", "permission": [{}]}
    body = {"data": [a, {"id": "b", "revision": "v2", "root": f"/x/snapshots/{REVISION}"}, {"id": "c"}, "junk"]}
    assert listed_models(body, {"a", "b"}) == [
        {"id": "a", "root": f"/hub/models--o--a/snapshots/{REVISION}", "revision": REVISION},
        {"id": "b", "root": f"/x/snapshots/{REVISION}", "revision": "v2"},  # the server's own word wins
    ]
    with pytest.raises(ValueError, match="no model list"):
        listed_models({"object": "list"}, {"a"})


@pytest.mark.parametrize(
    ("url", "public"),
    [
        ("http://user:pw@host:8000/v1", "http://host:8000/v1"),
        ("https://key@api.example/v1", "https://api.example/v1"),
        ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1"),
    ],
)
def test_public_url_drops_credentials(url, public):
    assert public_url(url) == public and server_root(public) == public.removesuffix("/v1")


def test_probe_asks_once_without_retrying_and_records_what_is_not_revealed():
    with OpenAICompatServer(fixed_reply("x"), api_key="k") as server:
        endpoint = HttpEndpoint(
            server.base_url, "k", deadline_s=5, retry=RetryPolicy(max_retries=3), facts=ServerFacts()
        )
        found = probe_server(endpoint, ["m"])
        assert found["base_url"] == server.base_url and found["models"] == []
        assert found["version"] == 'not revealed: HTTP 404: {"error": {"message": "not found"}}'
        server.reveal([{"id": "m", "owned_by": "vllm"}], version="0.9.2", headers={"x-model-revision": "r"})
        assert probe_server(endpoint, ["m"])["models"] == [{"id": "m", "owned_by": "vllm"}]
        assert endpoint.facts is not None and endpoint.facts.as_dict()["header x-model-revision"] == ["r"]
        server.inject([Fault.http(503)])  # consumed by the next routed request, never by a probe
        assert probe_server(endpoint, ["m"])["version"] == "0.9.2"
        assert server.request_count == 0
