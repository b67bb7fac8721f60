"""Where model outputs live on disk: ``<root>/<task>/<doc_id>/`` with PNG images and ``record.json``.

The media base is, in order: the model argument ``output_dir``; ``$LMMS_EVAL_UNIFY_OUTPUT_DIR``; the run's
``--output_path`` (as ``<output_path>/unify_media``); ``./lmms_eval_unify_outputs`` (``run.context.media_base``).
Each model configuration writes under its own folder of it, ``<model>-<hash of its describe()>``, so two
models, or one model run with different ``--model_args``, sharing an ``--output_path`` never overwrite or
reuse each other's images; the same configuration finds its earlier outputs there and resumes.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from pathlib import Path
from typing import Any

from PIL import Image

from lmms_eval_unify.gate import Refused, join, read_json
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.run.context import media_base
from lmms_eval_unify.writes import write_bytes, write_text

MODEL_FILE = "model.json"
"""A configuration's ``describe()``, in its media folder, with the :data:`MODEL_PROVENANCE_KEY` list beside it."""
MODEL_PROVENANCE_KEY = "provenance"
MAX_PROVENANCE_ENTRIES = 20
"""The newest distinct provenance entries a ``model.json`` keeps (resumed runs of one configuration)."""


def merged_provenance(earlier: object, entry: dict[str, Any], replacing: dict[str, Any] | None) -> list[Any]:
    """The provenance list of a ``model.json`` once ``entry`` is recorded: it replaces ``replacing`` (what this
    process wrote before) when that is the newest entry, is dropped when equal to the newest, else is appended;
    only the newest :data:`MAX_PROVENANCE_ENTRIES` are kept. An empty ``entry`` records nothing."""
    entries = list(earlier) if isinstance(earlier, list) else []
    if entries and replacing is not None and entries[-1] == replacing:
        entries.pop()
    if entry and (not entries or entries[-1] != entry):
        entries.append(entry)
    return entries[-MAX_PROVENANCE_ENTRIES:]


def model_file_text(description: dict[str, Any], provenance: list[Any]) -> str:
    """The text of a ``model.json``: ``describe()`` and the provenance list under :data:`MODEL_PROVENANCE_KEY`."""
    return json.dumps({**description, MODEL_PROVENANCE_KEY: provenance}, indent=1, default=str)


def resolve_output_root(explicit: str | None = None) -> Path:
    """The media base directory, following the documented precedence."""
    return media_base(explicit)


def configuration_folder(model_id: str, description: dict[str, Any]) -> str:
    """Folder name of one model configuration: ``<model>-<first 10 hex of sha256(describe())>``."""
    canonical = json.dumps(description, sort_keys=True, default=str)
    return f"{_safe_component(model_id)}-{hashlib.sha256(canonical.encode()).hexdigest()[:10]}"


def _safe_component(value: object) -> str:
    """A path component from a task name or doc id: no separators, no dot-dot."""
    text = re.sub(r"[^A-Za-z0-9_.=-]+", "_", str(value)).strip(".")
    return text or "_"


class MediaStore:
    """Writes and reads one model's outputs under ``root``; never writes outside it. Writes pass the write gate
    (:mod:`lmms_eval_unify.writes`) from the folder above ``root`` (the media base), so a symlink planted at the
    configuration's folder, a sample's folder or a file is refused, never followed."""

    def __init__(self, root: Path) -> None:
        self.written = Path(os.path.abspath(root))
        """``root`` as named (writes open it from its parent without following symlinks)."""
        self.root = Path(root).resolve()

    def sample_dir(self, task: str, doc_id: object) -> str:
        """Relative folder of one sample."""
        return f"{_safe_component(task)}/{_safe_component(doc_id)}"

    def save_image(self, task: str, doc_id: object, name: str, image: Image.Image) -> str:
        """Save ``image`` as PNG and return its path relative to the root."""
        relative = f"{self.sample_dir(task, doc_id)}/{_safe_component(name)}.png"
        encoded = io.BytesIO()
        image.save(encoded, format="PNG")
        write_bytes(self.written / relative, encoded.getvalue(), self.written.parent)
        return relative

    def _record_path(self, task: str, doc_id: object) -> Path:
        return join(self.root, f"{self.sample_dir(task, doc_id)}/record.json")

    def save_record(self, task: str, doc_id: object, record: UnifiedOutput) -> None:
        """Persist the record next to its images (written atomically) so an interrupted run can resume."""
        relative = f"{self.sample_dir(task, doc_id)}/record.json"
        write_text(self.written / relative, record.to_json(), self.written.parent)

    def load_record(self, task: str, doc_id: object, signature: str) -> UnifiedOutput | None:
        """A finished record of an earlier run with the same request signature whose images all exist."""
        try:  # a corrupt or hostile record.json (read through the gate, paths kept inside the root): run again
            path = self._record_path(task, doc_id)
            if not path.exists():
                return None
            record = UnifiedOutput.from_dict(read_json(path, "record", [self.root]))  # type: ignore[arg-type]
            paths = record.images + [s.image for s in record.steps if s.image] + record.video_frames
            if record.signature != signature or record.error or not all(join(self.root, p).is_file() for p in paths):
                return None
        except (Refused, ValueError, TypeError, RecursionError):
            return None
        record.root = str(self.root)
        return record
