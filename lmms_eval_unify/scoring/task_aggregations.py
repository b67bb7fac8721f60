"""The ``aggregation`` functions task YAMLs name in their ``metric_list`` (lmms-eval calls them per task)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from loguru import logger


def failure_reason(item: object) -> str:
    """The failure reason of a per-sample metric value used for ``invalid_outputs`` ("" when valid)."""
    return item if isinstance(item, str) else ""


def count_invalid(items: Sequence[str]) -> int:
    """Aggregation for the ``invalid_outputs`` metric: how many samples failed, with reasons logged."""
    reasons = Counter(failure_reason(item) for item in items if failure_reason(item))
    if reasons:
        logger.warning(
            "{} of {} outputs could not be scored and count as 0: {}",
            sum(reasons.values()),
            len(items),
            ", ".join(f"{reason} x{n}" for reason, n in reasons.most_common()),
        )
    return sum(reasons.values())


def mean_supported(items: Sequence[float | None]) -> float | str:
    """Mean of per-sample scores; ``"-"`` when the model could not run the task (all items ``None``)."""
    values = [float(item) for item in items if item is not None]
    return sum(values) / len(values) if values else "-"
