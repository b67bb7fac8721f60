"""Run preflight: before a model is built or any request generated, check that every requested task can be
scored — its data is readable, its judge endpoint is configured and answers, its metric weights are on disk.

A problem is listed with how to fix it; all problems are printed in one block and the run stops. Experts
skip it with ``LMMS_EVAL_UNIFY_SKIP_PREFLIGHT=1``. Our environment variables are checked first, always (even
when the rest is skipped): each malformed one is a problem with its fix (:func:`environment_problems`); so is
what stands where the run will write (:func:`output_problems`: a symlink planted below ``--output_path``), and
each lmms-eval seam found broken (:func:`seam_problems`: this lmms-eval is not the shape the plugin hooks into).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loguru import logger

from lmms_eval_unify import env_vars
from lmms_eval_unify.integration import seams
from lmms_eval_unify.metrics.switches import TINY_METRICS_ENV
from lmms_eval_unify.run.paths import tasks_path

SKIP_ENV = "LMMS_EVAL_UNIFY_SKIP_PREFLIGHT"
ENVIRONMENT = "environment"
"""The kind of a malformed-variable problem (:func:`environment_problems`)."""
OUTPUT = "output"
"""The kind of a problem with what stands where the run will write (:func:`output_problems`)."""
LMMS_EVAL = "lmms-eval"
"""The kind of a broken lmms-eval seam (:func:`seam_problems`)."""
ALWAYS_CHECKED = (ENVIRONMENT, OUTPUT, LMMS_EVAL)
"""Kinds of problems ``LMMS_EVAL_UNIFY_SKIP_PREFLIGHT=1`` does not skip."""
PING_TIMEOUT_S = 60.0


class PreflightError(RuntimeError):
    """The run cannot be scored; the message lists every missing piece."""


@dataclass(frozen=True)
class Problem:
    """One missing piece: what it is, which tasks need it, and how to supply it."""

    kind: str  # data | judge | weights (of a metric) | metric settings | model code | model weights | ...
    what: str
    tasks: tuple[str, ...]
    fix: str

    def render(self) -> str:
        tasks = ", ".join(self.tasks[:6]) + (f" (+{len(self.tasks) - 6} more)" if len(self.tasks) > 6 else "")
        return f"  [{self.kind}] {self.what}\n      needed by: {tasks}\n      fix: {self.fix}"


def skip_requested() -> bool:
    return bool(env_vars.read(SKIP_ENV))


def output_problems(files: Iterable[Path], root: Path, folders: Iterable[Path] = ()) -> list[Problem]:
    """What stands at the files (and ``folders``) the run will write below ``root`` (the real ``--output_path``): a
    symlink at a folder of the path or at the file, or a FIFO, device or socket at the file, would be written
    through; each is a problem, and nothing outside the folder is touched. A folder where a file goes is left to
    the writer, which fails that file alone (and the run, naming it)."""
    from lmms_eval_unify.writes import WriteRefused, check_folder, check_writable

    problems = []
    checks = [(path, check_writable) for path in files] + [(path, check_folder) for path in folders]
    for path, check in checks:
        try:
            check(path, root)
        except WriteRefused as refused:
            if refused.reason == "not_regular_file" and os.path.isdir(path) and not os.path.islink(path):
                continue
            problems.append(
                Problem(
                    OUTPUT,
                    f"the run would write {path} through what stands there: {refused.reason}: {refused.detail}",
                    ("the whole run",),
                    f"remove {refused.path} (nothing is ever written through a symlink or into a FIFO), or choose "
                    "another --output_path",
                )
            )
    return problems


def seam_problems() -> list[Problem]:
    """Every lmms-eval seam found broken so far (``seams``): the run would silently lose what our code there does."""
    return [
        Problem(LMMS_EVAL, seams.what_changed(name, seam.broken), ("the whole run",), seams.fix())
        for name, seam in seams.SEAMS.items()
        if seam.broken
    ]


def environment_problems() -> list[Problem]:
    """Every malformed ``LMMS_EVAL_UNIFY_*`` variable (``env_vars.malformed``), with its fix."""
    return [
        Problem(ENVIRONMENT, problem.what, ("the whole run",), problem.variable.fix) for problem in env_vars.malformed()
    ]


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
DATA_FILE = re.compile(r"[^\s'\"`;,()=]+\.parquet\b")
"""A data file named in an error message (a local path or an ``hf://`` URL)."""


def data_problems(configs: dict[str, dict]) -> list[Problem]:
    """Each task's dataset: local parquet files readable (through the gate), non-empty and of the schema the
    task reads (its own doc functions run on the first clean row), or the Hub dataset resolvable. Tasks that fail
    the same way (the same error once their own names and files are masked, the same fix) make one problem."""
    from lmms_eval_unify.run.paths import DATA_DIR_ENV

    groups: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for task, config in configs.items():
        files: list[str] = []
        try:
            found = config["class"].data_files(config)
            files = list(found or [])
            for path in files:
                _check_parquet(config, path, schema=len(files) == 1)
            if found is None:
                _check_hub_dataset(config)
        except Exception as exc:  # noqa: BLE001 - every failure is reported, none is raised
            benchmark = (config.get("metadata") or {}).get("benchmark", "BENCHMARK")
            error = f"{type(exc).__name__}: {exc}"
            hub = config.get("dataset_path")
            fix = (
                f"write local data with `lmms-eval-unify data prepare {benchmark} ...` (official release) or "
                f"`lmms-eval-unify data generate {benchmark} --out DATA`, then `export {DATA_DIR_ENV}=DATA`"
                + (
                    f"; or download the Hub dataset: `hf download {hub} --repo-type dataset`"
                    if hub and hub != "parquet"
                    else ""
                )
            )
            masked = _masked(error, task, files)
            groups.setdefault((masked[:200], fix), []).append((task, error, masked))
    problems: list[Problem] = []
    for (_, fix), failed in groups.items():
        tasks = tuple(task for task, _, _ in failed)
        first, error, masked = failed[0]
        what = f"cannot read the data of {first}: {error}"
        if len(failed) > 1:
            what = f"cannot read the data of {first} and {len(failed) - 1} more task(s): {masked}"
            example = DATA_FILE.search(error)
            if example and "<data file>" in masked:
                what += f" (the data file of {first}: {example.group()})"
        problems.append(Problem("data", what, tasks, fix))
    return problems


def _masked(error: str, task: str, files: list[str]) -> str:
    """``error`` with what is particular to ``task`` masked, its data files and its name, so that the tasks of a
    benchmark that miss their data the same way are one problem."""
    for path in sorted(files, key=len, reverse=True):
        error = error.replace(path, "<data file>")
    error = DATA_FILE.sub("<data file>", error)
    return re.sub(rf"(?<![\w-]){re.escape(task)}(?![\w-])", "<task>", error)


class DataSchemaError(ValueError):
    """A local data file the task cannot read: refused by the gate, not parquet, empty or of the wrong schema."""


def _check_parquet(config: dict, path: str, schema: bool) -> None:
    """``path`` exists, passes the gate, is parquet with rows and, with ``schema`` (a task of one file: the doc
    functions of a task of several see their union), has the columns the task's doc functions read."""
    if str(path).startswith("hf://"):
        from huggingface_hub import HfFileSystem

        if not HfFileSystem().exists(path):
            raise FileNotFoundError(f"{path} is not on the Hub (or the Hub is unreachable)")
        return
    from lmms_eval_unify.integration.data_rows import smoke_problem
    from lmms_eval_unify.run.paths import DATA_DIR_ENV

    if not os.path.lexists(path):
        raise FileNotFoundError(f"{path} does not exist")
    problem = smoke_problem(
        config if schema else {}, Path(path), Path(env_vars.read(DATA_DIR_ENV) or Path(path).parent)
    )
    if problem:
        raise DataSchemaError(problem)


def _check_hub_dataset(config: dict) -> None:
    import datasets

    kwargs = {k: v for k, v in (config.get("dataset_kwargs") or {}).items() if k in ("data_files", "revision")}
    datasets.load_dataset_builder(config["dataset_path"], config.get("dataset_name"), **kwargs)


def judge_problems(configs: dict[str, dict], ping: bool = True) -> list[Problem]:
    """Every judge endpoint the tasks need: configured, and answering one cheap request; and every judge cache
    they use: healthy (a corrupt one is moved aside, logged, and a new one started) and writable."""
    from lmms_eval_unify.judges.config import JudgeNotConfiguredError, resolve_cache_path, resolve_endpoint

    endpoints: dict[tuple, tuple[Any, list[str]]] = {}
    caches: dict[Path, list[str]] = {}
    problems: list[Problem] = []
    missing: list[str] = []
    for task, config in configs.items():
        try:
            wanted = config["class"].judge_configs(config)
            for judge_config, default_model in wanted:
                caches.setdefault(resolve_cache_path(judge_config), []).append(task)
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
    problems += [problem for path, tasks in caches.items() if (problem := judge_cache_problem(path, tasks))]
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


def judge_cache_problem(path: Path, tasks: list[str]) -> Problem | None:
    """Open the judge cache at ``path`` (moving a corrupt file aside and starting a new one, as every judged
    task does); a problem only when no cache can be opened there."""
    import sqlite3

    from lmms_eval_unify.judges.cache import JudgeCache
    from lmms_eval_unify.judges.config import ENV_CACHE
    from lmms_eval_unify.writes import WriteRefused

    try:
        JudgeCache(path)
    except (OSError, sqlite3.Error, WriteRefused) as exc:
        return Problem(
            "judge",
            f"the judge cache {path} cannot be used: {type(exc).__name__}: {exc}",
            tuple(tasks),
            f"export {ENV_CACHE}=/a/writable/folder/judge_cache.sqlite (or make {path.parent} writable)",
        )
    return None


def ping_judge(endpoint: Any) -> str | None:
    """One tiny request to ``endpoint``; the error (API key redacted), or None when it answered text."""
    from lmms_eval_unify.judges.client import ChatClient, RetryPolicy
    from lmms_eval_unify.judges.http import redact

    client = ChatClient(
        endpoint.base_url,
        endpoint.api_key,
        deadline_s=PING_TIMEOUT_S,
        max_concurrency=1,
        retry=RetryPolicy(max_retries=1, backoff_base_s=1.0, backoff_max_s=2.0),
    )
    try:
        reply = client.complete(
            endpoint.model, [{"role": "user", "content": "Reply with the word OK."}], {"max_tokens": 4}
        )
        return None if isinstance(reply, str) else f"reply is {type(reply).__name__}, not text"
    except Exception as exc:  # noqa: BLE001 - reported as a problem
        return redact(f"{type(exc).__name__}: {exc}", endpoint.api_key)
    finally:
        client.close()


TINY_METRICS_FIX = (
    f"For an offline trial without these weights: `export {TINY_METRICS_ENV}=1` (tiny randomly initialised "
    "backbones; the scores are not comparable to published numbers)."
)
"""The last sentence of every missing-metric-weights fix."""


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
            problems.append(
                Problem("metric settings", f"invalid metric settings: {exc}", (task,), "see docs/metrics.md")
            )
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
                    f"set {exc.env_var}=/path/to/checkpoint. {exc.how_to_get} {TINY_METRICS_FIX}",
                )
            )
    return problems


def model_problems(
    model: Any, model_args: Any, build_args: Mapping[str, Any], force_simple: bool = False
) -> list[Problem]:
    """What the requested unified model lacks: its adapter's declared check (``UnifiedModel.missing``: code,
    weights, device, credentials), with ``model_args`` and lmms-eval's ``build_args`` (``batch_size``,
    ``max_batch_size``, ``device``) as the model would get them; nothing is built or loaded. A model object, or a
    model that is not a unified-model adapter, is left to lmms-eval, and so are wrong model arguments."""
    if not isinstance(model, str):
        return []
    from lmms_eval.models import MODEL_REGISTRY_V2, get_model
    from lmms_eval.utils import simple_parse_args_string

    from lmms_eval_unify.generation.readiness import model_missing
    from lmms_eval_unify.generation.settings import ModelArgumentError
    from lmms_eval_unify.integration.model import UnifiedModel

    needed_by = (f"--model {model}",)
    ours = False
    try:
        ours = MODEL_REGISTRY_V2.resolve(model, force_simple).class_path.startswith("lmms_eval_unify.")
        cls = get_model(model, force_simple)
    except Exception as exc:  # noqa: BLE001 - an adapter of ours that cannot be imported is missing code
        if not ours:
            return []  # lmms-eval names unknown models, and broken models of other plugins, itself
        what = f"the {model} adapter cannot be imported: {type(exc).__name__}: {exc}"
        return [Problem("model code", what, needed_by, f"install what it imports (docs/models/{model}.md)")]
    if not (isinstance(cls, type) and issubclass(cls, UnifiedModel)):
        return []
    args = dict(model_args) if isinstance(model_args, Mapping) else simple_parse_args_string(model_args or "")
    args.update({key: value for key, value in build_args.items() if value is not None})
    logger.info("lmms-eval-unify preflight: checking what model {} needs (code, weights, device)", model)
    try:
        found = model_missing(cls, args)
    except ModelArgumentError:
        return []  # named when lmms-eval builds the model
    except Exception as exc:  # noqa: BLE001 - a broken check is reported, the run does not start blind
        what = f"the check of {model} (its `missing`) raised {type(exc).__name__}: {exc}"
        return [Problem("model", what, needed_by, "report it to the adapter's authors, or set " + SKIP_ENV + "=1")]
    return [Problem(f"model {item.kind}", item.what, needed_by, item.fix) for item in found]


def run_preflight(task_manager: Any, names: Iterable[Any], ping_judges: bool = True) -> list[Problem]:
    """All problems of the requested tasks (empty when the run can be scored)."""
    configs = leaf_task_configs(task_manager, names)
    if not configs:
        return []
    logger.info("lmms-eval-unify preflight: checking data, judges and metric weights of {} task(s)", len(configs))
    return [*data_problems(configs), *judge_problems(configs, ping_judges), *weight_problems(configs)]


def render(problems: list[Problem]) -> str:
    """The block printed when the preflight fails (malformed variables and output problems are not skipped with the
    rest)."""
    skippable = any(p.kind not in ALWAYS_CHECKED for p in problems)
    lines = [
        "",
        "=" * 100,
        f"lmms-eval-unify preflight: {len(problems)} problem(s); nothing was generated. Fix these and run again",
        f"(or set {SKIP_ENV}=1 to skip this check):" if skippable else f"({SKIP_ENV}=1 does not skip this check):",
        "",
    ]
    lines += [p.render() for p in problems]
    lines += ["=" * 100, ""]
    return "\n".join(lines)
