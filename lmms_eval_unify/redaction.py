"""Secrets are never stored: what a model argument, header or nested argument string holds under a secret-looking
name is replaced by a keyed hash before anything is written or printed.

A name looks secret when its last word (split at ``_``, ``-`` and ``.``, any case) is one of :data:`SECRET_WORDS`:
``api_key``, ``hf_token``, ``Authorization``, ``x-api-key`` are; ``max_new_tokens``, ``pad_token_id`` and
``api_key_env`` (the *name* of a variable) are not. Values are searched in mappings, lists, nested argument
strings (``und_args="model=x,api_key=sk-…"``, JSON objects in strings) and URLs (a password in
``https://user:pw@host``). Each secret becomes ``[REDACTED:<12 hex>]``, the HMAC-SHA256 of the secret under this
machine's redaction key (``redaction.key`` in the cache folder, made on first use, readable by its owner only), so
two configurations with two keys stay two configurations without revealing either. Copy that file to other
machines whose runs should count as the same configuration.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from lmms_eval_unify.env_vars import read

SECRET_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "authorization", "auth", "credential", "credentials"}
)
REDACTED = "[REDACTED:{}]"
_WORDS = re.compile(r"[_\-.]+")
_PAIR = re.compile(r"(?P<name>[A-Za-z][\w.-]*)(?P<sep>\s*[=:]\s*)(?P<value>\"[^\"]*\"|'[^']*'|[^,;\s}]+)")
_URL_PASSWORD = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^/@:\s]*):(?P<password>[^/@\s]+)@", re.I)


def looks_secret(name: object) -> bool:
    """Whether ``name`` names a secret (module docstring)."""
    words = [word for word in _WORDS.split(str(name).strip().lower()) if word]
    return bool(words) and words[-1] in SECRET_WORDS


def cache_folder() -> Path:
    """Where the redaction key lives: ``$LMMS_EVAL_UNIFY_CACHE``, else ``~/.cache/lmms_eval_unify``."""
    return Path(read("LMMS_EVAL_UNIFY_CACHE") or Path.home() / ".cache" / "lmms_eval_unify")


@cache
def redaction_key() -> bytes:
    """This machine's redaction key, made on first use (0600, written once: a concurrent maker's key wins)."""
    path = cache_folder() / "redaction.key"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(descriptor, "w", encoding="ascii") as handle:
                handle.write(secrets.token_hex(32))
    return bytes.fromhex(path.read_text(encoding="ascii").strip())


def redacted(secret: str) -> str:
    """``[REDACTED:<12 hex of the keyed hash>]``; an already redacted value stays as it is."""
    if secret.startswith("[REDACTED:"):
        return secret
    return REDACTED.format(hmac.new(redaction_key(), secret.encode("utf-8"), hashlib.sha256).hexdigest()[:12])


def redact_text(text: str) -> str:
    """``text`` with the values of secret-named ``name=value`` / ``name: value`` pairs and URL passwords
    redacted; a JSON object in the text is redacted as data."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return json.dumps(redact_secrets(parsed), ensure_ascii=False)

    def pair(match: re.Match[str]) -> str:
        value = match["value"]
        quote = value[0] if value[:1] in "\"'" and len(value) > 1 else ""
        inner = value[1:-1] if quote else value
        if looks_secret(match["name"]):
            inner = redacted(inner)
        elif quote:  # a nested argument string: its own pairs
            inner = redact_text(inner)
        return f"{match['name']}{match['sep']}{quote}{inner}{quote}"

    text = _URL_PASSWORD.sub(lambda m: f"{m['scheme']}{m['user']}:{redacted(m['password'])}@", text)
    return _PAIR.sub(pair, text)


def redact_secrets(value: Any) -> Any:
    """``value`` (mappings, lists, strings, anything else as it is) with every secret redacted: the value of a
    secret-named key whole, and secrets inside strings (:func:`redact_text`)."""
    if isinstance(value, Mapping):
        return {
            key: (_redact_whole(item) if looks_secret(key) else redact_secrets(item)) for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(redact_secrets(item) for item in value)
    if isinstance(value, str):
        return redact_text(value)
    return value


def _redact_whole(value: Any) -> Any:
    if value is None or value == "" or isinstance(value, bool):
        return value
    if isinstance(value, Mapping | list | tuple):
        return redact_secrets(value)
    return redacted(str(value))
