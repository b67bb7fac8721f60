"""Run preflight: before a model is built or any request generated, check that every requested task can be
scored — its data is readable, its judge endpoint is configured and answers, its metric weights are on disk.

A problem is listed with how to fix it; all problems are printed in one block and the run stops. Experts
skip it with ``LMMS_EVAL_UNIFY_SKIP_PREFLIGHT=1``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loguru import logger

from lmms_eval_unify.integration.paths import tasks_path

SKIP_ENV = "LMMS_EVAL_UNIFY_SKIP_PREFLIGHT"
PING_TIMEOUT_S = 60.0


class PreflightError(RuntimeError):
    """The run cannot be scored; the message lists every missing piece."""


@dataclass(frozen=True)
class Problem:
    """One missing piece: what it is, which tasks need it, and how to supply it."""

    kind: str  # data | judge | weights
    what: str
    tasks: tuple[str, ...]
    fix: str

    def render(self) -> str:
        tasks = ", ".join(self.tasks[:6]) + (f" (+{len(self.tasks) - 6} more)" if len(self.tasks) > 6 else "")
        return f"  [{self.kind}] {self.what}\n      needed by: {tasks}\n      fix: {self.fix}"


def skip_requested() -> bool:
    return os.environ.get(SKIP_ENV, "").lower() in ("1", "true", "yes")


# ---- which of the requested tasks are ours, and their configs --------------------------------------------
def leaf_task_configs(task_manager: Any, names: Iterable[Any]) -> dict[str, dict]:
    """The full YAML configs of the plugin's leaf tasks among ``names`` (groups expanded, others skipped)."""
    ours = tasks_path()
    configs: dict[str, dict] = {}

    def visit(name: Any) -> None:
        if not isinstance(name, str) or name in configs or name not in task_manager.task_index:
            return
        entry = task_manager.task_index[name]
        yaml_path = entry.get("yaml_path")
        if entry.get("type") in ("group", "tag"):
            members = entry.get("task")
            if members in (None, -1):
                members = task_manager._get_config(name).get("task", [])
            for member in members if isinstance(members, list) else [members]:
                visit(member)
            return
        if yaml_path in (None, -1) or not Path(yaml_path).resolve().is_relative_to(ours):
            return
        config = task_manager._get_config(name)
        if "include" in config:  # resolved the way lmms-eval's task loader does it
            from lmms_eval import utils

            included = utils.load_yaml_config(yaml_path=None, yaml_config={"include": config.pop("include")})
            config = {**included, **config}
        configs[name] = config

    for name in names:
        visit(name)
    return configs


# ---- the three checks ------------------------------------------------------------------------------------
def data_problems(configs: dict[str, dict]) -> list[Problem]:
    """Each task's dataset: local parquet files readable and non-empty, or the Hub dataset resolvable."""
    from lmms_eval_unify.integration.task import DATA_DIR_ENV

    problems: dict[str, list[str]] = {}
    fixes: dict[str, str] = {}
    for task, config in configs.items():
        try:
            files = config["class"].data_files(config)
            for path in files or []:
                _check_parquet(path)
            if files is None:
                _check_hub_dataset(config)
        except Exception as exc:  # noqa: BLE001 - every failure is reported, none is raised
            benchmark = (config.get("metadata") or {}).get("benchmark", "BENCHMARK")
            what = f"cannot read the data of {task}: {type(exc).__name__}: {exc}"
            key = f"{type(exc).__name__}:{benchmark}:{str(exc)[:200]}"
            problems.setdefault(key, []).append(task)
            fixes.setdefault(key, what)
            hub = config.get("dataset_path")
            fixes[key + "#fix"] = (
                f"write local data with `lmms-eval-unify data prepare {benchmark} ...` (official release) or "
                f"`lmms-eval-unify data generate {benchmark} --out DATA`, then `export {DATA_DIR_ENV}=DATA`"
                + (
                    f"; or download the Hub dataset: `hf download {hub} --repo-type dataset`"
                    if hub and hub != "parquet"
                    else ""
                )
            )
    return [Problem("data", fixes[k], tuple(t), fixes[k + "#fix"]) for k, t in problems.items()]


def _check_parquet(path: str) -> None:
    if str(path).startswith("hf://"):
        from huggingface_hub import HfFileSystem

        if not HfFileSystem().exists(path):
            raise FileNotFoundError(f"{path} is not on the Hub (or the Hub is unreachable)")
        return
    import pyarrow.parquet as pq

    if not Path(path).is_file():
        raise FileNotFoundError(f"{path} does not exist")
    if pq.read_metadata(path).num_rows == 0:
        raise ValueError(f"{path} has no rows")


def _check_hub_dataset(config: dict) -> None:
    import datasets

    kwargs = {k: v for k, v in (config.get("dataset_kwargs") or {}).items() if k in ("data_files", "revision")}
    datasets.load_dataset_builder(config["dataset_path"], config.get("dataset_name"), **kwargs)


def judge_problems(configs: dict[str, dict], ping: bool = True) -> list[Problem]:
    """Every judge endpoint the tasks need: configured, and answering one cheap request."""
    from lmms_eval_unify.judges.config import JudgeNotConfiguredError, resolve_endpoint

    endpoints: dict[tuple, tuple[Any, list[str]]] = {}
    problems: list[Problem] = []
    missing: list[str] = []
    for task, config in configs.items():
        try:
            wanted = config["class"].judge_configs(config)
            for judge_config, default_model in wanted:
                endpoint = resolve_endpoint(judge_config, default_model)
                key = (endpoint.base_url, endpoint.model, endpoint.api_key)
                endpoints.setdefault(key, (endpoint, []))[1].append(task)
        except JudgeNotConfiguredError:
            missing.append(task)
        except Exception as exc:  # noqa: BLE001 - malformed judge settings
            problems.append(Problem("judge", f"invalid judge settings: {exc}", (task,), "see docs/judges.md"))
    if missing:
        problems.append(
            Problem(
                "judge",
                "no model-as-judge endpoint is configured",
                tuple(missing),
                "export LMMS_EVAL_UNIFY_JUDGE_BASE_URL=http://HOST:PORT/v1 (an OpenAI-compatible server, e.g. "
                "`vllm serve Qwen/Qwen2.5-VL-72B-Instruct`), optionally LMMS_EVAL_UNIFY_JUDGE_MODEL and "
                "LMMS_EVAL_UNIFY_JUDGE_API_KEY; docs/judges.md",
            )
        )
    if ping:
        for endpoint, tasks in endpoints.values():
            error = ping_judge(endpoint)
            if error:
                problems.append(
                    Problem(
                        "judge",
                        f"judge {endpoint.model} at {endpoint.base_url} does not answer: {error}",
                        tuple(tasks),
                        "start the judge server or fix LMMS_EVAL_UNIFY_JUDGE_BASE_URL / _MODEL / _API_KEY",
                    )
                )
    return problems


def ping_judge(endpoint: Any) -> str | None:
    """One tiny request to ``endpoint``; the error (API key redacted), or None when it answered text."""
    from lmms_eval_unify.judges.client import ChatClient, RetryPolicy

    client = ChatClient(
        endpoint.base_url,
        endpoint.api_key,
        timeout_s=PING_TIMEOUT_S,
        max_concurrency=1,
        retry=RetryPolicy(max_retries=1, backoff_base_s=1.0, backoff_max_s=2.0),
    )
    try:
        reply = client.complete(
            endpoint.model, [{"role": "user", "content": "Reply with the word OK."}], {"max_tokens": 4}
        )
        return None if isinstance(reply, str) else f"reply is {type(reply).__name__}, not text"
    except Exception as exc:  # noqa: BLE001 - reported as a problem
        message = f"{type(exc).__name__}: {exc}"
        return message.replace(endpoint.api_key, "***") if endpoint.api_key else message
    finally:
        client.close()


def weight_problems(configs: dict[str, dict]) -> list[Problem]:
    """Every metric backbone the tasks' scorers load: its weights are on disk (nothing is loaded)."""
    from lmms_eval_unify.metrics.config import MissingWeightsError
    from lmms_eval_unify.metrics.weights import locate_weights

    needed: dict[Any, list[str]] = {}
    problems: list[Problem] = []
    for task, config in configs.items():
        try:
            for metric_config in config["class"].metric_configs(config):
                needed.setdefault(metric_config, []).append(task)
        except Exception as exc:  # noqa: BLE001 - malformed metric settings
            problems.append(Problem("weights", f"invalid metric settings: {exc}", (task,), "see docs/metrics.md"))
    for metric_config, tasks in needed.items():
        try:
            locate_weights(metric_config)
        except MissingWeightsError as exc:
            problems.append(
                Problem(
                    "weights",
                    f"{metric_config.family} backbone {exc.backbone!r}: no weights "
                    f"(looked in {', '.join(exc.looked_in)})",
                    tuple(tasks),
                    f"set {exc.env_var}=/path/to/checkpoint. {exc.how_to_get}",
                )
            )
    return problems


def run_preflight(task_manager: Any, names: Iterable[Any], ping_judges: bool = True) -> list[Problem]:
    """All problems of the requested tasks (empty when the run can be scored)."""
    configs = leaf_task_configs(task_manager, names)
    if not configs:
        return []
    logger.info("lmms-eval-unify preflight: checking data, judges and metric weights of {} task(s)", len(configs))
    return [*data_problems(configs), *judge_problems(configs, ping_judges), *weight_problems(configs)]


def render(problems: list[Problem]) -> str:
    """The block printed when the preflight fails."""
    lines = [
        "",
        "=" * 100,
        f"lmms-eval-unify preflight: {len(problems)} problem(s); nothing was generated. Fix these and run again",
        f"(or set {SKIP_ENV}=1 to skip this check):",
        "",
    ]
    lines += [p.render() for p in problems]
    lines += ["=" * 100, ""]
    return "\n".join(lines)
