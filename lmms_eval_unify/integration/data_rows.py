"""The rows of a local data folder, read through the gate before lmms-eval loads them.

A data row may name files instead of holding them: an image cell with a ``path`` and no ``bytes`` (which the
``datasets`` library would open on access) or a string that names a media file (a video path). Every such path
must be a regular file inside the data folder (:func:`lmms_eval_unify.gate.check_file`). A row with a path the
gate refuses fails only its own sample, as the data's fault: its file cells are emptied (nothing outside the
data folder is ever opened) and :data:`DATA_ERROR_KEY` holds the refusal, which ``UnifyTask`` scores as
``data_error``. The file itself is then loaded from a checked copy; a file with nothing refused is loaded as is.

:func:`smoke_problem` is the preflight's schema check: the task's own ``doc_to_text`` / ``doc_to_visual`` /
``doc_to_target`` (after ``process_docs``) run on the first clean row, so a file of the wrong schema is reported
before anything is generated instead of failing the whole run with a traceback.
"""

from __future__ import annotations

import inspect
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmms_eval_unify import gate
from lmms_eval_unify.generation.visuals import VIDEO_SUFFIXES

DATA_ERROR_KEY = "_unify_data_error"
"""Column of a checked copy: why the row's files were refused ("" for a clean row)."""
MEDIA_SUFFIXES = VIDEO_SUFFIXES | {".png", ".jpg", ".jpeg", ".jfif", ".webp", ".bmp", ".tif", ".tiff"}
"""A string cell ending in one of these names a file the task reads."""
HF_METADATA_KEY = b"huggingface"


def _table(path: Path, data_root: Path) -> Any:
    import pyarrow.parquet as pq

    return pq.read_table(gate.check_file(path, "data_file", [data_root], _fix(data_root)))


def _fix(data_root: Path) -> str:
    return f"write the data with `lmms-eval-unify data generate` or `data prepare` into {data_root}"


def _is_image_struct(kind: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_struct(kind) and {kind.field(i).name for i in range(kind.num_fields)} >= {"bytes", "path"}


def _names_a_file(value: str) -> bool:
    """Whether a string cell is a media file's path: a video name in any form (a bare ``clip.mp4`` is opened
    relative to the working folder, so it is checked like any path), or an image suffix with a folder part
    (``images/a.png``, ``/abs/a.png``). A bare image name (IllusionBench's ``image_name`` ``sport-0-x.png``, whose
    image is in another cell) names no file to check, and joined to a folder it cannot leave it."""
    suffix = Path(value).suffix.lower()
    return suffix in VIDEO_SUFFIXES or (suffix in MEDIA_SUFFIXES and ("/" in value or "\\" in value))


def _named_paths(column: Any) -> list[tuple[int, str]]:
    """``(row, path)`` of every file a column names: image cells without bytes, media-file strings (also in
    lists)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind, rows = column.type, None
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        rows = pc.list_parent_indices(column).to_pylist()
        column, kind = pc.list_flatten(column), kind.value_type
    if _is_image_struct(kind):
        paths = pc.struct_field(column, "path").to_pylist()
        without_bytes = pc.is_null(pc.struct_field(column, "bytes")).to_pylist()
        named = [(i, p) for i, (p, empty) in enumerate(zip(paths, without_bytes, strict=True)) if p and empty]
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        values = column.to_pylist()
        named = [(i, v) for i, v in enumerate(values) if v and _names_a_file(v)]
    else:
        return []
    return [(rows[i] if rows is not None else i, p) for i, p in named]


def refused_rows(table: Any, source: Path, data_root: Path) -> dict[int, dict[str, str]]:
    """``row -> {column: refusal}`` of every file a row names that the gate refuses (outside ``data_root``,
    missing, not a regular file, too large)."""
    refused: dict[int, dict[str, str]] = {}
    for name in table.column_names:
        for row, path in _named_paths(table.column(name)):
            try:
                gate.check_file(path, "data_file", [data_root], _fix(data_root))
            except gate.Refused as refusal:
                refused.setdefault(row, {})[name] = f"{source} row {row}, column {name!r}: {refusal}"
    return refused


def checked_data_file(path: Path, data_root: Path) -> tuple[Path, dict[int, str]]:
    """The parquet to load for ``path`` and ``row -> reason`` of the rows whose files were refused: ``path``
    itself when none was, else a checked copy (refused file cells emptied, :data:`DATA_ERROR_KEY` added).
    ``gate.Refused`` when the file itself is refused (outside the data folder, not a regular file)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = _table(path, data_root)
    refused = refused_rows(table, path, data_root)
    if not refused:
        return path, {}
    for name in {column for columns in refused.values() for column in columns}:
        keep = pa.array([row not in refused or name not in refused[row] for row in range(table.num_rows)])
        column = table.column(name)
        emptied = pa.chunked_array([pa.nulls(len(column), column.type)]) if len(column) else column
        position = table.column_names.index(name)
        table = table.set_column(position, name, pc.if_else(keep, column, emptied))
    reasons = {row: "; ".join(columns.values()) for row, columns in refused.items()}
    table = table.append_column(DATA_ERROR_KEY, pa.array([reasons.get(row, "") for row in range(table.num_rows)]))
    table = table.replace_schema_metadata(_with_error_feature(table.schema.metadata or {}))
    copy = Path(tempfile.mkdtemp(prefix="lmms_eval_unify_data_")) / path.name
    pq.write_table(table, copy)
    return copy, reasons


def _with_error_feature(metadata: dict[bytes, bytes]) -> dict[bytes, bytes]:
    """The ``datasets`` schema metadata with :data:`DATA_ERROR_KEY` added as a string feature."""
    if HF_METADATA_KEY not in metadata:
        return metadata
    info = json.loads(metadata[HF_METADATA_KEY])
    info.setdefault("info", {}).setdefault("features", {})[DATA_ERROR_KEY] = {"dtype": "string", "_type": "Value"}
    return {**metadata, HF_METADATA_KEY: json.dumps(info).encode()}


def smoke_problem(config: dict, path: Path, data_root: Path) -> str | None:
    """Why the task cannot read ``path`` (the file refused, not parquet, no rows, or the task's own doc
    functions fail on its first clean row: a wrong schema), or None."""
    import datasets
    import pyarrow as pa

    try:
        table = _table(path, data_root)
    except gate.Refused as refusal:
        return str(refusal)
    except (pa.ArrowException, OSError) as exc:
        return f"{path} is not a readable parquet file ({type(exc).__name__}: {exc})"
    if table.num_rows == 0:
        return f"{path} has no rows"
    refused = refused_rows(table, path, data_root)
    clean = next((row for row in range(table.num_rows) if row not in refused), None)
    if clean is None:
        return f"every row names a file the gate refuses, e.g. {next(iter(refused[0].values()))}"
    try:
        features = datasets.Features.from_arrow_schema(table.schema)
        docs = datasets.Dataset(table.slice(clean, 1), info=datasets.DatasetInfo(features=features))
        if callable(config.get("process_docs")):
            docs = config["process_docs"](docs)
        if len(docs):
            _run_doc_functions(config, docs[0])
    except Exception as exc:  # noqa: BLE001 - any failure of the task's own functions is a schema problem
        return (
            f"{path} does not have the columns {config.get('task')} reads (row {clean}: {type(exc).__name__}: "
            f"{str(exc)[:300]})"
        )
    return None


def _run_doc_functions(config: dict, doc: dict) -> None:
    kwargs = dict((config.get("lmms_eval_specific_kwargs") or {}).get("default") or {})
    for key in ("doc_to_text", "doc_to_visual", "doc_to_target"):
        function: Callable | None = config.get(key) if callable(config.get(key)) else None
        if function is None:
            continue
        takes_kwargs = len(inspect.signature(function).parameters) == 2
        function(doc, kwargs) if takes_kwargs else function(doc)
