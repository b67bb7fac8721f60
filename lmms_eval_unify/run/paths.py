"""Where the plugin's installed files are, and the variable that names the local data folder."""

from __future__ import annotations

import importlib.util
from pathlib import Path

DATA_DIR_ENV = "LMMS_EVAL_UNIFY_DATA_DIR"
"""The local data folder (``lmms-eval-unify data generate`` or ``data prepare``) tasks read instead of the Hub."""


def tasks_path() -> Path:
    """Folder holding every task YAML of this plugin (usable with ``--include_path``).

    Found through the import system, so it is right for wheel installs (``lmms_eval_unify/tasks``) and
    editable installs (the repository's top-level ``tasks/`` mapped onto ``lmms_eval_unify.tasks``).
    """
    spec = importlib.util.find_spec("lmms_eval_unify.tasks")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("lmms_eval_unify.tasks is not installed: reinstall the plugin")
    return Path(next(iter(spec.submodule_search_locations))).resolve()
