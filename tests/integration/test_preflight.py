"""The preflight's data and metric-weights problems (issue 30): one problem per way of failing, tasks listed, and
every missing-weights fix names the offline switch."""

from __future__ import annotations

from pathlib import Path

import pytest
from huggingface_hub import constants
from lmms_eval.tasks import TaskManager

from lmms_eval_unify.integration.preflight import Problem, data_problems, leaf_task_configs, render, weight_problems
from lmms_eval_unify.metrics.switches import TINY_METRICS_ENV
from lmms_eval_unify.run.paths import DATA_DIR_ENV, tasks_path

MME_UNIFY_TASKS = {
    f"mme_unify_{name}"
    for name in ("sipu", "mitiu", "vpu", "civg", "fir", "tie", "tig", "tvg", "vp", "iee", "csq", "al", "sd", "vcot")
}


@pytest.fixture(scope="module")
def manager() -> TaskManager:
    return TaskManager("ERROR", include_path=str(tasks_path()), include_defaults=False)


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No plugin settings, no data folder, empty torch and Hugging Face caches, offline."""
    import os

    for name in [name for name in os.environ if name.startswith("LMMS_EVAL_UNIFY_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


def all_plugin_configs(manager: TaskManager) -> dict[str, dict]:
    ours = tasks_path()
    names = [
        name
        for name, entry in manager.task_index.items()
        if entry.get("type") not in ("group", "tag")
        and entry.get("yaml_path") not in (None, -1)
        and Path(entry["yaml_path"]).resolve().is_relative_to(ours)
    ]
    return leaf_task_configs(manager, names)


@pytest.mark.heavy  # lmms-eval's task index
def test_every_missing_weights_fix_names_the_tiny_metrics_switch(manager, bare):
    problems = weight_problems(all_plugin_configs(manager))
    weights = [problem for problem in problems if problem.kind == "weights"]
    assert {"lpips", "fid", "fvd", "clip_score", "clip_choice", "dreamsim"} <= {p.what.split()[0] for p in weights}
    for problem in weights:
        assert f"`export {TINY_METRICS_ENV}=1`" in problem.fix, problem.fix
        assert "LMMS_EVAL_UNIFY_TINY_METRICS=1" in problem.fix and "not comparable" in problem.fix
        assert f"fix: {problem.fix}" in problem.render()


@pytest.mark.heavy  # lmms-eval's task index
def test_the_tiny_metrics_switch_is_a_fix(manager, bare, monkeypatch):
    monkeypatch.setenv(TINY_METRICS_ENV, "1")
    assert weight_problems(all_plugin_configs(manager)) == []


@pytest.mark.heavy  # lmms-eval's task index
def test_mme_unify_without_data_is_one_problem_naming_every_task(manager, bare):
    configs = leaf_task_configs(manager, ["mme_unify"])
    assert set(configs) == MME_UNIFY_TASKS
    problems = data_problems(configs)
    assert len(problems) == 1
    (problem,) = problems
    assert problem.kind == "data" and set(problem.tasks) == MME_UNIFY_TASKS and len(problem.tasks) == 14
    assert problem.what.startswith("cannot read the data of mme_unify_sipu and 13 more task(s): LocalDataMissingError")
    assert "reads local data only" in problem.what and f"export {DATA_DIR_ENV}=DATA" in problem.fix
    assert "data prepare mme_unify" in problem.fix
    assert render(problems).count("[data]") == 1


@pytest.mark.heavy  # lmms-eval's task index
def test_mme_unify_with_an_empty_data_folder_is_one_problem(manager, bare, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(bare / "data"))
    problems = data_problems(leaf_task_configs(manager, ["mme_unify"]))
    assert len(problems) == 1 and set(problems[0].tasks) == MME_UNIFY_TASKS
    assert "is set but <data file> does not exist" in problems[0].what
    assert f"(the data file of mme_unify_sipu: {bare / 'data' / 'mme_unify' / 'sipu' / 'test.parquet'})" in (
        problems[0].what
    )


class FailingData:
    """A task class whose data check fails with the message its config names (``{task}`` is the task)."""

    @classmethod
    def data_files(cls, config: dict) -> list[str] | None:
        raise FileNotFoundError(config["error"].format(task=config["task"]))


def config(task: str, error: str, benchmark: str = "bench") -> dict:
    return {"class": FailingData, "task": task, "error": error, "metadata": {"benchmark": benchmark}}


def test_tasks_that_fail_differently_stay_apart():
    configs = {
        "a_one": config("a_one", "{task} has no rows"),
        "a_two": config("a_two", "{task} has no rows"),
        "a_three": config("a_three", "{task} lacks the column 'question'"),
        "b_one": config("b_one", "{task} has no rows", benchmark="other"),  # another fix
        "a_four": config("a_four", "/data/a/four.parquet is not parquet"),
        "a_five": config("a_five", "/data/a/five.parquet is not parquet"),
    }
    problems = {problem.tasks: problem for problem in data_problems(configs)}
    assert set(problems) == {("a_one", "a_two"), ("a_three",), ("b_one",), ("a_four", "a_five")}
    assert problems[("a_three",)] == Problem(
        "data",
        "cannot read the data of a_three: FileNotFoundError: a_three lacks the column 'question'",
        ("a_three",),
        problems[("a_three",)].fix,
    )
    assert problems[("a_one", "a_two")].what == (
        "cannot read the data of a_one and 1 more task(s): FileNotFoundError: <task> has no rows"
    )
    assert problems[("a_four", "a_five")].what == (
        "cannot read the data of a_four and 1 more task(s): FileNotFoundError: <data file> is not parquet "
        "(the data file of a_four: /data/a/four.parquet)"
    )


def test_a_task_name_inside_another_is_not_masked():
    configs = {"sd": config("sd", "sd_extra is missing"), "al": config("al", "sd_extra is missing")}
    (problem,) = data_problems(configs)
    assert problem.tasks == ("sd", "al") and problem.what.endswith("FileNotFoundError: sd_extra is missing")


# ---- malformed environment variables (lmms_eval_unify.env_vars) ------------------------------------------
def test_each_malformed_variable_is_a_problem_with_its_fix(bare, monkeypatch):
    from lmms_eval_unify.integration.preflight import environment_problems

    monkeypatch.setenv("LMMS_EVAL_UNIFY_LIMITS", '{"text_chars": 0}')
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_TIMEOUT", "soon")
    monkeypatch.setenv(DATA_DIR_ENV, str(bare))
    problems = environment_problems()
    assert [p.what.split()[0] for p in problems] == ["$LMMS_EVAL_UNIFY_JUDGE_TIMEOUT", "$LMMS_EVAL_UNIFY_LIMITS"]
    assert all(p.kind == "environment" and p.fix for p in problems)
    assert "e.g. 600" in render(problems) and "SKIP_PREFLIGHT=1 does not skip this check" in render(problems)


@pytest.mark.parametrize("skip", ["", "1"])
def test_a_run_with_a_malformed_variable_exits_2_before_anything_runs_even_when_the_preflight_is_skipped(
    bare, monkeypatch, capsys, skip
):
    from types import SimpleNamespace

    from lmms_eval_unify.integration import run_hooks
    from lmms_eval_unify.run import context as run_context
    from lmms_eval_unify.run import status as run_status

    monkeypatch.setattr(run_context, "_current", None)
    monkeypatch.setattr(run_status, "_status", run_status.RunStatus())
    monkeypatch.setattr(run_hooks, "_exit_code", None)
    monkeypatch.setenv("LMMS_EVAL_UNIFY_LIMITS", "{text_chars: 5}")
    monkeypatch.setenv("LMMS_EVAL_UNIFY_SKIP_PREFLIGHT", skip)
    started = []
    with pytest.raises(SystemExit) as stopped:
        run_hooks._simple_evaluate(lambda **kwargs: started.append(kwargs), model="unify_oracle", tasks=["x"],
                                   cli_args=SimpleNamespace(output_path=None))  # fmt: skip
    assert stopped.value.code == 2 and run_hooks._exit_code == 2 and not started
    err = capsys.readouterr().err
    assert "preflight: 1 problem(s); nothing was generated" in err and "[environment] $LMMS_EVAL_UNIFY_LIMITS" in err
