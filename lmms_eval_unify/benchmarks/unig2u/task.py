"""Task class of the UniG2U tasks: the published parquet file(s), or their local copy.

The YAMLs name the published files as ``data_files`` under ``hf://datasets/kkv233/unig2u_dataset/``. With
``LMMS_EVAL_UNIFY_DATA_DIR=DIR`` the same relative paths are read from ``DIR/unig2u/`` (the layout of the
Hub repository, so a downloaded snapshot works as is, and of ``lmms-eval-unify data generate unig2u``).
A subtask with several files (VSP = Google-map + collision) gets their rows concatenated, with the union
of their columns (absent ones are null) and a ``source`` column naming the file.
"""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path

import datasets
from PIL import Image

from lmms_eval_unify.benchmarks.unig2u.spec import HUB_ROOT
from lmms_eval_unify.env_vars import read
from lmms_eval_unify.integration.task import LocalDataMissingError, UnifyTask
from lmms_eval_unify.run.paths import DATA_DIR_ENV


def resolve_files(files: str | list[str], data_dir: str | None) -> list[str]:
    """Hub URLs, or their local copies under ``<data_dir>/unig2u/`` (error naming the missing file)."""
    paths = [files] if isinstance(files, str) else list(files)
    if not data_dir:
        return paths
    resolved = []
    for url in paths:
        local = Path(data_dir) / "unig2u" / url.removeprefix(HUB_ROOT)
        if not os.path.lexists(local):
            raise LocalDataMissingError(
                f"{DATA_DIR_ENV}={data_dir} is set but {local} does not exist; run "
                f"`lmms-eval-unify data generate unig2u --out {data_dir}`, download the Hub dataset "
                f"kkv233/unig2u_dataset into {Path(data_dir) / 'unig2u'}, or unset {DATA_DIR_ENV}"
            )
        resolved.append(str(local))
    return resolved


def concatenate(parts: list[datasets.Dataset], sources: list[str]) -> datasets.Dataset:
    """Rows of all parts, columns = union (missing ones null), plus ``source``."""
    features = {}
    for part in parts:
        features.update(part.features)
    padded = []
    for part, source in zip(parts, sources, strict=True):
        for name, feature in features.items():
            if name not in part.column_names:
                part = part.add_column(name, [None] * len(part), feature=feature)
        part = part.add_column("source", [source] * len(part))
        padded.append(part.cast(datasets.Features({**features, "source": datasets.Value("string")})))
    return datasets.concatenate_datasets(padded)


def rows_of_type(dataset: datasets.Dataset, doc_type: str) -> datasets.Dataset:
    """The BabyVision rows of one ``type`` (both BabyVision subtasks read the same file)."""
    return dataset.filter(lambda row: row["type"] == doc_type)


def base64_image(text: str) -> Image.Image:
    """A PhyX ``image`` cell (base64-encoded image bytes) as an RGB image."""
    with Image.open(io.BytesIO(base64.b64decode(text))) as image:
        return image.convert("RGB")


class UniG2UTask(UnifyTask):
    """A ``UnifyTask`` reading one or several UniG2U parquet files (the judge check of a judged task is
    ``UnifyTask``'s)."""

    @classmethod
    def data_files(cls, config: dict) -> list[str] | None:
        urls = ((config.get("dataset_kwargs") or {}).get("data_files") or {}).get(config.get("test_split"))
        paths = resolve_files(urls or [], read(DATA_DIR_ENV))
        return paths if read(DATA_DIR_ENV) else None

    def download(self, dataset_kwargs: dict | None = None) -> None:
        self.check_judges()
        split = self.config.test_split
        urls = (dataset_kwargs or {})["data_files"][split]
        paths = resolve_files(urls, read(DATA_DIR_ENV))
        source = self.data_source(paths if read(DATA_DIR_ENV) else None, dataset_kwargs)
        if read(DATA_DIR_ENV):  # read through the gate: refused rows fail as data_error
            paths = [self.checked_local_file(path) for path in paths]
        parts = [datasets.load_dataset("parquet", data_files={split: p}, split=split) for p in paths]
        sources = [Path(p).stem for p in resolve_files(urls, read(DATA_DIR_ENV))]
        dataset = parts[0] if len(parts) == 1 else concatenate(parts, sources)
        self.dataset = datasets.DatasetDict({split: dataset})
        if self.config.process_docs is not None:
            self.dataset[split] = self.config.process_docs(self.dataset[split])
        self.dataset_no_image = self.dataset
        self.record_data_source(source)
