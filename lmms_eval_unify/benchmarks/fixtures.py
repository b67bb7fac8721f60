"""Writing generated sets: parquet files with Hugging Face image features, and bundled sample photos."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets
import numpy as np
from PIL import Image


def png_cell(image: Image.Image | dict) -> dict:
    """An image as the ``{"bytes", "path"}`` cell of a ``datasets.Image`` column (dicts pass through)."""
    if isinstance(image, dict):
        return image
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return {"bytes": buffer.getvalue(), "path": None}


def sample_photo(name: str, size: int) -> Image.Image:
    """A photo bundled with scikit-image (``skimage.data.<name>``) as an RGB ``size``² image."""
    from skimage import data as samples

    return Image.fromarray(np.asarray(getattr(samples, name)())).convert("RGB").resize((size, size))


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


def write_parquet(
    rows: list[dict[str, Any]], path: Path, images: Sequence[str] = (), image_lists: Sequence[str] = ()
) -> Path:
    """Write ``rows`` as parquet. Columns in ``images`` / ``image_lists`` hold PIL images (or image cells)
    and become ``Image`` / ``Sequence(Image)`` features; other types are inferred from the first row."""
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
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(encoded, features=datasets.Features(features)).to_parquet(str(path))
    return path
