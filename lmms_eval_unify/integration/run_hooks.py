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
   Their caveats are short codes in lmms-eval's tables, spelt out once after the summary line at exit.
5. samples are never silently lost: every text of the logged samples is made encodable as UTF-8 (a model's
   lone surrogates become U+FFFD) before lmms-eval's samples writer sees it, and that writer (which logs a
   failure and goes on) is checked: a task whose samples file holds fewer rows than it logged is marked
   failed, naming the file, and the run exits non-zero;
6. nothing is written through a symlink: the run holds the writer lock of its ``--output_path`` (a second run or
   ``score`` there waits; the temporaries an interrupted run left are removed, and said so), the preflight refuses
   a symlink, FIFO or device standing at a folder or file the run will write (``output_problems``, exit 2, never
   skipped), and lmms-eval's results and samples files are written through the write gate
   (:mod:`lmms_eval_unify.run.files`: a refused file fails the run, exit 1); secrets in the model
   arguments are redacted from the results before they are saved.

7. every wrapper here and the task-index hook is a seam (:mod:`lmms_eval_unify.integration.seams`): each is checked
   when installed, and a CLI run that should have gone through one and did not (a changed lmms-eval calling
   around it) exits 1, naming the seam and the lmms-eval version, instead of silently losing what it does.

lmms-eval catches every exception of an evaluation and returns normally, so the exit code is set by an
``atexit`` handler that ends the process with ``os._exit`` after flushing output, once all results are saved.
A Python caller of ``simple_evaluate`` gets exceptions instead (``PreflightError``) and reads
``lmms_eval_unify.run.status.status()``; its process exit code is left alone.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import sys
from pathlib import Path
from typing import Any

from loguru import logger

from lmms_eval_unify.integration import seams
from lmms_eval_unify.integration.paper_scores import add_paper_scores, legend_lines
from lmms_eval_unify.integration.preflight import (
    PreflightError,
    environment_problems,
    model_problems,
    output_problems,
    render,
    run_preflight,
    seam_problems,
    skip_requested,
)
from lmms_eval_unify.output.record import clean_text
from lmms_eval_unify.run import status as run_status
from lmms_eval_unify.run.context import RunContext, set_current
from lmms_eval_unify.run.files import (
    count_rows,
    media_folders,
    redact_model_args,
    results_name,
    run_files,
    run_root,
    samples_path,
    save_results,
    save_samples,
)
from lmms_eval_unify.run.provenance import PROVENANCE_KEY, run_provenance
from lmms_eval_unify.writes import FolderBusy, WriteRefused, check_writable, folder_lock

EXIT_FAILED = 1
EXIT_PREFLIGHT = 2
_MARK = "_lmms_eval_unify_hooked"
_exit_code: int | None = None
_run_locks = contextlib.ExitStack()
"""The writer locks of the run's output folders, released at exit."""
_locked: set[Path] = set()
_installed = False


def install() -> None:
    """Wrap ``lmms_eval.evaluator.simple_evaluate`` and lmms-eval's writers once per process (each seam checked
    first: a broken one is left alone, and the preflight refuses the run) and register the exit handler."""
    global _installed
    from lmms_eval import evaluator

    if _installed or getattr(evaluator.simple_evaluate, _MARK, False):
        return
    _installed = True
    if seams.check("simple_evaluate"):
        original = evaluator.simple_evaluate

        @functools.wraps(original)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            seams.mark_called("simple_evaluate")
            return _simple_evaluate(original, *args, **kwargs)

        setattr(wrapped, _MARK, True)
        evaluator.simple_evaluate = wrapped
        seams.mark_installed("simple_evaluate")
    _guard_tracker_writers()
    atexit.register(_at_exit)


def _guard_tracker_writers() -> None:
    """Replace the local part of ``EvaluationTracker``'s two writers by the gated ones of
    :mod:`lmms_eval_unify.run.files` (same bytes, nothing written through a symlink, the results file
    atomic); a file the gate refuses, or a samples file holding fewer rows than were logged, fails its task or the
    run. A run that pushes to the Hub keeps lmms-eval's writer, after the same check of what stands at the file."""
    from lmms_eval.loggers.evaluation_tracker import EvaluationTracker

    results_writer = EvaluationTracker.save_results_aggregated
    samples_writer = EvaluationTracker.save_results_samples

    @functools.wraps(results_writer)
    def save_results_aggregated(self: Any, results: dict, samples: dict | None, datetime_str: str) -> None:
        seams.mark_called("results_writer")
        seams.witness("lmms-eval's results writer was called")
        if not self.output_path:
            return results_writer(self, results, samples, datetime_str)
        if self.push_results_to_hub:
            date_id = datetime_str.replace(":", "-")
            path = run_root(self.output_path) / self.general_config_tracker.model_name_sanitized / results_name(date_id)
            if (refused := refusal(path, self.output_path)) is None:
                return results_writer(self, results, samples, datetime_str)
        else:
            refused = save_results(self, results, samples, datetime_str)
        if refused is not None:
            results_not_written(refused)
        return None

    @functools.wraps(samples_writer)
    def save_results_samples(self: Any, task_name: str, samples: list) -> None:
        seams.mark_called("samples_writer")
        seams.witness("lmms-eval's samples writer was called")
        if not self.output_path:
            return samples_writer(self, task_name, samples)
        path = samples_path(self, task_name)
        root = run_root(self.output_path)
        before = count_rows(path, root)
        if self.push_samples_to_hub:
            if (refused := refusal(path, root)) is None:
                samples_writer(self, task_name, samples)
        else:
            refused = save_samples(self, task_name, samples)
        if not samples:
            return None
        written = count_rows(path, root) - before
        if refused is not None or written < len(samples):
            samples_not_written(task_name, path, written, len(samples), refused)
        return None

    if seams.check("results_writer"):
        EvaluationTracker.save_results_aggregated = save_results_aggregated
        seams.mark_installed("results_writer")
    if seams.check("samples_writer"):
        EvaluationTracker.save_results_samples = save_results_samples
        seams.mark_installed("samples_writer")


def refusal(path: Path, root: str | os.PathLike[str]) -> WriteRefused | None:
    """Why the write gate would refuse ``path`` inside the real ``root`` now, or None."""
    try:
        check_writable(path, run_root(root))
    except WriteRefused as refused:
        return refused
    return None


def samples_file(tracker: Any, task_name: str) -> Path | None:
    """Where lmms-eval 0.7.3's ``EvaluationTracker`` writes the samples of ``task_name`` (None: not written)."""
    if not tracker.output_path:
        return None
    return samples_path(tracker, task_name)


def results_not_written(refused: WriteRefused) -> None:
    """Record that the gate refused the run's results file: every task it would have held fails (the run's
    error when none had), the run exits 1, naming the file and why."""
    global _exit_code
    reason = f"results file not written: {refused}"
    logger.error("lmms-eval-unify: {}", reason)
    status = run_status.status()
    held = [*status.scored, *status.predicted]
    for task in held:
        status.task_failed(task, reason)
    status.scored.clear()
    status.predicted.clear()
    if not held:
        status.run_error = reason
    _exit_code = _exit_code or EXIT_FAILED


def samples_not_written(task: str, path: Path, written: int, logged: int, refused: WriteRefused | None = None) -> None:
    """Record that ``task``'s samples file lacks rows (``refused``: the write gate refused it): the task fails and
    the CLI run exits non-zero."""
    global _exit_code
    why = f"the write gate refused it: {refused.reason}: {refused.detail}" if refused else "its writer failed"
    reason = f"samples file {path} holds {written} of its {logged} samples ({why})"
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
    output_path = getattr(cli_args, "output_path", None)
    task_manager = kwargs.get("task_manager")
    configs: dict[str, dict] = {}
    if task_manager is not None:
        from lmms_eval_unify.integration.preflight import leaf_task_configs

        try:
            configs = leaf_task_configs(task_manager, names)
        except Exception as exc:  # noqa: BLE001 - lmms-eval reports unknown/broken tasks itself
            logger.warning("lmms-eval-unify: could not expand the requested tasks: {}", exc)
    problems = environment_problems() + seam_problems()  # first and always: the other checks rely on both
    if not problems and cli_args is not None and output_path and _is_main_process():
        try:  # one writer per output folder: a second run waits for this one
            hold_run_lock(output_path)
        except (FolderBusy, WriteRefused) as exc:
            status.run_error = str(exc)
            print(f"lmms-eval-unify: {exc}", file=sys.stderr, flush=True)
            _exit_code = EXIT_PREFLIGHT
            raise SystemExit(EXIT_PREFLIGHT) from None
    if not problems and output_path:  # always: what stands where the run writes
        tasks = [*configs, *(n for n in names if isinstance(n, str) and n not in configs)]
        files = run_files(output_path, kwargs.get("model_args"), kwargs.get("datetime_str"), tasks)
        folders = media_folders(output_path, kwargs.get("model_args"))
        problems = output_problems(files, run_root(output_path), folders)
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
        with seams.evaluation():
            results = original(*args, **kwargs)
    except Exception as exc:
        status.run_error = f"{type(exc).__name__}: {exc}"
        if cli_args is not None:
            _exit_code = EXIT_FAILED
        raise
    if results is not None:
        redact_model_args(results, kwargs.get("model_args"), cli_args)
        make_samples_encodable(results.get("samples"))
        record_outcome(status, results)
        results[PROVENANCE_KEY] = run_provenance(results.get("configs") or {})
        try:
            if configs and _is_main_process() and not kwargs.get("predict_only"):
                add_paper_scores(results, _recorded_model_name(kwargs.get("evaluation_tracker")))
                status.legend = legend_lines(results)
        finally:
            if not samples_asked:
                drop_unasked_samples(results, bool(kwargs.get("baseline")))
    if cli_args is not None and not status.ok:
        _exit_code = EXIT_FAILED
    if cli_args is not None and results is not None:
        expect_writers(cli_args, results)
    return results


def expect_writers(cli_args: Any, results: dict) -> None:
    """lmms-eval's CLI (main process) saves the results ``simple_evaluate`` returned, and the samples of each of
    their tasks when the run logs samples to an output path: our writers must see them."""
    seams.expect("results_writer", "simple_evaluate returned results to lmms-eval's CLI")
    tasks = len(results.get("configs") or {})
    if tasks and getattr(cli_args, "log_samples", False) and getattr(cli_args, "output_path", None):
        seams.expect(
            "samples_writer",
            f"simple_evaluate returned {tasks} task(s) to a CLI run with --log_samples and --output_path",
        )


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


def hold_run_lock(output_path: str) -> None:
    """Hold the writer lock of the run's ``--output_path`` until the process ends (``writes.folder_lock``): a
    second run or ``score`` on the same folder waits for it; the temporaries an interrupted run left there are
    removed. Held once per folder per process."""
    root = run_root(output_path)
    if root not in _locked:
        _run_locks.enter_context(folder_lock(output_path, "lmms-eval"))
        _locked.add(root)


def _at_exit() -> None:
    _run_locks.close()
    _locked.clear()
    status = run_status.status()
    ran_here = status.started and _is_main_process()
    if ran_here:
        sys.stdout.flush()  # lmms-eval's tables first: the legend explains their caveat codes
        print("\n".join([status.summary(), *status.legend]), file=sys.stderr, flush=True)
    code = _exit_code if ran_here else None
    if seams.report_at_exit() and code != EXIT_PREFLIGHT:  # an lmms-eval CLI run that went around our hooks
        code = code or seams.EXIT_SEAM
    if code and code != EXIT_PREFLIGHT:
        # lmms-eval returned normally after catching the failure: end with the failing status ourselves.
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(code)
