"""Task class of the Uni-MMMU tasks: the local-data switch of ``UnifyTask`` plus, for the judged tasks
(``metadata.judged: true``), a check at construction that a judge endpoint is configured, so a run never
generates answers it cannot score (the same check as UniG2U's judged tasks)."""

from __future__ import annotations

from lmms_eval_unify.benchmarks.uni_mmmu.judged import check_judges
from lmms_eval_unify.task import UnifyTask


class UniMMMUTask(UnifyTask):
    """A ``UnifyTask`` that raises early when a judged task has no judge (``JudgeNotConfiguredError``) or
    malformed per-template judge overrides."""

    def download(self, dataset_kwargs: dict | None = None) -> None:
        if (self.config.metadata or {}).get("judged"):
            check_judges()
        super().download(dataset_kwargs)
