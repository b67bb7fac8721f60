"""The adapter API (``lmms_eval_unify.adapter``) exports every name its docstring documents."""

from __future__ import annotations

import re

from lmms_eval_unify import adapter

ROLE = re.compile(r":(?:class|func):`([^`]+)`")
LITERAL = re.compile(r"``([^`]+)``")
NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def documented_names(doc: str) -> set[str]:
    """Every (dotted) identifier written as :class:`X`, :func:`X` or ``X`` in ``doc``."""
    found = ROLE.findall(doc) + LITERAL.findall(doc)
    return {name for name in found if NAME.fullmatch(name)}


def test_docstring_lists_names():
    names = documented_names(adapter.__doc__ or "")
    assert {"DeadlineClient", "DeadlineExceeded", "redact", "read_body", "RETRYABLE_STATUS"} <= names
    assert "UnifiedModel.missing" in names
    assert "model_adapters/" not in names and "--model_args" not in names


def test_every_documented_name_is_exported():
    for name in sorted(documented_names(adapter.__doc__ or "")):
        head, *rest = name.split(".")
        assert head in adapter.__all__, f"{head} is documented but not in __all__"
        value = getattr(adapter, head)
        for part in rest:
            assert hasattr(value, part), f"{name} is documented but {part} is not an attribute"
            value = getattr(value, part)


def test_all_names_are_attributes():
    assert len(set(adapter.__all__)) == len(adapter.__all__)
    missing = [name for name in adapter.__all__ if not hasattr(adapter, name)]
    assert not missing


def test_star_import_gives_documented_names():
    namespace: dict[str, object] = {}
    exec("from lmms_eval_unify.adapter import *", namespace)
    for name in documented_names(adapter.__doc__ or ""):
        assert name.split(".")[0] in namespace
