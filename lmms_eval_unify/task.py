"""The lmms-eval task class of every plugin task: lmms-eval's own, plus a local-data switch.

Task YAMLs name the published dataset (a Hub id). Setting ``LMMS_EVAL_UNIFY_DATA_DIR`` makes every task read
``<dir>/<benchmark>/<dataset_name>/<split>.parquet`` instead — the layout written by
``lmms-eval-unify data generate`` and ``data prepare`` — so one YAML serves published and local data.
"""

from __future__ import annotations

import os
from pathlib import Path

from lmms_eval.api.task import ConfigurableTask

DATA_DIR_ENV = "LMMS_EVAL_UNIFY_DATA_DIR"


class LocalDataMissingError(FileNotFoundError):
    """The local data folder is set but lacks a file a task needs."""


def local_data_files(metadata: dict | None, dataset_name: str | None, split: str) -> dict[str, str] | None:
    """``{split: parquet path}`` when local data is configured, else ``None`` (use the Hub dataset)."""
    root = os.environ.get(DATA_DIR_ENV)
    if not root:
        return None
    benchmark = (metadata or {}).get("benchmark")
    path = Path(root) / str(benchmark) / str(dataset_name) / f"{split}.parquet"
    if not path.is_file():
        raise LocalDataMissingError(
            f"{DATA_DIR_ENV}={root} is set but {path} does not exist; generate it with "
            f"`lmms-eval-unify data generate --out {root}` (or prepare the published data), "
            f"or unset {DATA_DIR_ENV} to load the Hub dataset"
        )
    return {split: str(path)}


class UnifyTask(ConfigurableTask):
    """A ``ConfigurableTask`` whose data can come from the local data folder."""

    def __init__(self, config: dict | None = None, **kwargs) -> None:
        # lmms-eval hands a ``class:`` task its whole YAML, including the ``class`` key itself.
        super().__init__(config={k: v for k, v in (config or {}).items() if k != "class"}, **kwargs)

    def download(self, dataset_kwargs: dict | None = None) -> None:
        files = local_data_files(self.config.metadata, self.config.dataset_name, self.config.test_split)
        if files is not None:
            self.DATASET_PATH, self.DATASET_NAME = "parquet", None
            dataset_kwargs = {**(dataset_kwargs or {}), "data_files": files}
        super().download(dataset_kwargs)
