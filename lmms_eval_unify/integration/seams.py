"""The lmms-eval internals the plugin wraps or reads (its *seams*), checked so that a changed one fails loudly.

The plugin wraps four lmms-eval attributes and reads three shapes of its internals. If an lmms-eval release
changes one of them (a method renamed, results saved through another layer, read-only request arguments),
our code there simply stops being called: the run would still exit 0, without paper scores, samples guard,
provenance or write gate. So every seam is checked twice:

- **when it is installed** (plugin load, and the first ``TaskManager`` build for the run hooks): its target
  must exist with the parameters we use. A seam that fails this is *broken*: it is logged at once, naming the
  seam and the lmms-eval version; the run preflight refuses to start (exit 2, not skippable); the reads raise
  :class:`SeamError` where they are used;
- **at the end of an lmms-eval CLI run** (main process): every seam the run must have gone through was
  called. When it is expected is precise (:data:`SEAMS`, ``expected``); a wrapper that was never called makes
  the process exit 1, one line per seam, naming the seam, what the run lost and the lmms-eval version.

Only ``lmms-eval`` processes (its console script, ``python -m lmms_eval``, one rank of ``torchrun``/``accelerate
launch``) are ended by the check; a Python caller of ``simple_evaluate`` reads :func:`problems` itself.
"""

from __future__ import annotations

import atexit
import inspect
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from loguru import logger

TESTED_LMMS_EVAL = "0.7.3"
"""The lmms-eval release every test runs against (``constraints.txt``)."""
ACCEPTED_LMMS_EVAL = ">=0.7.3,<0.8"
"""The range ``pyproject.toml`` accepts: a change to a seam in it is a named failure, never a silent one."""
EXIT_SEAM = 1
"""Exit status of an lmms-eval run that bypassed a seam."""


class UnsupportedLmmsEvalError(RuntimeError):
    """lmms-eval's internals are not the shape this plugin was written against."""


class SeamError(UnsupportedLmmsEvalError):
    """One seam is not the shape we wrap or read (its message names the seam and the lmms-eval version)."""

    def __init__(self, seam: str, message: str) -> None:
        super().__init__(message)
        self.seam = seam


@dataclass
class Seam:
    """One lmms-eval attribute we wrap or read, and what this process has seen of it."""

    name: str
    target: str
    lost: str
    """What a run lacks when our code at this seam is not called."""
    expected: str
    """When a run must go through it (documentation; :func:`missed` implements it)."""
    installed: bool = False
    calls: int = 0
    expected_because: str | None = None
    broken: str | None = None
    """Why the seam is not the shape we use (found when it was installed or read)."""


def _seams() -> dict[str, Seam]:
    return {
        seam.name: seam
        for seam in (
            Seam(
                "task_index",
                "lmms_eval.tasks.TaskManager.initialize_tasks",
                "our task definitions and every run hook (they are installed from it)",
                "whenever an lmms-eval CLI process evaluated anything of ours (a plugin model served a request, a "
                "plugin task scored a sample) or reached lmms-eval's writers",
            ),
            Seam(
                "simple_evaluate",
                "lmms_eval.evaluator.simple_evaluate",
                "the preflight, the run status and exit code, the paper scores, the provenance and the writer lock",
                "as task_index",
            ),
            Seam(
                "results_writer",
                "lmms_eval.loggers.evaluation_tracker.EvaluationTracker.save_results_aggregated",
                "the gated, redacted results file and the check that it was written",
                "after simple_evaluate returned results to lmms-eval's CLI (its main process)",
            ),
            Seam(
                "samples_writer",
                "lmms_eval.loggers.evaluation_tracker.EvaluationTracker.save_results_samples",
                "the gated samples files and the samples guard (a task whose samples file lacks rows fails)",
                "after simple_evaluate returned results of at least one task to a CLI run with --log_samples "
                "and --output_path",
            ),
            Seam(
                "request_args",
                "lmms_eval.api.instance.Instance.args",
                "every request of a plugin model (read as ctx, gen_kwargs, doc_to_visual, doc_id, task, split)",
                "checked on every request a plugin model serves",
            ),
            Seam(
                "request_owner",
                "lmms_eval.api.instance.Instance.args[2].__self__",
                "which task built a request: lmms-eval's own tasks would get our JSON record instead of plain text",
                "when a plugin model served requests inside simple_evaluate: one at least must come from its task",
            ),
            Seam(
                "process_results",
                "lmms_eval.api.task.ConfigurableTask.process_results.__wrapped__",
                "scoring without lmms-eval's retry (a failing scorer would be tried 5 times per sample)",
                "checked at plugin load and on every sample a plugin task scores",
            ),
        )
    }


SEAMS: dict[str, Seam] = _seams()
_witnesses: set[str] = set()
_reported = False
_owner_asks = [0]
"""How many times :func:`task_of` was asked (a model that never asks, ``unify_replay``, needs no owner)."""
_lock = threading.Lock()


# ---- the registry -------------------------------------------------------------------------------------------
def lmms_eval_version() -> str:
    """The installed lmms-eval's version (``importlib.metadata``)."""
    try:
        return metadata.version("lmms-eval")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def reset() -> None:
    """Forget what this process has seen of runs: calls, expectations, witnesses, broken shapes (tests); which
    wrappers are installed stays."""
    global _reported
    installed = {name for name, seam in SEAMS.items() if seam.installed}
    SEAMS.update(_seams())
    for name in installed:
        SEAMS[name].installed = True
    _witnesses.clear()
    _reported = False


def mark_installed(name: str) -> None:
    """Our wrapper now stands at seam ``name``."""
    SEAMS[name].installed = True


def mark_called(name: str) -> None:
    """Our code at seam ``name`` ran (a wrapper was called, a read found the expected shape)."""
    with _lock:
        SEAMS[name].calls += 1


def expect(name: str, because: str) -> None:
    """This run must go through seam ``name`` (``because`` says why, in the failure message)."""
    with _lock:
        SEAMS[name].expected_because = SEAMS[name].expected_because or because


def witness(what: str) -> None:
    """Something of ours ran inside an evaluation: the task index and ``simple_evaluate`` must have run too."""
    if what not in _witnesses:
        with _lock:
            _witnesses.add(what)


def seam_error(name: str, problem: str) -> SeamError:
    """The error of seam ``name`` having ``problem`` (also recorded as broken, so the run cannot end 0)."""
    record_broken(name, problem)
    return SeamError(name, describe(name, problem))


def record_broken(name: str, problem: str) -> None:
    """Seam ``name`` is not the shape we use: log it once, naming the seam and the lmms-eval version."""
    seam = SEAMS[name]
    if seam.broken is None:
        seam.broken = problem
        logger.error("{}", describe(name, problem))


def describe(name: str, problem: str) -> str:
    """One line: lmms-eval's version, the seam, what is wrong with it, what the run loses, what to do."""
    return f"lmms-eval-unify: {what_changed(name, problem)}. Fix: {fix()}"


def fix() -> str:
    """What to do about a changed seam."""
    if lmms_eval_version() == TESTED_LMMS_EVAL:
        return (
            f"lmms-eval {TESTED_LMMS_EVAL} is the version this plugin is tested with, so something else in this "
            "environment replaced the seam (another plugin, a local patch): remove it, or report it"
        )
    return (
        f"install the lmms-eval this plugin is tested with (pip install 'lmms-eval=={TESTED_LMMS_EVAL}') or an "
        "lmms-eval-unify release that supports this lmms-eval"
    )


def what_changed(name: str, problem: str) -> str:
    """lmms-eval's version, the seam, what is wrong with it and what the run loses."""
    seam = SEAMS[name]
    return f"lmms-eval {lmms_eval_version()} changed seam {name} ({seam.target}): {problem}; the run loses {seam.lost}"


def missed() -> list[str]:
    """One line per seam this run should have gone through and did not."""
    because = {name: SEAMS[name].expected_because for name in SEAMS}
    if _witnesses:
        why = " and ".join(sorted(_witnesses))
        for name in ("task_index", "simple_evaluate"):
            because[name] = because[name] or why
    return [
        describe(name, f"{_never(seam)}, although {because[name]}")
        for name, seam in SEAMS.items()
        if because[name] and not seam.calls and not seam.broken
    ]


def _never(seam: Seam) -> str:
    if seam.installed:
        return "our wrapper was never called"
    return "our wrapper was never installed (the run hooks are installed from task_index), so never called"


def broken() -> list[str]:
    """One line per seam found broken."""
    return [describe(name, seam.broken) for name, seam in SEAMS.items() if seam.broken]


def problems() -> list[str]:
    """Every broken seam and every seam the run missed."""
    return broken() + missed()


# ---- one evaluation ----------------------------------------------------------------------------------------
@contextmanager
def evaluation() -> Iterator[None]:
    """One lmms-eval evaluation (inside our ``simple_evaluate`` wrapper). When it ends normally, a plugin model that
    asked for the tasks of requests (:func:`task_of`) must have seen at least one come from its task
    (``request_owner``); requests made in code
    (a ``composed`` model asking its understanding model) need not."""
    asked, owned = _owner_asks[0], SEAMS["request_owner"].calls
    yield
    if _owner_asks[0] > asked and SEAMS["request_owner"].calls == owned:
        raise seam_error(
            "request_owner",
            "no request a plugin model served inside simple_evaluate had a doc_to_visual bound to the task that "
            "built it",
        )


# ---- shape checks ------------------------------------------------------------------------------------------
def _parameters(function: Any) -> list[str]:
    return list(inspect.signature(function).parameters)


def _missing_parameters(function: Any, needed: list[str]) -> str | None:
    """What is wrong with ``function``'s parameters, None when it takes every one of ``needed``."""
    if not callable(function):
        return "it is missing" if function is None else f"it is {type(function).__name__}, not a function"
    try:
        found = _parameters(function)
    except (TypeError, ValueError):
        return "its signature cannot be read"
    lacking = [name for name in needed if name not in found]
    return f"it takes ({', '.join(found)}), without {', '.join(lacking)}" if lacking else None


def _task_index_problem() -> str | None:
    from lmms_eval.tasks import TaskManager

    if not hasattr(TaskManager, "_get_task_and_group"):
        return "TaskManager has no _get_task_and_group"
    return _missing_parameters(getattr(TaskManager, "initialize_tasks", None), ["include_path", "include_defaults"])


SIMPLE_EVALUATE_PARAMETERS = [
    "model", "model_args", "tasks", "batch_size", "max_batch_size", "device", "log_samples", "evaluation_tracker",
    "task_manager", "predict_only", "datetime_str", "cli_args", "force_simple", "baseline",
]  # fmt: skip
"""The keyword arguments of ``simple_evaluate`` our wrapper reads."""


def _simple_evaluate_problem() -> str | None:
    from lmms_eval import evaluator

    return _missing_parameters(getattr(evaluator, "simple_evaluate", None), SIMPLE_EVALUATE_PARAMETERS)


def _writer_problem(name: str, parameters: list[str]) -> str | None:
    from lmms_eval.loggers.evaluation_tracker import EvaluationTracker

    problem = _missing_parameters(getattr(EvaluationTracker, name, None), parameters)
    tracker = _missing_parameters(EvaluationTracker, ["output_path", "push_results_to_hub", "push_samples_to_hub"])
    return problem or (f"EvaluationTracker: {tracker}" if tracker else None)


def _request_args_problem() -> str | None:
    from lmms_eval.api.instance import Instance

    if not isinstance(getattr(Instance, "args", None), property):
        return "Instance has no args property"
    return _missing_parameters(Instance, ["request_type", "arguments", "idx", "metadata"])


def _process_results_problem() -> str | None:
    from lmms_eval.api.task import ConfigurableTask

    try:
        _unwrapped(ConfigurableTask.process_results)
    except ValueError as problem:
        return str(problem)
    return None


SHAPE_CHECKS: dict[str, Callable[[], str | None]] = {
    "task_index": _task_index_problem,
    "simple_evaluate": _simple_evaluate_problem,
    "results_writer": lambda: _writer_problem("save_results_aggregated", ["results", "samples", "datetime_str"]),
    "samples_writer": lambda: _writer_problem("save_results_samples", ["task_name", "samples"]),
    "request_args": _request_args_problem,
    "process_results": _process_results_problem,
}
AT_PLUGIN_LOAD = ("task_index", "request_args", "process_results", "results_writer", "samples_writer")
"""The seams checked when lmms-eval loads the plugin; ``simple_evaluate`` is checked when the run hooks are
installed (lmms-eval loads plugins while ``lmms_eval.evaluator`` is still being imported)."""


def check(name: str) -> bool:
    """Whether seam ``name`` has the shape we use (else it is recorded broken and logged)."""
    try:
        problem = SHAPE_CHECKS[name]()
    except ImportError as exc:
        problem = f"cannot import it ({exc})"
    if problem:
        record_broken(name, problem)
    return not SEAMS[name].broken


def check_at_plugin_load() -> list[str]:
    """Check every seam importable at plugin load; the names of the broken ones."""
    return [name for name in AT_PLUGIN_LOAD if not check(name)]


# ---- the reads -------------------------------------------------------------------------------------------
def generation_arguments(request: Any) -> tuple:
    """``request.args`` of a generation request, ``(ctx, gen_kwargs, doc_to_visual, doc_id, task, split)``. Raises
    :class:`SeamError` naming the seam when lmms-eval hands another shape."""
    arguments = getattr(request, "args", None)
    if not (isinstance(arguments, tuple) and len(arguments) == 6 and callable(arguments[2])):
        raise seam_error("request_args", f"a request's args are {_shape(arguments)}, not "
                                         "(ctx, gen_kwargs, doc_to_visual, doc_id, task, split)")  # fmt: skip
    mark_called("request_args")
    witness("a plugin model served a request")
    return arguments


def task_of(request: Any) -> Any | None:
    """The lmms-eval task that built ``request`` (the owner of its bound ``doc_to_visual``); None for a request
    made in code (tests, ``check-adapter``, ``composed``). An evaluation in which no request had one fails
    (:func:`evaluation`): lmms-eval's own tasks would have been answered as ours."""
    from lmms_eval.api.task import ConfigurableTask

    with _lock:
        _owner_asks[0] += 1
    arguments = getattr(request, "args", None)
    doc_to_visual = arguments[2] if isinstance(arguments, tuple) and len(arguments) > 2 else None
    owner = getattr(doc_to_visual, "__self__", None)
    if isinstance(owner, ConfigurableTask):
        mark_called("request_owner")
        return owner
    return None


def _shape(value: Any) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)}"
    return f"{type(value).__module__}.{type(value).__qualname__}"


def _unwrapped(process_results: Any) -> Callable:
    """lmms-eval's ``process_results`` without its tenacity retry: the function under one tenacity decorator, or
    the function itself when it has no decorator at all. Any other shape is a ``ValueError`` naming it."""
    inner = getattr(process_results, "__wrapped__", None)
    if inner is None and hasattr(process_results, "retry"):
        raise ValueError("it retries, but has no __wrapped__ to call it once")
    if inner is not None and not _is_tenacity(process_results):
        raise ValueError(f"its decorator is {_code_of(process_results)}, not a tenacity retry (we would skip it)")
    if inner is not None and hasattr(inner, "__wrapped__"):
        raise ValueError(f"the function under its retry is decorated again ({_code_of(inner)})")
    function = inner if inner is not None else process_results
    problem = _missing_parameters(function, ["self", "doc", "results", "full_docs"])
    if problem:
        raise ValueError(problem)
    return function


def _is_tenacity(function: Any) -> bool:
    """Whether ``function`` is a wrapper made by tenacity's ``retry`` (its code lives in the tenacity package)."""
    return hasattr(function, "retry") and Path(_code_of(function)).parent.name == "tenacity"


def _code_of(function: Any) -> str:
    code = getattr(function, "__code__", None)
    return code.co_filename if code is not None else _shape(function)


def unwrapped_process_results() -> Callable:
    """lmms-eval's ``ConfigurableTask.process_results`` called once (no retry), for our tasks' scorers; when it has
    another shape, a function raising :class:`SeamError` (each sample then fails its scoring, naming the seam)."""
    from lmms_eval.api.task import ConfigurableTask

    try:
        function = _unwrapped(ConfigurableTask.process_results)
    except ValueError as problem:
        error = seam_error("process_results", str(problem))

        def broken_process_results(self: Any, doc: dict, results: list, full_docs: Any = None) -> dict:
            raise error

        return broken_process_results

    def process_results_once(self: Any, doc: dict, results: list, full_docs: Any = None) -> dict:
        mark_called("process_results")
        witness("a plugin task scored a sample")
        return function(self, doc, results, full_docs=full_docs)

    return process_results_once


# ---- the end of an lmms-eval run ---------------------------------------------------------------------------
def lmms_eval_cli() -> bool:
    """Whether this process is lmms-eval's CLI: its console script, ``python -m lmms_eval`` (so one rank of
    ``torchrun``/``accelerate launch -m lmms_eval``)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return Path(sys.argv[0] if sys.argv else "").stem == "lmms-eval" or getattr(spec, "name", None) in (
        "lmms_eval",
        "lmms_eval.__main__",
    )


def is_main_process() -> bool:
    return int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) or 0) == 0


def report_at_exit() -> list[str]:
    """At the end of an lmms-eval CLI process (main rank), once: print every seam problem to stderr and return
    them; elsewhere, nothing."""
    global _reported
    if _reported or not lmms_eval_cli() or not is_main_process():
        return []
    _reported = True
    found = problems()
    for line in found:
        print(line, file=sys.stderr, flush=True)
    return found


def _at_exit() -> None:
    """End an lmms-eval CLI process that bypassed or broke a seam with :data:`EXIT_SEAM` (when the run hooks'
    handler has not done so: they are never installed when the task-index seam is bypassed)."""
    if report_at_exit():
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(EXIT_SEAM)


_registered = False


def register_exit_check() -> None:
    """Register the end-of-run check once per process (at plugin load)."""
    global _registered
    if not _registered:
        atexit.register(_at_exit)
        _registered = True
