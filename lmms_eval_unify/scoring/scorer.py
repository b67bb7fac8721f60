"""The one wrapper between lmms-eval's ``process_results`` and a benchmark's per-sample score.

A benchmark writes a pure ``score(doc, parsed, **params) -> Score`` (or ``OutputFailure`` for an output it
cannot use) and decorates it with :func:`scorer`. The decorated function is what a task YAML names::

    process_results: !function lmms_eval_unify.benchmarks.<benchmark>.scoring.<scorer>

It reads the model's response (``parse_output``), handles unsupported and failed outputs once (every metric
``None`` for unsupported, the scorer's failure values with the reason for a failed one), calls ``score`` and
builds the row lmms-eval logs: the metrics, ``invalid_outputs`` and ``details`` (with the judge log and the
generated image paths). ``UnifyTask`` binds the keyword parameters of ``score`` from the task's ``metadata``
(e.g. ``subtask``, ``variant``, ``judge``), so every task is one hop from its per-sample score.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lmms_eval_unify.output.record import OutputFailure, parse_output

if TYPE_CHECKING:
    from lmms_eval_unify.judges import JudgeResult

Values = Mapping[str, float | int | None]
"""Metric name -> value of one sample (``None``: the metric does not apply); read-only to the wrapper."""


@dataclass
class Score:
    """What a pure score returns: metric values, why the output was (partly) unusable ("" when it was
    fine), details for the samples log, and the judge's verdict when a judge was asked."""

    values: Values
    invalid: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    judge: JudgeResult | None = None

    @classmethod
    def judged(cls, result: JudgeResult, verdict: str, metric: str, **details: Any) -> Score:
        """``metric`` = the judge's ``verdict`` field; 0 with ``judge_invalid`` / ``judge_failed`` when its
        reply could not be parsed or it could not be reached."""
        if result.valid:
            return cls({metric: float(result.fields[verdict])}, "", details, result)
        return cls({metric: 0.0}, result.status, details, result)


def judge_log(result: JudgeResult) -> dict[str, Any]:
    """The judge entry of a sample's ``details``: the verdict, the raw reply when it was unusable, and
    ``model_mismatch`` when another model than the one asked answered."""
    log = result.to_dict()
    if result.valid:
        log["raw"] = None
    if not result.model_mismatch:  # only a mismatch is worth a key in every sample's record
        del log["model_mismatch"]
    return log


FailureValues = Callable[..., Values]
"""``failed(doc, **params)``: the metric values of an unusable output (default: every metric 0)."""


@dataclass(frozen=True)
class ScorerSpec:
    """What :func:`scorer` records on the ``process_results`` it builds (read by tasks and tests)."""

    metrics: tuple[str, ...]
    params: tuple[str, ...]
    required: tuple[str, ...]
    score: Callable[..., Score | OutputFailure]
    metrics_for: Callable[..., Sequence[str]] | None = None

    def metric_names(self, params: Mapping[str, Any]) -> tuple[str, ...]:
        """The per-sample metrics of a task whose metadata sets ``params``."""
        return tuple(self.metrics_for(**params)) if self.metrics_for else self.metrics


def _spec(
    score: Callable[..., Any],
    metrics: tuple[str, ...],
    metrics_for: Callable[..., Sequence[str]] | None = None,
) -> ScorerSpec:
    keyword = [p for p in inspect.signature(score).parameters.values() if p.kind is p.KEYWORD_ONLY]
    return ScorerSpec(
        metrics=metrics,
        params=tuple(p.name for p in keyword),
        required=tuple(p.name for p in keyword if p.default is p.empty),
        score=score,
        metrics_for=metrics_for,
    )


def scorer(
    *metrics: str,
    metrics_for: Callable[..., Sequence[str]] | None = None,
    failed: FailureValues | None = None,
    doc_fields: Callable[[Mapping], dict] | None = None,
) -> Callable[[Callable[..., Score | OutputFailure]], Callable[..., dict]]:
    """Turn ``score(doc, parsed, **params)`` into ``process_results(doc, results, **params)``.

    ``metrics`` are the per-sample metric keys the task's ``metric_list`` aggregates (besides
    ``invalid_outputs``), or ``metrics_for(**params)`` gives them when they depend on the parameters;
    ``failed`` gives their values for an unusable output; ``doc_fields(doc)`` adds
    columns to every row (e.g. a question id that pairs two tasks' samples).
    """

    def wrap(score: Callable[..., Score | OutputFailure]) -> Callable[..., dict]:
        spec = _spec(score, metrics, metrics_for)

        def failure_row(doc: Mapping, failure: OutputFailure, params: dict) -> dict:
            values = failed(doc, **params) if failed else dict.fromkeys(spec.metric_names(params), 0.0)
            return {**values, "invalid_outputs": failure.reason, "details": {"failure": failure.detail}}

        @functools.wraps(score)
        def process_results(doc: Mapping, results: Sequence[Any], **params: Any) -> dict:
            parsed = parse_output(results[0] if results else None)
            if parsed.unsupported:
                row = {
                    **dict.fromkeys(spec.metric_names(params)),
                    "invalid_outputs": "",
                    "details": {"unsupported": parsed.record.unsupported},
                }
            elif parsed.failure:
                row = failure_row(doc, parsed.failure, params)
            else:
                outcome = score(doc, parsed, **params)
                row = failure_row(doc, outcome, params) if isinstance(outcome, OutputFailure) else _row(outcome)
                if parsed.record.images:
                    row["details"]["generated_images"] = [str(path) for path in parsed.record.images]
            return {**row, **(doc_fields(doc) if doc_fields else {})}

        process_results.scorer = spec  # type: ignore[attr-defined]
        return process_results

    return wrap


def raw_scorer(*metrics: str) -> Callable[[Callable[..., dict]], Callable[..., dict]]:
    """Declare the ``metrics`` of a ``process_results(doc, results, **params)`` that reads the raw output
    itself (the shared Uni-MMMU puzzle scorer), so tasks and tests see it like a :func:`scorer`."""

    def declare(process_results: Callable[..., dict]) -> Callable[..., dict]:
        process_results.scorer = _spec(process_results, metrics)  # type: ignore[attr-defined]
        return process_results

    return declare


def _row(score: Score) -> dict:
    details = dict(score.details)
    if score.judge is not None:
        details["judge"] = judge_log(score.judge)
    return {**score.values, "invalid_outputs": score.invalid, "details": details}


def scorer_spec(process_results: Any) -> ScorerSpec | None:
    """The :class:`ScorerSpec` of a ``process_results`` built by :func:`scorer` (through partials too)."""
    while isinstance(process_results, functools.partial):
        process_results = process_results.func
    return getattr(process_results, "scorer", None)


def metadata_params(process_results: Any, metadata: Mapping | None, task: str) -> dict[str, Any]:
    """The keyword parameters of a task's scorer that its ``metadata`` sets; a required one that it does not
    set is a ``ValueError`` naming the task and the key."""
    spec = scorer_spec(process_results)
    if spec is None:
        return {}
    metadata = metadata or {}
    missing = [name for name in spec.required if name not in metadata]
    if missing:
        raise ValueError(
            f"{task}: its scorer {spec.score.__module__}.{spec.score.__name__} needs metadata "
            f"{', '.join(missing)} (set them under `metadata:` in the task YAML)"
        )
    return {name: metadata[name] for name in spec.params if name in metadata}
