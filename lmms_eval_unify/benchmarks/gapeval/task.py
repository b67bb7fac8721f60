"""Task class of the GapEval tasks: a judge is required up front, task-level judge overrides, and repeats.

* A GapEval task refuses to start without a judge endpoint (``JudgeNotConfiguredError``), so a run never
  generates answers it cannot score.
* ``metadata.judge`` (a mapping of ``JudgeConfig`` fields, e.g. ``two_turn: false`` for single-turn text
  judging, ``model``, ``base_url``) is handed to every judgement of the task.
* ``repeats: K`` (YAML) or ``lmms-eval --repeats K``: the paper samples each question 10 times per direction.
  lmms-eval sends the same request K times, which a unified model would answer from one seed into one media
  folder; instead each question becomes K rows (``repeat`` = 0..K-1) with their own doc ids, hence their own
  per-sample seeds and media folders, and lmms-eval's own repeats are set back to 1. Rows keep question
  order (question 0's repeats first), so ``--limit`` counts question x repeat rows.
"""

from __future__ import annotations

import functools

import datasets
from loguru import logger

from lmms_eval_unify.benchmarks.gapeval.scoring import OFFICIAL_JUDGE
from lmms_eval_unify.judges.config import JudgeConfig, resolve_endpoint
from lmms_eval_unify.task import UnifyTask


def with_repeats(dataset: datasets.Dataset, repeats: int) -> datasets.Dataset:
    """Each row ``repeats`` times in a row, with a ``repeat`` column 0..repeats-1."""
    n = len(dataset)
    expanded = dataset.select([i for i in range(n) for _ in range(repeats)])
    return expanded.add_column("repeat", [r for _ in range(n) for r in range(repeats)])


class GapEvalTask(UnifyTask):
    """A ``UnifyTask`` with GapEval's judge settings and per-repeat rows."""

    def __init__(self, config: dict | None = None, **kwargs) -> None:
        super().__init__(config=config, **kwargs)
        overrides = self.judge_overrides()
        if overrides and callable(self.config.process_results):
            self.config.process_results = functools.partial(
                self.config.process_results, judge_config=overrides
            )

    def judge_overrides(self) -> dict:
        return dict((self.config.metadata or {}).get("judge") or {})

    @classmethod
    def judge_configs(cls, config: dict) -> list[tuple[JudgeConfig, str | None]]:
        return [(JudgeConfig.coerce((config.get("metadata") or {}).get("judge")), OFFICIAL_JUDGE)]

    def download(self, dataset_kwargs: dict | None = None) -> None:
        resolve_endpoint(JudgeConfig.coerce(self.judge_overrides()), OFFICIAL_JUDGE)
        super().download(dataset_kwargs)

    def build_all_requests(self, **kwargs) -> None:
        repeats = int(self.config.repeats or 1)
        if repeats > 1:
            split = self.config.test_split
            for table in {id(d): d for d in (self.dataset, self.dataset_no_image)}.values():
                table[split] = with_repeats(table[split], repeats)
            self.config.repeats = 1
            logger.info("{}: {} repeats -> one row per question and repeat", self.config.task, repeats)
        super().build_all_requests(**kwargs)
