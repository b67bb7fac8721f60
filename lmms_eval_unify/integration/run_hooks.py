"""The plugin's hooks around an lmms-eval run: run context, preflight, run status and exit code.

lmms-eval's CLI calls ``lmms_eval.evaluator.simple_evaluate(..., cli_args=args)`` before it builds the model.
:func:`install` (run by the task-index hook, so every ``lmms-eval`` process has it) wraps that function:

1. the run context (``--output_path``, model, tasks) is set, so media and the judge cache go under the run's
   output folder without re-parsing ``sys.argv``;
2. the preflight checks data, judges and metric weights of every requested plugin task, and the code, weights
   and device the requested unified model needs (the check its adapter declares), and stops with one listing
   before anything is built or generated (``LMMS_EVAL_UNIFY_SKIP_PREFLIGHT=1`` skips it); a malformed
   ``LMMS_EVAL_UNIFY_*`` variable stops it too, skipped or not (``lmms_eval_unify.env_vars``);
3. the outcome of every task is recorded; at exit one summary line is printed, and a CLI run whose model could
   not be built, whose tasks raised, or whose tasks produced no valid result exits with status 1 (2 when the
   preflight stopped it). lmms-eval itself exits 0 in all these cases;
4. the paper-level scores of every benchmark run are added to the results, per benchmark group
   (:mod:`lmms_eval_unify.integration.paper_scores`), from the run's samples: a run that did not ask for
   samples (``--log_samples``) is run with them and they are removed again before lmms-eval sees the results.
5. samples are never silently lost: every text of the logged samples is made encodable as UTF-8 (a model's
   lone surrogates become U+FFFD) before lmms-eval's samples writer sees it, and that writer (which logs a
   failure and goes on) is checked: a task whose samples file holds fewer rows than it logged is marked
   failed, naming the file, and the run exits non-zero.

lmms-eval catches every exception of an evaluation and returns normally, so the exit code is set by an
``atexit`` handler that ends the process with ``os._exit`` after flushing output, once all results are saved.
A Python caller of ``simple_evaluate`` gets exceptions instead (``PreflightError``) and reads
``lmms_eval_unify.integration.run_status.status()``; its process exit code is left alone.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import sys
from pathlib import Path
from typing import Any

from loguru import logger

from lmms_eval_unify.integration import run_status
from lmms_eval_unify.integration.paper_scores import add_paper_scores
from lmms_eval_unify.integration.preflight import (
    PreflightError,
    environment_problems,
    model_problems,
    render,
    run_preflight,
    skip_requested,
)
from lmms_eval_unify.integration.provenance import PROVENANCE_KEY, run_provenance
from lmms_eval_unify.integration.run_context import RunContext, set_current
from lmms_eval_unify.output.record import clean_text

EXIT_FAILED = 1
EXIT_PREFLIGHT = 2
_MARK = "_lmms_eval_unify_hooked"
_exit_code: int | None = None


def install() -> None:
    """Wrap ``lmms_eval.evaluator.simple_evaluate`` once per process and register the exit handler."""
    from lmms_eval import evaluator

    original = evaluator.simple_evaluate
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return _simple_evaluate(original, *args, **kwargs)

    setattr(wrapped, _MARK, True)
    evaluator.simple_evaluate = wrapped
    _check_samples_writer()
    atexit.register(_at_exit)


def _check_samples_writer() -> None:
    """Wrap ``EvaluationTracker.save_results_samples`` so that a samples file it failed to write is an error."""
    from lmms_eval.loggers.evaluation_tracker import EvaluationTracker

    original = EvaluationTracker.save_results_samples

    @functools.wraps(original)
    def save_results_samples(self: Any, task_name: str, samples: list) -> None:
        path = samples_file(self, task_name)
        before = count_rows(path) if path is not None else 0
        original(self, task_name, samples)
        if path is None or not samples:
            return
        written = count_rows(path) - before
        if written < len(samples):
            samples_not_written(task_name, path, written, len(samples))

    EvaluationTracker.save_results_samples = save_results_samples


def samples_file(tracker: Any, task_name: str) -> Path | None:
    """Where lmms-eval 0.7.3's ``EvaluationTracker`` writes the samples of ``task_name`` (None: not written)."""
    if not tracker.output_path:
        return None
    folder = Path(tracker.output_path) / tracker.general_config_tracker.model_name_sanitized
    return folder / f"{tracker.date_id}_samples_{task_name}.jsonl"


def count_rows(path: Path) -> int:
    """Complete lines of ``path`` (0 when it does not exist)."""
    try:
        with path.open("rb") as handle:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except OSError:
        return 0


def samples_not_written(task: str, path: Path, written: int, logged: int) -> None:
    """Record that ``task``'s samples file lacks rows: the task fails and the CLI run exits non-zero."""
    global _exit_code
    reason = f"samples file {path} holds {written} of its {logged} samples (lmms-eval's writer failed; see above)"
    logger.error("lmms-eval-unify: {}: {}", task, reason)
    status = run_status.status()
    status.task_failed(task, reason)
    if task in status.scored:
        status.scored.remove(task)
    _exit_code = _exit_code or EXIT_FAILED


def _is_main_process() -> bool:
    return int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) or 0) == 0


def _simple_evaluate(original: Any, *args: Any, **kwargs: Any) -> Any:
    global _exit_code
    cli_args = kwargs.get("cli_args")
    names = kwargs.get("tasks") or []
    set_current(
        RunContext(
            output_path=getattr(cli_args, "output_path", None),
            model=kwargs.get("model") if isinstance(kwargs.get("model"), str) else None,
            model_args=str(kwargs.get("model_args") or ""),
            tasks=[n for n in names if isinstance(n, str)],
        )
    )
    status = run_status.reset()
    task_manager = kwargs.get("task_manager")
    configs: dict[str, dict] = {}
    if task_manager is not None:
        from lmms_eval_unify.integration.preflight import leaf_task_configs

        try:
            configs = leaf_task_configs(task_manager, names)
        except Exception as exc:  # noqa: BLE001 - lmms-eval reports unknown/broken tasks itself
            logger.warning("lmms-eval-unify: could not expand the requested tasks: {}", exc)
    problems = environment_problems()  # first and always: the other checks read these variables
    if not problems and not skip_requested():
        build_args = {key: kwargs.get(key) for key in ("batch_size", "max_batch_size", "device")}
        problems = run_preflight(task_manager, names) if configs else []
        problems += model_problems(
            kwargs.get("model"), kwargs.get("model_args"), build_args, bool(kwargs.get("force_simple"))
        )
    if problems:
        status.run_error = f"preflight found {len(problems)} problem(s)"
        print(render(problems), file=sys.stderr, flush=True)
        if cli_args is not None:
            _exit_code = EXIT_PREFLIGHT
            raise SystemExit(EXIT_PREFLIGHT)
        raise PreflightError(render(problems))
    status.requested = sorted(configs)
    samples_asked = bool(kwargs.get("log_samples", True))  # lmms-eval's default logs them
    if configs and not args:  # keyword calls only (lmms-eval deprecates positional ones; its CLI uses keywords)
        kwargs = {**kwargs, "log_samples": True}  # the paper scores are computed from the samples
    try:
        results = original(*args, **kwargs)
    except Exception as exc:
        status.run_error = f"{type(exc).__name__}: {exc}"
        if cli_args is not None:
            _exit_code = EXIT_FAILED
        raise
    if results is not None:
        make_samples_encodable(results.get("samples"))
        record_outcome(status, results)
        results[PROVENANCE_KEY] = run_provenance()
        try:
            if configs and _is_main_process() and not kwargs.get("predict_only"):
                add_paper_scores(results, _recorded_model_name(kwargs.get("evaluation_tracker")))
        finally:
            if not samples_asked:
                drop_unasked_samples(results, bool(kwargs.get("baseline")))
    if cli_args is not None and not status.ok:
        _exit_code = EXIT_FAILED
    return results


def make_samples_encodable(value: Any) -> Any:
    """``value`` (the logged samples, in place where mutable) with every string made encodable as UTF-8
    (``clean_text``: lone surrogates become U+FFFD), dict keys included, so no writer fails on it."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        for key in list(value):
            item = make_samples_encodable(value[key])
            new_key = clean_text(key) if isinstance(key, str) else key
            if new_key is not key:
                del value[key]
            value[new_key] = item
    elif isinstance(value, list):
        value[:] = [make_samples_encodable(item) for item in value]
    elif isinstance(value, tuple):
        return tuple(make_samples_encodable(item) for item in value)
    return value


def drop_unasked_samples(results: dict, baseline: bool) -> None:
    """Remove the samples a run did not ask for, and what lmms-eval 0.7.3's ``simple_evaluate`` derives from
    them only when they are there: the ``efficiency`` summary and, with ``--baseline``, the ``paired_*``
    comparison of each task."""
    results.pop("samples", None)
    results.pop("efficiency", None)
    for metrics in results.get("results", {}).values() if baseline else ():
        for key in [k for k in metrics if k.startswith("paired_")]:
            del metrics[key]


def _recorded_model_name(evaluation_tracker: Any) -> str | None:
    """The model name lmms-eval writes as ``model_name`` in the results file (from ``--model_args``)."""
    return getattr(getattr(evaluation_tracker, "general_config_tracker", None), "model_name", None)


def record_outcome(status: run_status.RunStatus, results: dict) -> None:
    """Which tasks were scored and which failed, from ``simple_evaluate``'s results (main process)."""
    scored = results.get("results", {})
    groups = set(results.get("group_subtasks", {}))
    leaves = [t for t in results.get("configs", {}) if t not in groups]
    for task in sorted(set(status.requested) | set(leaves)):
        metrics = scored.get(task)
        n = (results.get("n-samples", {}).get(task) or {}).get("effective", 0)
        invalid = metrics.get("invalid_outputs,none", 0) if metrics else 0
        invalid = invalid if isinstance(invalid, int) else 0
        status.invalid_samples += invalid
        if task in status.failed:
            continue
        if metrics is None:
            status.task_failed(task, "no results")
        elif any(key.startswith("bypass,") for key in metrics):
            status.predicted.append(task)
        elif any(value == run_status.FAILED for value in metrics.values()):
            status.task_failed(task, "scoring failed")
        elif n == 0:
            status.task_failed(task, "no samples")
        elif invalid and invalid >= n:
            status.task_failed(task, f"all {n} samples invalid")
        else:
            status.scored.append(task)


def _at_exit() -> None:
    status = run_status.status()
    if not status.started or not _is_main_process():
        return
    print(status.summary(), file=sys.stderr, flush=True)
    if _exit_code and _exit_code != EXIT_PREFLIGHT:
        # lmms-eval returned normally after catching the failure: end with the failing status ourselves.
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(_exit_code)
