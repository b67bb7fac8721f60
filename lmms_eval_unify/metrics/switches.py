"""The metric switches read from the environment, without importing torch: a run's provenance and the
leaderboard's manifest record them in processes that never load a backbone."""

from __future__ import annotations

from lmms_eval_unify.env_vars import read

TINY_METRICS_ENV = "LMMS_EVAL_UNIFY_TINY_METRICS"
"""``LMMS_EVAL_UNIFY_TINY_METRICS=1``: every metric on its tiny randomly initialised backbone (offline trials only;
every table, export and gallery made from such a run says it is not comparable to published numbers)."""


def tiny_metrics_on() -> bool:
    """Whether ``LMMS_EVAL_UNIFY_TINY_METRICS`` selects the tiny backbones (a malformed value raises
    ``env_vars.MalformedVariable``)."""
    return bool(read(TINY_METRICS_ENV))
