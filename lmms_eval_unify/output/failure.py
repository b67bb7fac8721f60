"""Why a model output cannot be scored (shared by the record parser and the media reader)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OutputFailure:
    """Why an output cannot be scored: a short machine-readable reason and a human-readable detail."""

    reason: str
    detail: str = ""
