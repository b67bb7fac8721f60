"""Task class of the Uni-MMMU tasks: the local-data switch of ``UnifyTask`` plus, for the judged tasks
(``metadata.judged: true``), a check at construction that a judge endpoint is configured, so a run never
generates answers it cannot score (the same check as UniG2U's judged tasks)."""

from __future__ import annotations

from lmms_eval_unify.benchmarks.uni_mmmu.judged import VL_JUDGE, check_judges, template_configs
from lmms_eval_unify.judges.config import JudgeConfig
from lmms_eval_unify.task import UnifyTask


class UniMMMUTask(UnifyTask):
    """A ``UnifyTask`` that raises early when a judged task has no judge (``JudgeNotConfiguredError``) or
    malformed per-template judge overrides."""

    @classmethod
    def judge_configs(cls, config: dict) -> list[tuple[JudgeConfig, str | None]]:
        """The global judge and every per-template endpoint of ``LMMS_EVAL_UNIFY_UNI_MMMU_JUDGES``."""
        if not (config.get("metadata") or {}).get("judged"):
            return []
        overrides = template_configs()
        return [(JudgeConfig(), VL_JUDGE)] + [(JudgeConfig.coerce(o), VL_JUDGE) for o in overrides.values()]

    def download(self, dataset_kwargs: dict | None = None) -> None:
        if (self.config.metadata or {}).get("judged"):
            check_judges()
        super().download(dataset_kwargs)
