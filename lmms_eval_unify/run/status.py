"""What happened to each task of the evaluation in progress: scored, failed (and why), invalid samples.

lmms-eval 0.7.3 exits 0 when a model fails to build, a task raises, or every sample failed. The plugin's
hooks (``lmms_eval_unify.integration.run_hooks``) and task class (``UnifyTask``) report here; at the end the hooks print
one summary line and make the process exit non-zero when any requested task produced no results.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

SCORING_FAILED = "scoring_failed"
"""Per-sample metric value of a sample whose scorer raised: the task's aggregate becomes ``FAILED``."""
FAILED = "failed"
"""Aggregate value of a task that could not be scored (shown instead of a number in the results table)."""


@dataclass
class RunStatus:
    """Outcome of one evaluation (one ``simple_evaluate`` call)."""

    started: bool = False
    run_error: str | None = None
    requested: list[str] = field(default_factory=list)
    scored: list[str] = field(default_factory=list)
    predicted: list[str] = field(default_factory=list)
    """Tasks run with ``--predict_only``: outputs saved, not scored (``lmms-eval-unify score RUN_DIR``)."""
    failed: dict[str, str] = field(default_factory=dict)
    invalid_samples: int = 0
    resumed_samples: int = 0
    legend: list[str] = field(default_factory=list)
    """Lines printed after the summary: what the caveat codes of the run's paper scores mean
    (``paper_scores.legend_lines``)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def ok(self) -> bool:
        return self.run_error is None and not self.failed

    def task_failed(self, task: str, reason: str) -> None:
        """Record why ``task`` has no valid result (the first reason is kept)."""
        with self._lock:
            self.failed.setdefault(task, reason)

    def count_resumed(self, n: int = 1) -> None:
        with self._lock:
            self.resumed_samples += n

    def summary(self) -> str:
        """One line: tasks scored, tasks failed with why, samples invalid."""
        if self.run_error:
            return f"lmms-eval-unify: run FAILED before any task was scored: {self.run_error}"
        failed = "; ".join(f"{task}: {_short(why)}" for task, why in sorted(self.failed.items()))
        line = (
            f"lmms-eval-unify: {len(self.scored)} task(s) scored, {len(self.failed)} failed"
            f"{f' ({failed})' if failed else ''}, {self.invalid_samples} sample(s) invalid"
        )
        if self.predicted:
            line += (
                f", {len(self.predicted)} task(s) predicted only (score them with `lmms-eval-unify score "
                "<--output_path>`)"
            )
        if self.resumed_samples:
            line += f", {self.resumed_samples} sample(s) served from saved records"
        return line


def _short(text: str, limit: int = 160) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


_status = RunStatus()


def status() -> RunStatus:
    """The status of the evaluation in progress (or of the last one)."""
    return _status


def reset() -> RunStatus:
    """Start a new status (called when an evaluation starts)."""
    global _status
    _status = RunStatus(started=True)
    return _status
