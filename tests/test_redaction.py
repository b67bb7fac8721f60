"""Secrets never stored: which names are secret, where values are found, the keyed hash."""

from __future__ import annotations

import json

import pytest

from lmms_eval_unify import redaction
from lmms_eval_unify.redaction import looks_secret, redact_secrets, redact_text, redacted

SECRET = "sk-live-4b1d9c0ffee"


@pytest.fixture(autouse=True)
def key_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("LMMS_EVAL_UNIFY_CACHE", str(tmp_path / "cache"))
    redaction.redaction_key.cache_clear()
    yield
    redaction.redaction_key.cache_clear()


@pytest.mark.parametrize("name", ["api_key", "API_KEY", "hf_token", "Authorization", "x-api-key", "client.secret",
                                  "password", "openai_api_key", "key", "credentials"])  # fmt: skip
def test_secret_names(name):
    assert looks_secret(name)


@pytest.mark.parametrize("name", ["max_new_tokens", "pad_token_id", "api_key_env", "tokenizer", "top_k", "model",
                                  "keys_file", ""])  # fmt: skip
def test_names_that_are_not_secrets(name):
    assert not looks_secret(name)


def test_secrets_are_found_in_mappings_lists_argument_strings_json_and_urls():
    found = redact_secrets(
        {
            "api_key": SECRET,
            "und_args": f"model_version=gpt-4o,api_key={SECRET},max_new_tokens=16",
            "extra_body": {"headers": {"Authorization": f"Bearer {SECRET}"}},
            "quoted": f"token='{SECRET}' and secret: \"{SECRET}\"",
            "nested_json": json.dumps({"hf_token": SECRET, "steps": 4}),
            "base_url": f"https://user:{SECRET}@host:8000/v1",
            "list": [{"password": SECRET}],
            "seed": 3,
            "key": None,
        }
    )
    assert SECRET not in json.dumps(found)
    assert "max_new_tokens=16" in found["und_args"] and json.loads(found["nested_json"])["steps"] == 4
    assert found["base_url"].startswith("https://user:[REDACTED:") and found["base_url"].endswith("@host:8000/v1")
    assert found["seed"] == 3 and found["key"] is None


def test_the_keyed_hash_tells_two_keys_apart_is_stable_and_is_not_the_plain_hash():
    import hashlib

    one, two = redacted(SECRET), redacted(SECRET + "x")
    assert one != two and one == redacted(SECRET) and one.startswith("[REDACTED:")
    assert hashlib.sha256(SECRET.encode()).hexdigest()[:12] not in one
    assert redacted(one) == one and redact_text(f"api_key={one}") == f"api_key={one}"


def test_the_key_file_is_private_and_another_key_gives_other_hashes(tmp_path, monkeypatch):
    import stat

    first = redacted(SECRET)
    key_file = tmp_path / "cache" / "redaction.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    monkeypatch.setenv("LMMS_EVAL_UNIFY_CACHE", str(tmp_path / "other"))
    redaction.redaction_key.cache_clear()
    assert redacted(SECRET) != first
