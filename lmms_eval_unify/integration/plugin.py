"""Registration with lmms-eval: model manifests and task discovery, with no flag or env var.

lmms-eval runs the callables of the ``lmms_eval.models`` entry-point group when ``lmms_eval.models`` is
imported, which happens before the CLI builds its ``TaskManager``. :func:`manifests` uses that moment to
make ``TaskManager`` index our ``tasks/`` folder *after* lmms-eval's own, so our task and group names
(those of ``lmms_eval_unify.benchmarks.BENCHMARKS``) take precedence over the built-in ones of the same name. The first index build
also installs the run hooks (preflight, run status, exit code: ``lmms_eval_unify.integration.run_hooks``).
"""

from __future__ import annotations

import importlib.util
from importlib import metadata
from pathlib import Path

from loguru import logger

SUPPORTED_LMMS_EVAL = "0.7.3"

MODELS = {
    "unify_random": "lmms_eval_unify.model_adapters.baselines.UnifyRandom",
    "unify_oracle": "lmms_eval_unify.model_adapters.baselines.UnifyOracle",
    "unify_replay": "lmms_eval_unify.model_adapters.replay.UnifyReplay",
    "janus_pro": "lmms_eval_unify.model_adapters.janus_pro.JanusPro",
    "emu3": "lmms_eval_unify.model_adapters.emu3.Emu3",
    "qwen_image_edit": "lmms_eval_unify.model_adapters.qwen_image_edit.QwenImageEdit",
    "composed": "lmms_eval_unify.model_adapters.composed.Composed",
    "openai_image": "lmms_eval_unify.model_adapters.openai_image.OpenAIImage",
    "show_o2": "lmms_eval_unify.model_adapters.show_o2.ShowO2",
    "bagel": "lmms_eval_unify.model_adapters.bagel.Bagel",
    "omnigen2": "lmms_eval_unify.model_adapters.omnigen2.OmniGen2",
}
_PATCH_MARK = "_lmms_eval_unify_patched"


class UnsupportedLmmsEvalError(RuntimeError):
    """lmms-eval's internals are not the shape this plugin was written against."""


def tasks_path() -> Path:
    """Folder holding every task YAML of this plugin (usable with ``--include_path``).

    Found through the import system, so it is right for wheel installs (``lmms_eval_unify/tasks``) and
    editable installs (the repository's top-level ``tasks/`` mapped onto ``lmms_eval_unify.tasks``).
    """
    spec = importlib.util.find_spec("lmms_eval_unify.tasks")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _version_hint() -> str:
    try:
        found = metadata.version("lmms-eval")
    except metadata.PackageNotFoundError:
        found = "not installed"
    return f"lmms-eval-unify supports lmms-eval=={SUPPORTED_LMMS_EVAL} (found {found})"


def install_task_index() -> None:
    """Make every ``TaskManager`` index our tasks after the built-ins, so ours win on name collisions."""
    try:
        from lmms_eval.tasks import TaskManager
    except ImportError as exc:
        raise UnsupportedLmmsEvalError(
            f"{_version_hint()}: cannot import lmms_eval.tasks.TaskManager"
        ) from exc
    original = getattr(TaskManager, "initialize_tasks", None)
    if original is None or not hasattr(TaskManager, "_get_task_and_group"):
        raise UnsupportedLmmsEvalError(
            f"{_version_hint()}: TaskManager has no initialize_tasks/_get_task_and_group"
        )
    if getattr(original, _PATCH_MARK, False):
        return

    def initialize_tasks(self, include_path=None, include_defaults=True):
        from lmms_eval_unify.integration import run_hooks  # lmms_eval.evaluator is fully imported by now

        run_hooks.install()
        index = original(self, include_path=include_path, include_defaults=include_defaults)
        ours = self._get_task_and_group(str(tasks_path()))
        overridden = sorted(
            name
            for name in ours
            if name in index and index[name].get("yaml_path") != ours[name].get("yaml_path")
        )
        if overridden:
            logger.info("lmms-eval-unify: our definitions replace built-in {}", ", ".join(overridden))
        index.update(ours)
        return index

    setattr(initialize_tasks, _PATCH_MARK, True)
    TaskManager.initialize_tasks = initialize_tasks


def manifests() -> list:
    """Entry point of the ``lmms_eval.models`` group: our model manifests (and the task index hook)."""
    try:
        from lmms_eval.models.registry_v2 import ModelManifest

        install_task_index()
    except (ImportError, UnsupportedLmmsEvalError) as exc:
        # lmms-eval swallows exceptions raised here into one vague log line: say what is wrong ourselves.
        logger.error("{} — {}", _version_hint(), exc)
        return []
    return [ModelManifest(model_id=name, simple_class_path=path) for name, path in MODELS.items()]
