"""The lmms-eval task class of every plugin task: lmms-eval's own, plus a local-data switch, scoring that
never takes a sibling task down, and what the run preflight must check.

Task YAMLs name the published dataset (a Hub id). Setting ``LMMS_EVAL_UNIFY_DATA_DIR`` makes every task read
``<dir>/<benchmark>/<dataset_name>/<split>.parquet`` instead — the layout written by
``lmms-eval-unify data generate`` and ``data prepare`` — so one YAML serves published and local data.

``process_results`` is a scorer built by ``lmms_eval_unify.scoring.scorer.scorer``; its keyword parameters are bound
from the task's ``metadata`` (``subtask``, ``variant``, ``judge``, …). A task with ``metadata.judged: true``
refuses to start without a judge endpoint, so a run never generates answers it cannot score (unless built inside
:func:`judge_check_skipped`, as ``lmms-eval-unify judge estimate`` does to count rows without sending anything);
``metadata.judge`` (``JudgeConfig`` fields) overrides the judge settings of every judgement of the task.

Local data is read through the gate (``integration/data_rows.py``): a row naming a file outside the data folder
(or missing, or not a regular file) is never opened; only its sample fails, as ``data_error`` (the data's
fault, not the model's), its metrics ``None``, the refusal in its details.

A scorer that raises (missing metric weights, a judge that went away, a bug) does not end the run: the
sample's metrics become ``scoring_failed``, the task's aggregates ``failed``, the reason goes to the run
status (non-zero exit), and every other task is still scored and written. ``lmms-eval-unify score RUN_DIR``
re-scores the saved outputs once the cause is fixed.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from lmms_eval.api.task import ConfigurableTask
from loguru import logger

from lmms_eval_unify import gate
from lmms_eval_unify.benchmarks import part
from lmms_eval_unify.env_vars import metrics_env, read
from lmms_eval_unify.integration import seams
from lmms_eval_unify.integration.data_rows import DATA_ERROR_KEY, checked_data_file
from lmms_eval_unify.judges.config import JudgeConfig, resolve_endpoint
from lmms_eval_unify.metrics.config import MissingWeightsError
from lmms_eval_unify.run import status as run_status
from lmms_eval_unify.run.paths import DATA_DIR_ENV
from lmms_eval_unify.run.provenance import configured_source, local_source, record_data_source
from lmms_eval_unify.scoring.scorer import metadata_params

DATA_ERROR = "data_error"
"""``invalid_outputs`` of a sample whose data row names a file the gate refuses."""
_JUDGE_CHECK_SKIPPED: ContextVar[bool] = ContextVar("judge_check_skipped", default=False)


@contextmanager
def judge_check_skipped() -> Iterator[None]:
    """Tasks built inside this block load their data without checking their judge endpoints (for a dry run that
    never scores, such as ``lmms-eval-unify judge estimate``)."""
    token = _JUDGE_CHECK_SKIPPED.set(True)
    try:
        yield
    finally:
        _JUDGE_CHECK_SKIPPED.reset(token)


class LocalDataMissingError(FileNotFoundError):
    """The local data folder is set but lacks a file a task needs."""


def local_data_files(metadata: dict | None, dataset_name: str | None, split: str) -> dict[str, str] | None:
    """``{split: parquet path}`` when local data is configured, else ``None`` (use the Hub dataset)."""
    root = read(DATA_DIR_ENV)
    if not root:
        return None
    benchmark = (metadata or {}).get("benchmark")
    path = Path(root) / str(benchmark) / str(dataset_name) / f"{split}.parquet"
    if not os.path.lexists(path):
        raise LocalDataMissingError(
            f"{DATA_DIR_ENV}={root} is set but {path} does not exist; generate it with "
            f"`lmms-eval-unify data generate --out {root}` (or prepare the published data), "
            f"or unset {DATA_DIR_ENV} to load the Hub dataset"
        )
    return {split: str(path)}


_process_results_once = seams.unwrapped_process_results()
"""lmms-eval's ``process_results`` without its tenacity retry (5 tries, 2 s apart, per sample): our scorers
are deterministic, so a retry only multiplies the time a failing scorer costs. Another shape of it is a changed
seam: every sample's scoring then fails, naming it (``seams.unwrapped_process_results``)."""

TASK_FATAL = (MissingWeightsError, ImportError)
"""Errors that fail every sample the same way: after the first, the task's other samples are not tried."""


def metrics_env_config(benchmark: str, family: str) -> dict | None:
    """Metric config fields of ``family`` from ``LMMS_EVAL_UNIFY_<BENCHMARK>_METRICS`` (None = defaults)."""
    return (read(metrics_env(benchmark)) or {}).get(family)


def _guarded_aggregation(task: str, aggregate: Callable) -> Callable:
    """``aggregate`` that yields ``failed`` when a sample could not be scored or the aggregation raises."""

    @functools.wraps(aggregate)
    def guarded(items: list, **kwargs: Any) -> Any:
        failed = sum(1 for item in items if isinstance(item, str) and item == run_status.SCORING_FAILED)
        if failed:
            return run_status.FAILED
        try:
            return aggregate(items, **kwargs)
        except Exception as exc:  # noqa: BLE001 - one task's broken aggregate must not lose the others
            reason = f"aggregation {getattr(aggregate, '__name__', aggregate)} raised {type(exc).__name__}: {exc}"
            logger.error("{}: {}", task, reason)
            run_status.status().task_failed(task, reason)
            return run_status.FAILED

    return guarded


class UnifyTask(ConfigurableTask):
    """A ``ConfigurableTask`` whose data can come from the local data folder and whose scoring failures
    stay inside the task."""

    def __init__(self, config: dict | None = None, **kwargs) -> None:
        # lmms-eval hands a ``class:`` task its whole YAML, including the ``class`` key itself.
        super().__init__(config={k: v for k, v in (config or {}).items() if k != "class"}, **kwargs)
        self._fatal_scoring_error: str | None = None
        self._scoring_lock = threading.Lock()
        params = metadata_params(self.config.process_results, self.config.metadata, self.config.task)
        if params:
            self.config.process_results = functools.partial(self.config.process_results, **params)

    # ---- what the run preflight checks (class methods: they read the YAML config, no task is built) ----
    @classmethod
    def metric_configs(cls, config: dict) -> list:
        """The metric backbones the task's scorer loads (``metadata.metric_families``)."""
        from lmms_eval_unify.metrics.config import resolve_config

        metadata = config.get("metadata") or {}
        benchmark = str(metadata.get("benchmark", ""))
        return [
            resolve_config(family, metrics_env_config(benchmark, family))
            for family in metadata.get("metric_families") or []
        ]

    @classmethod
    def judge_configs(cls, config: dict) -> list[tuple[JudgeConfig, str | None]]:
        """``(JudgeConfig, default judge model)`` of every judge endpoint the task's scorer calls: for a
        ``metadata.judged`` task, ``metadata.judge`` over the benchmark's ``spec.JUDGE_MODEL``."""
        metadata = config.get("metadata") or {}
        if not metadata.get("judged"):
            return []
        spec = part(str(metadata["benchmark"]), "spec")
        return [(JudgeConfig.coerce(metadata.get("judge")), spec.JUDGE_MODEL)]

    @classmethod
    def data_files(cls, config: dict) -> list[str] | None:
        """Local files the task reads (None: it reads ``dataset_path``/``dataset_name`` from the Hub)."""
        files = local_data_files(config.get("metadata"), config.get("dataset_name"), str(config.get("test_split")))
        if files is not None:
            return list(files.values())
        if config.get("dataset_path") == "parquet":
            data_files = (config.get("dataset_kwargs") or {}).get("data_files")
            if not data_files:
                raise LocalDataMissingError(
                    f"{config.get('task')} reads local data only: set {DATA_DIR_ENV} to a folder written by "
                    f"`lmms-eval-unify data prepare {(config.get('metadata') or {}).get('benchmark')} ...` "
                    f"(or `data generate`)"
                )
        return None

    # ---- scoring that never takes a sibling task down -------------------------------------------------
    def process_results(self, doc: dict, results: list, full_docs: Any = None) -> dict:
        task = self.config.task
        if doc.get(DATA_ERROR_KEY):
            metrics = {name: None for name in self._aggregation_list if name != "invalid_outputs"}
            return {**metrics, "invalid_outputs": DATA_ERROR, "details": {DATA_ERROR: doc[DATA_ERROR_KEY]}}
        if self._fatal_scoring_error is None:
            try:
                return _process_results_once(self, doc, results, full_docs=full_docs)
            except Exception as exc:  # noqa: BLE001 - recorded below; the run goes on
                reason = f"{type(exc).__name__}: {exc}"
                with self._scoring_lock:
                    first = not run_status.status().failed.get(task)
                    run_status.status().task_failed(task, f"scoring raised {reason}")
                    if isinstance(exc, TASK_FATAL):
                        self._fatal_scoring_error = reason
                if first:
                    logger.error("{}: scoring failed ({}); the task is marked failed", task, reason)
        else:
            reason = self._fatal_scoring_error
        failed = {name: run_status.SCORING_FAILED for name in self._aggregation_list}
        return {**failed, "details": {"scoring_error": reason}}

    def aggregation(self) -> dict[str, Callable]:
        return {
            name: _guarded_aggregation(self.config.task, aggregate) for name, aggregate in super().aggregation().items()
        }

    def check_judges(self) -> None:
        """Raise ``JudgeNotConfiguredError`` (or a bad-override error) unless every judge is reachable by
        configuration, before any answer is generated (nothing inside :func:`judge_check_skipped`)."""
        if _JUDGE_CHECK_SKIPPED.get():
            return
        for judge_config, default_model in self.judge_configs({"metadata": self.config.metadata}):
            resolve_endpoint(judge_config, default_model)

    def doc_to_visual(self, doc: dict) -> Any:
        """The task's visuals; ``gate.Refused`` for a row whose files were refused (nothing is generated)."""
        if doc.get(DATA_ERROR_KEY):
            raise gate.Refused("unreadable", "the data row", doc[DATA_ERROR_KEY])
        return super().doc_to_visual(doc)

    def download(self, dataset_kwargs: dict | None = None) -> None:
        self.check_judges()
        files = local_data_files(self.config.metadata, self.config.dataset_name, self.config.test_split)
        source = self.data_source(None if files is None else list(files.values()), dataset_kwargs)
        if files is not None:
            self.DATASET_PATH, self.DATASET_NAME = "parquet", None
            checked = {split: self.checked_local_file(path) for split, path in files.items()}
            dataset_kwargs = {**(dataset_kwargs or {}), "data_files": checked}
        super().download(dataset_kwargs)
        self.record_data_source(source)

    def data_source(self, local_files: list[str] | None, dataset_kwargs: dict | None) -> dict[str, object]:
        """Where the task's data comes from (``provenance``): the records of its `local_files` in the local data
        folder, or (None) the dataset its YAML names."""
        if local_files is not None:
            return local_source([Path(f) for f in local_files], Path(str(read(DATA_DIR_ENV))))
        return configured_source(str(self.config.dataset_path), self.config.dataset_name, dataset_kwargs)

    def record_data_source(self, source: dict[str, object]) -> None:
        """Note for the run's provenance that the task read `source`, with its loaded split's fingerprint."""
        loaded = (self.dataset or {}).get(self.config.test_split)
        record_data_source(self.config.task, source, str(getattr(loaded, "_fingerprint", "")))

    def checked_local_file(self, path: str) -> str:
        """The parquet to load for a file of the local data folder (:func:`checked_data_file`); each row whose
        files the gate refuses is logged and fails as ``data_error``."""
        loaded, refused = checked_data_file(Path(path), Path(read(DATA_DIR_ENV)))
        for row, reason in list(refused.items())[:5]:
            logger.warning("{}: data row {} fails as {}: {}", self.config.task, row, DATA_ERROR, reason)
        if len(refused) > 5:
            logger.warning("{}: {} more data rows fail as {}", self.config.task, len(refused) - 5, DATA_ERROR)
        return str(loaded)
