"""Robust extraction of answers from free model text: option letters and numbers.

Replaces the upstream habits of taking the first capital letter anywhere (which reads the "I" of "I think")
or crashing on unparseable output. Extraction returns ``None`` when the text does not commit to one answer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

_EXPLICIT = [
    r"\\boxed\{\s*\(?([A-Za-z])\)?\s*\}",
    r"(?:final\s+)?answer\s*(?:is|:|：)?\s*[\(\[\*]*\s*([A-Za-z])\b(?![\'’])",
    r"(?:option|choice)\s*[\(\[]?([A-Za-z])\b",
    r"^\s*[\(\[\*]*([A-Za-z])\s*[\)\]\*]*\s*(?:[\.:：\)]|$)",
]
_OPTION_LABEL = re.compile(r"^\s*[\(\[]?([A-Za-z])\s*[\)\]\.:：]\s*")


def normalise_text(text: str) -> str:
    """NFKC (full-width "（Ａ）" becomes "(A)"), collapsed whitespace, no markdown emphasis."""
    text = unicodedata.normalize("NFKC", text or "")
    return re.sub(r"\s+", " ", text.replace("**", " ").replace("__", " ")).strip()


def split_option(option: str) -> tuple[str | None, str]:
    """``"A. cat"``, ``"A: cat"``, ``"(A) cat"``, ``"（A）cat"`` -> ``("A", "cat")``; unlabelled -> ``(None, text)``."""
    normal = normalise_text(option)
    match = _OPTION_LABEL.match(normal)
    if not match:
        return None, normal
    return match.group(1).upper(), normal[match.end() :].strip()


def extract_choice(text: str, labels: Sequence[str], option_texts: Sequence[str] | None = None) -> str | None:
    """The option label a free-text answer commits to, or ``None``.

    Order: an explicit marker ("Answer: B", "\\boxed{B}", "(B)" or "B." at the start; the last explicit
    marker wins); then the text of exactly one option; then exactly one distinct standalone label.
    """
    valid = [label.upper() for label in labels]
    normal = normalise_text(text)
    for pattern in _EXPLICIT:
        found = [m.upper() for m in re.findall(pattern, normal, flags=re.IGNORECASE | re.MULTILINE)]
        found = [m for m in found if m in valid]
        if found:
            return found[-1]
    if option_texts:
        lowered = normal.lower()
        hits = {
            label
            for label, option in zip(valid, option_texts, strict=False)
            if (body := split_option(option)[1].lower()) and re.search(rf"(?<!\w){re.escape(body)}(?!\w)", lowered)
        }
        if len(hits) == 1:
            return hits.pop()
    standalone = {m for m in re.findall(r"(?<![A-Za-z'’])([A-Z])(?![A-Za-z'’])", normal) if m in valid and m != "I"}
    return standalone.pop() if len(standalone) == 1 else None


_NUMBER = re.compile(r"[-+]?\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?%?")


def extract_number(text: str) -> float | None:
    """The last number in the text (commas and a trailing % allowed), or ``None``."""
    matches = _NUMBER.findall(normalise_text(text))
    if not matches:
        return None
    token = matches[-1].replace(",", "")
    scale = 0.01 if token.endswith("%") else 1.0
    try:
        return float(token.rstrip("%")) * scale
    except ValueError:
        return None
