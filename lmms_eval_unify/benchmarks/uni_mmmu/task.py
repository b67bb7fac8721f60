"""Task class of the Uni-MMMU tasks: ``UnifyTask`` (local data, the judge check of ``metadata.judged``
tasks) plus the per-template judge endpoints of ``LMMS_EVAL_UNIFY_UNI_MMMU_JUDGES``, checked before any
generation too."""

from __future__ import annotations

from lmms_eval_unify.benchmarks.uni_mmmu.judged import template_configs
from lmms_eval_unify.benchmarks.uni_mmmu.spec import JUDGE_MODEL
from lmms_eval_unify.integration.task import UnifyTask
from lmms_eval_unify.judges.config import JudgeConfig


class UniMMMUTask(UnifyTask):
    """A ``UnifyTask`` whose judged tasks also need every per-template judge override to be well formed."""

    @classmethod
    def judge_configs(cls, config: dict) -> list[tuple[JudgeConfig, str | None]]:
        """The task's judge and every per-template endpoint of ``LMMS_EVAL_UNIFY_UNI_MMMU_JUDGES``."""
        configs = super().judge_configs(config)
        if not configs:
            return []
        return configs + [(JudgeConfig.coerce(o), JUDGE_MODEL) for o in template_configs().values()]
