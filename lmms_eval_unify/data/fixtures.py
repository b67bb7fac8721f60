"""Writing generated sets: parquet files with Hugging Face image features, and bundled sample photos."""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
import numpy as np
from PIL import Image

from lmms_eval_unify.writes import write_bytes

PNG_COMPRESS_LEVEL = 1
"""zlib level of generated PNGs: lossless at every level; 1 encodes about twice as fast as PIL's default 6 and
makes files a few percent larger."""


def png_cell(image: Image.Image | dict) -> dict:
    """An image as the ``{"bytes", "path"}`` cell of a ``datasets.Image`` column (dicts pass through)."""
    if isinstance(image, dict):
        return image
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    return {"bytes": buffer.getvalue(), "path": None}


@functools.cache
def _decoded_sample_photo(name: str, size: int) -> Image.Image:
    from skimage import data as samples

    return Image.fromarray(np.asarray(getattr(samples, name)())).convert("RGB").resize((size, size))


def sample_photo(name: str, size: int) -> Image.Image:
    """A photo bundled with scikit-image (``skimage.data.<name>``) as an RGB ``size``² image (a fresh copy the
    caller may draw on; each photo is decoded and resized once per process)."""
    return _decoded_sample_photo(name, size).copy()


FileListener = Callable[[Path], object]
"""Called with each file a generator has just written (the data CLI's progress line)."""


@dataclass
class Written:
    """The files a generator has written, in order; ``on_file`` hears each one as it is added."""

    on_file: FileListener | None = None
    paths: list[Path] = field(default_factory=list)

    def add(self, *paths: Path) -> None:
        for path in paths:
            self.paths.append(path)
            if self.on_file is not None:
                self.on_file(path)


def _feature(value: Any) -> datasets.Value | datasets.Sequence:
    if isinstance(value, list):
        return datasets.Sequence(datasets.Value("string"))
    if isinstance(value, bool):
        return datasets.Value("bool")
    if isinstance(value, int):
        return datasets.Value("int64")
    if isinstance(value, float):
        return datasets.Value("float64")
    return datasets.Value("string")


def dataset_bytes(dataset: datasets.Dataset) -> bytes:
    """``dataset`` as the bytes of a parquet file."""
    buffer = io.BytesIO()
    dataset.to_parquet(buffer)
    return buffer.getvalue()


def write_dataset(dataset: datasets.Dataset, path: Path, root: Path | None = None) -> Path:
    """Write ``dataset`` as the parquet file ``path`` through the write gate, confined to ``root`` (the data
    folder being written; default the file's own folder): never through a symlink, never half-written."""
    write_bytes(path, dataset_bytes(dataset), path.parent if root is None else root)
    return path


def write_parquet(
    rows: list[dict[str, Any]],
    path: Path,
    images: Sequence[str] = (),
    image_lists: Sequence[str] = (),
    root: Path | None = None,
) -> Path:
    """Write ``rows`` as parquet (:func:`write_dataset`, confined to ``root``). Columns in ``images`` /
    ``image_lists`` hold PIL images (or image cells) and become ``Image`` / ``Sequence(Image)`` features; other
    types are inferred from the first row."""
    features = {
        key: datasets.Image()
        if key in images
        else datasets.Sequence(datasets.Image())
        if key in image_lists
        else _feature(value)
        for key, value in rows[0].items()
    }
    encoded = [
        {
            key: (None if value is None else png_cell(value))
            if key in images
            else [png_cell(v) for v in value]
            if key in image_lists
            else value
            for key, value in row.items()
        }
        for row in rows
    ]
    return write_dataset(datasets.Dataset.from_list(encoded, features=datasets.Features(features)), path, root)
