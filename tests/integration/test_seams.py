"""Hooks that fail loudly (issue "hooks into lmms-eval that fail loudly", item 6): every lmms-eval seam the plugin
wraps or reads is checked when installed, and a run that goes around one ends non-zero naming the seam and the
lmms-eval version. Each seam is bypassed here in turn (its attribute put back, or the reader shown another shape)."""

from __future__ import annotations

import functools
import logging
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pytest
from cli_runs import offline_env
from conftest import make_request
from lmms_eval import evaluator
from lmms_eval.api.instance import Instance
from lmms_eval.api.task import ConfigurableTask
from lmms_eval.loggers.evaluation_tracker import EvaluationTracker
from lmms_eval.tasks import TaskManager
from log_capture import logged

from lmms_eval_unify.integration import plugin, run_hooks, seams
from lmms_eval_unify.integration.preflight import PreflightError
from lmms_eval_unify.integration.seams import SeamError
from lmms_eval_unify.integration.task import UnifyTask
from lmms_eval_unify.puzzles.dataset import write_puzzles
from lmms_eval_unify.run import context as run_context
from lmms_eval_unify.run import status as run_status
from lmms_eval_unify.run.paths import tasks_path

VERSION = f"lmms-eval {metadata.version('lmms-eval')}"
WRAPPERS = ("task_index", "simple_evaluate", "results_writer", "samples_writer")


@pytest.fixture(autouse=True)
def fresh_seams(monkeypatch):
    """Each test starts from a process that has seen no run (the wrappers stay installed) and leaves it so."""
    plugin.install_task_index()
    run_hooks.install()
    seams.reset()
    monkeypatch.setattr(run_hooks, "_exit_code", None)
    monkeypatch.setattr(run_status, "_status", run_status.RunStatus())
    monkeypatch.setattr(run_context, "_current", None)
    yield
    seams.reset()


@pytest.fixture
def errors():
    with logged("ERROR") as caught:
        yield caught


def names_seam(line: str, name: str) -> bool:
    return f"seam {name} ({seams.SEAMS[name].target})" in line and VERSION in line


# ---- shapes, checked when installed --------------------------------------------------------------------------
def test_every_seam_has_the_shape_we_use_in_the_installed_lmms_eval():
    assert [name for name in seams.SHAPE_CHECKS if not seams.check(name)] == []
    assert seams.problems() == []
    assert all(seams.SEAMS[name].installed for name in WRAPPERS)


def _takes_other_parameters(self, paths):
    return {}


def _decorated_otherwise(function):
    @functools.wraps(function)
    def decorated(*args, **kwargs):
        return function(*args, **kwargs)

    return decorated


CHANGED_SHAPES = {
    "task_index": (TaskManager, "initialize_tasks", _takes_other_parameters),
    "simple_evaluate": (evaluator, "simple_evaluate", lambda model, tasks: None),
    "results_writer": (EvaluationTracker, "save_results_aggregated", lambda self, results: None),
    "samples_writer": (EvaluationTracker, "save_results_samples", lambda self, name, rows: None),
    "request_args": (Instance, "args", None),
    "process_results": (ConfigurableTask, "process_results", _decorated_otherwise(lambda self, doc, results: {})),
}


@pytest.mark.parametrize("name", CHANGED_SHAPES)
def test_a_seam_of_another_shape_is_an_error_naming_it_and_the_version(name, monkeypatch, errors):
    owner, attribute, replacement = CHANGED_SHAPES[name]
    monkeypatch.setattr(owner, attribute, replacement)
    assert not seams.check(name)
    assert len(errors) == 1 and names_seam(errors[0], name)
    (line,) = seams.problems()
    assert names_seam(line, name)


def test_a_broken_seam_stops_the_run_before_anything_runs(monkeypatch, capsys):
    monkeypatch.setattr(EvaluationTracker, "save_results_samples", lambda self, name, rows: None)
    assert not seams.check("samples_writer")
    started = []
    with pytest.raises(PreflightError, match="seam samples_writer") as stopped:
        run_hooks._simple_evaluate(lambda **kwargs: started.append(kwargs), model="unify_oracle", tasks=[])
    assert VERSION in str(stopped.value) and not started
    with pytest.raises(SystemExit) as exited:  # the CLI: exit 2, whatever LMMS_EVAL_UNIFY_SKIP_PREFLIGHT says
        monkeypatch.setenv("LMMS_EVAL_UNIFY_SKIP_PREFLIGHT", "1")
        run_hooks._simple_evaluate(lambda **kwargs: started.append(kwargs), model="unify_oracle", tasks=[],
                                   cli_args=SimpleNamespace(output_path=None))  # fmt: skip
    assert exited.value.code == 2 and not started
    assert "[lmms-eval] " in capsys.readouterr().err


def test_a_task_index_of_another_shape_registers_no_model(monkeypatch, errors):
    monkeypatch.setattr(TaskManager, "initialize_tasks", _takes_other_parameters)
    assert plugin.manifests() == []
    assert len(errors) == 1 and names_seam(errors[0], "task_index")


# ---- the reads -----------------------------------------------------------------------------------------------
def test_process_results_of_another_shape_fails_every_sample_naming_the_seam(monkeypatch):
    monkeypatch.setattr(ConfigurableTask, "process_results", _decorated_otherwise(ConfigurableTask.process_results))
    scored = seams.unwrapped_process_results()
    with pytest.raises(SeamError, match="seam process_results") as failed:
        scored(object(), {}, [])
    assert VERSION in str(failed.value) and "not a tenacity retry" in str(failed.value)


def test_process_results_without_any_decorator_is_called_as_it_is(monkeypatch):
    def process_results(self, doc, results, full_docs=None):
        return {"called": True}

    monkeypatch.setattr(ConfigurableTask, "process_results", process_results)
    assert seams.unwrapped_process_results()(object(), {}, []) == {"called": True}
    assert seams.broken() == []


def test_request_args_of_another_shape_are_an_error_naming_the_seam(scripted, monkeypatch):
    model = scripted(["an answer"])
    request = make_request("q", {"protocol": "direct"})
    monkeypatch.setattr(Instance, "args", property(lambda self: dict(enumerate(self.arguments))))  # read-only view
    with pytest.raises(SeamError, match="seam request_args") as failed:
        model.generate_until([request])
    assert VERSION in str(failed.value) and "not (ctx, gen_kwargs, doc_to_visual, doc_id, task, split)" in str(
        failed.value
    )


def owned_request(task: ConfigurableTask) -> Instance:
    """A request as lmms-eval's ``task`` builds it: its ``doc_to_visual`` bound to the task."""
    request = make_request("q", {"protocol": "direct"})
    request.arguments = (*request.arguments[:2], task.doc_to_visual, *request.arguments[3:])
    return request


def test_an_evaluation_whose_requests_all_lack_their_task_fails_naming_the_seam(scripted):
    """A request made in code is ours; an evaluation in which no request came from a task (lmms-eval wrapping
    ``doc_to_visual``, say) has answered lmms-eval's own tasks as ours: it fails."""
    model = scripted(["an answer"] * 3)
    assert seams.task_of(make_request("q", {"protocol": "direct"})) is None
    with pytest.raises(SeamError, match="seam request_owner") as failed, seams.evaluation():
        model.generate_until([make_request("q", {"protocol": "direct"})])
    assert VERSION in str(failed.value)
    task = object.__new__(UnifyTask)
    with seams.evaluation():  # a composed model's own requests to its understanding model are made in code
        assert seams.task_of(owned_request(task)) is task
        model.generate_until([make_request("q", {"protocol": "direct"})])
    with seams.evaluation():  # a model of lmms-eval's, or nothing served
        pass


# ---- the end of a run ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("log_samples", "output_path", "configs", "samples_expected"),
    [
        (True, "out", {"t": {}}, True),
        (False, "out", {"t": {}}, False),
        (True, None, {"t": {}}, False),
        (True, "out", {}, False),
    ],  # fmt: skip
)
def test_the_writers_are_expected_exactly_when_lmms_evals_cli_calls_them(
    log_samples, output_path, configs, samples_expected
):
    run_hooks.expect_writers(SimpleNamespace(log_samples=log_samples, output_path=output_path), {"configs": configs})
    assert seams.SEAMS["results_writer"].expected_because
    assert bool(seams.SEAMS["samples_writer"].expected_because) == samples_expected


def test_a_python_caller_expects_no_writer_and_a_cli_run_does():
    def evaluate(**kwargs):
        return {"results": {"t": {"acc,none": 1.0}}, "configs": {"t": {}}, "n-samples": {"t": {"effective": 1}}}

    run_hooks._simple_evaluate(evaluate, model="unify_oracle", tasks=[])
    assert seams.missed() == []
    run_hooks._simple_evaluate(evaluate, model="unify_oracle", tasks=[],
                               cli_args=SimpleNamespace(output_path=None, log_samples=False))  # fmt: skip
    (line,) = seams.missed()
    assert names_seam(line, "results_writer") and "our wrapper was never called" in line


@pytest.mark.heavy  # lmms-eval's task index
def test_nothing_is_expected_of_a_process_that_evaluated_nothing():
    """``lmms-eval --tasks list``: a task index is built, nothing is evaluated."""
    TaskManager("ERROR")
    assert seams.SEAMS["task_index"].calls == 1 and seams.problems() == []


def test_something_of_ours_evaluated_expects_the_task_index_and_simple_evaluate():
    seams.witness("a plugin task scored a sample")
    seams.mark_called("task_index")
    (line,) = seams.missed()
    assert names_seam(line, "simple_evaluate") and "although a plugin task scored a sample" in line


@pytest.fixture
def exits(monkeypatch):
    """``os._exit`` recorded instead of ending pytest; this process taken for lmms-eval's CLI (main rank)."""
    codes: list[int] = []
    monkeypatch.setattr(os, "_exit", codes.append)
    monkeypatch.setattr(logging, "shutdown", lambda: None)
    monkeypatch.setattr(sys, "argv", ["/venv/bin/lmms-eval", "--tasks", "x"])
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.setattr(run_hooks, "_run_locks", run_hooks.contextlib.ExitStack())  # this session's locks stay
    monkeypatch.setattr(run_hooks, "_locked", set())
    return codes


@pytest.mark.parametrize("handler", ["run hooks", "seams alone"])
def test_an_lmms_eval_run_that_missed_a_seam_exits_1_naming_it(exits, capsys, handler):
    seams.expect("samples_writer", "a test says so")
    (run_hooks._at_exit if handler == "run hooks" else seams._at_exit)()
    assert exits == [1]
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert names_seam(line, "samples_writer")


def test_the_preflights_exit_2_is_kept_and_other_processes_are_left_alone(exits, monkeypatch, capsys):
    seams.expect("results_writer", "a test says so")
    run_status.reset()
    monkeypatch.setattr(run_hooks, "_exit_code", run_hooks.EXIT_PREFLIGHT)
    run_hooks._at_exit()
    assert exits == [] and "seam results_writer" in capsys.readouterr().err
    seams.reset()
    seams.expect("results_writer", "a test says so")
    monkeypatch.setenv("RANK", "1")  # another rank of a multi-process run
    seams._at_exit()
    monkeypatch.delenv("RANK")
    monkeypatch.setattr(sys, "argv", ["/venv/bin/pytest"])  # a Python caller
    seams._at_exit()
    assert exits == [] and capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("argv", "main_spec", "cli"),
    [
        (["/venv/bin/lmms-eval"], None, True),
        (["-m"], "lmms_eval.__main__", True),
        (["/venv/bin/pytest"], None, False),
        (["-c"], None, False),
    ],  # fmt: skip
)
def test_lmms_evals_cli_is_its_script_or_its_module(argv, main_spec, cli, monkeypatch):
    monkeypatch.setattr(sys, "argv", argv)
    spec = SimpleNamespace(name=main_spec) if main_spec else None
    monkeypatch.setitem(sys.modules, "__main__", SimpleNamespace(__spec__=spec))
    assert seams.lmms_eval_cli() is cli


# ---- real runs through lmms-eval's CLI code, in this process ---------------------------------------------------
@pytest.fixture(scope="module")
def puzzle_data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("seams_data")
    write_puzzles(root / "uni_mmmu", 2, 1, seed=3)
    return root


def cli_run(data: Path, monkeypatch, *flags: str) -> dict | None:
    """``lmms-eval --model unify_oracle --tasks uni_mmmu_maze --limit 2 *flags`` through lmms-eval's CLI code (the
    model's media under ``data``'s sibling ``media``, whichever hooks run)."""
    import lmms_eval.__main__ as cli

    for name, value in offline_env(data).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LMMS_EVAL_UNIFY_OUTPUT_DIR", str(data.parent / "media"))
    command = ["--model", "unify_oracle", "--tasks", "uni_mmmu_maze", "--limit", "2", "--verbosity", "ERROR", *flags]
    monkeypatch.setattr(sys, "argv", [sys.argv[0], *command])
    _, args = cli.parse_eval_args()
    results, _ = cli.cli_evaluate_single(args)
    return results


@pytest.mark.heavy  # lmms-eval's task index and an evaluation
@pytest.mark.parametrize("logged", [True, False])
def test_a_normal_run_goes_through_every_seam(puzzle_data, tmp_path, monkeypatch, logged):
    flags = ["--output_path", str(tmp_path / "out"), "--log_samples"] if logged else []  # neither: no samples file
    assert cli_run(puzzle_data, monkeypatch, *flags)["results"]["uni_mmmu_maze"]
    assert seams.problems() == []
    skipped = set() if logged else {"samples_writer"}
    assert [name for name, seam in seams.SEAMS.items() if not seam.calls] == sorted(skipped)
    assert bool(seams.SEAMS["samples_writer"].expected_because) == logged


def _index_elsewhere(monkeypatch) -> None:
    """lmms-eval indexes plugin tasks through another layer: ours are found, our hook is not called."""
    theirs = TaskManager.initialize_tasks.__wrapped__

    def initialize_tasks(self, include_path=None, include_defaults=True):
        index = theirs(self, include_path=include_path, include_defaults=include_defaults)
        return {**index, **self._get_task_and_group(str(tasks_path()))}

    monkeypatch.setattr(TaskManager, "initialize_tasks", initialize_tasks)


BYPASSES = {
    "task_index": _index_elsewhere,
    "simple_evaluate": lambda patch: patch.setattr(evaluator, "simple_evaluate", evaluator.simple_evaluate.__wrapped__),
    "results_writer": lambda patch: patch.setattr(
        EvaluationTracker, "save_results_aggregated", EvaluationTracker.save_results_aggregated.__wrapped__
    ),
    "samples_writer": lambda patch: patch.setattr(
        EvaluationTracker, "save_results_samples", EvaluationTracker.save_results_samples.__wrapped__
    ),
}


@pytest.mark.heavy  # lmms-eval's task index and an evaluation
@pytest.mark.parametrize("name", BYPASSES)
def test_a_run_that_goes_around_a_wrapper_names_it(name, puzzle_data, tmp_path, monkeypatch):
    BYPASSES[name](monkeypatch)
    cli_run(puzzle_data, monkeypatch, "--output_path", str(tmp_path / "out"), "--log_samples")
    missed = seams.missed()
    assert any(names_seam(line, name) for line in missed), missed
    assert all(names_seam(line, name) for line in missed if name != "task_index"), missed


@pytest.mark.heavy  # lmms-eval's task index and an evaluation
def test_a_run_whose_requests_lose_their_task_fails_naming_the_seam(puzzle_data, tmp_path, monkeypatch):
    """lmms-eval hands the model a wrapped ``doc_to_visual`` (a read-only view): the run fails, it does not
    serve lmms-eval's requests as ours."""

    def wrapped_visuals(self):
        ctx, gen_kwargs, doc_to_visual, *rest = self.arguments
        return (ctx, gen_kwargs, functools.partial(doc_to_visual), *rest)

    monkeypatch.setattr(Instance, "args", property(wrapped_visuals))
    with pytest.raises(SeamError, match="seam request_owner"):  # when the evaluation ends
        cli_run(puzzle_data, monkeypatch, "--output_path", str(tmp_path / "out"), "--log_samples")
    assert "seam request_owner" in run_status.status().run_error and run_hooks._exit_code == 1
    assert any(names_seam(line, "request_owner") for line in seams.problems())


BYPASS_RESULTS_WRITER = """
import sys
from lmms_eval.loggers.evaluation_tracker import EvaluationTracker
from lmms_eval.tasks import TaskManager

theirs = EvaluationTracker.save_results_aggregated  # lmms-eval's own, before our hooks are installed
build = TaskManager.__init__


def build_then_bypass(self, *args, **kwargs):
    build(self, *args, **kwargs)  # the first index build installs our hooks
    EvaluationTracker.save_results_aggregated = theirs  # as if results were saved through another layer


TaskManager.__init__ = build_then_bypass
from lmms_eval.cli.dispatch import main

sys.argv[0] = "lmms-eval"
main()
"""


@pytest.mark.slow
def test_the_lmms_eval_cli_exits_1_when_its_results_go_around_our_writer(puzzle_data, tmp_path):
    command = [sys.executable, "-c", BYPASS_RESULTS_WRITER, "--model", "unify_oracle", "--tasks", "uni_mmmu_maze",
               "--output_path", str(tmp_path / "out"), "--log_samples"]  # fmt: skip
    done = subprocess.run(command, env=offline_env(puzzle_data), capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert names_seam(last, "results_writer")
    assert VERSION in last and "1 task(s) scored, 0 failed" in done.stderr


def test_the_declared_lmms_eval_range_is_the_one_the_seam_check_makes_safe():
    import tomllib

    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    (lmms_eval,) = [Requirement(line) for line in declared if Requirement(line).name == "lmms-eval"]
    assert lmms_eval.specifier == SpecifierSet(seams.ACCEPTED_LMMS_EVAL)
    assert seams.TESTED_LMMS_EVAL in lmms_eval.specifier
    assert metadata.version("lmms-eval") == seams.TESTED_LMMS_EVAL  # CI runs the tested release (constraints.txt)
