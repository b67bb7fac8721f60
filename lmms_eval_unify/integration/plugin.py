"""Registration with lmms-eval: model manifests and task discovery, with no flag or env var.

lmms-eval runs the callables of the ``lmms_eval.models`` entry-point group when ``lmms_eval.models`` is
imported, which happens before the CLI builds its ``TaskManager``. :func:`manifests` uses that moment to
make ``TaskManager`` index our ``tasks/`` folder *after* lmms-eval's own, so our task and group names
(those of ``lmms_eval_unify.benchmarks.BENCHMARKS``) take precedence over the built-in ones of the same name.
The first index build also installs the run hooks (preflight, run status, exit code:
``lmms_eval_unify.integration.run_hooks``). Every lmms-eval internal we wrap or read is a *seam*
(``lmms_eval_unify.integration.seams``): :func:`manifests` checks their shapes and registers the end-of-run check
that an lmms-eval CLI run went through each, so a changed lmms-eval fails loudly instead of silently.

lmms-eval stops loading model plugins at the first one that fails, so :func:`manifests` also loads every
other plugin on its own and names each broken one (``lmms_eval_unify.integration.broken_plugins``); a broken
plugin that lmms-eval reaches before ours hides our models, which only ``lmms-eval-unify doctor`` can say.
"""

from __future__ import annotations

import functools

from loguru import logger

from lmms_eval_unify.console import tolerate_any_locale
from lmms_eval_unify.integration import seams
from lmms_eval_unify.integration.broken_plugins import find_broken_plugins
from lmms_eval_unify.integration.seams import SeamError, UnsupportedLmmsEvalError
from lmms_eval_unify.run.paths import tasks_path

SUPPORTED_LMMS_EVAL = seams.ACCEPTED_LMMS_EVAL
ENTRY_POINT = f"{__name__}:manifests"
"""Our entry point of the ``lmms_eval.models`` group (``pyproject.toml``)."""

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
    "upstream": "lmms_eval_unify.model_adapters.upstream.Upstream",
}
_PATCH_MARK = "_lmms_eval_unify_patched"


def version_hint() -> str:
    """The lmms-eval versions this plugin accepts and is tested with, and the one installed."""
    return (
        f"lmms-eval-unify accepts lmms-eval{SUPPORTED_LMMS_EVAL}, tested with {seams.TESTED_LMMS_EVAL} "
        f"(found {seams.lmms_eval_version()})"
    )


def install_task_index() -> None:
    """Make every ``TaskManager`` index our tasks after the built-ins, so ours win on name collisions."""
    try:
        from lmms_eval.tasks import TaskManager
    except ImportError as exc:
        raise UnsupportedLmmsEvalError(f"{version_hint()}: cannot import lmms_eval.tasks.TaskManager") from exc
    if getattr(getattr(TaskManager, "initialize_tasks", None), _PATCH_MARK, False):
        return
    if not seams.check("task_index"):  # logged, naming the seam and the version
        raise SeamError("task_index", seams.describe("task_index", str(seams.SEAMS["task_index"].broken)))
    original = TaskManager.initialize_tasks

    @functools.wraps(original)
    def initialize_tasks(self, include_path=None, include_defaults=True):
        from lmms_eval_unify.integration import run_hooks  # lmms_eval.evaluator is fully imported by now

        seams.mark_called("task_index")
        run_hooks.install()
        index = original(self, include_path=include_path, include_defaults=include_defaults)
        ours = self._get_task_and_group(str(tasks_path()))
        overridden = sorted(
            name for name in ours if name in index and index[name].get("yaml_path") != ours[name].get("yaml_path")
        )
        if overridden:
            logger.info("lmms-eval-unify: our definitions replace built-in {}", ", ".join(overridden))
        index.update(ours)
        return index

    setattr(initialize_tasks, _PATCH_MARK, True)
    TaskManager.initialize_tasks = initialize_tasks
    seams.mark_installed("task_index")


def manifests() -> list:
    """Entry point of the ``lmms_eval.models`` group: our model manifests (and the task index hook). Our code
    then runs inside lmms-eval's process, so its terminal output escapes what the locale cannot encode."""
    tolerate_any_locale()
    seams.register_exit_check()
    try:
        from lmms_eval.models.registry_v2 import ModelManifest

        install_task_index()
        seams.check_at_plugin_load()  # a broken seam is logged here; the preflight then refuses the run
    except (ImportError, UnsupportedLmmsEvalError) as exc:
        # lmms-eval swallows exceptions raised here into one vague log line: say what is wrong ourselves.
        if not isinstance(exc, SeamError):  # a seam error is logged where it is found
            logger.error("{} — {}", version_hint(), exc)
        return []
    for plugin in find_broken_plugins(ENTRY_POINT):
        logger.warning(
            "lmms-eval-unify: {}. lmms-eval stops loading model plugins at the first that fails, so the "
            "models of every plugin after it are missing. Fix: {}. `lmms-eval-unify doctor` checks them all.",
            plugin.describe(),
            plugin.fix(),
        )
    return [ModelManifest(model_id=name, simple_class_path=path) for name, path in MODELS.items()]
