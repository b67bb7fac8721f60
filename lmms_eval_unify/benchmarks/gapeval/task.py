"""Task class of the GapEval tasks: ``UnifyTask`` plus per-repeat rows.

``repeats: K`` (YAML) or ``lmms-eval --repeats K``: the paper samples each question 10 times per direction.
lmms-eval sends the same request K times, which a unified model would answer from one seed into one media
folder; instead each question becomes K rows (``repeat`` = 0..K-1) with their own doc ids, hence their own
per-sample seeds and media folders, and lmms-eval's own repeats are set back to 1. Rows keep question
order (question 0's repeats first), so ``--limit`` counts question x repeat rows. The judge check and the
``metadata.judge`` overrides are ``UnifyTask``'s (``metadata.judged: true``).
"""

from __future__ import annotations

import datasets
from loguru import logger

from lmms_eval_unify.integration.task import UnifyTask


def with_repeats(dataset: datasets.Dataset, repeats: int) -> datasets.Dataset:
    """Each row ``repeats`` times in a row, with a ``repeat`` column 0..repeats-1."""
    n = len(dataset)
    expanded = dataset.select([i for i in range(n) for _ in range(repeats)])
    return expanded.add_column("repeat", [r for _ in range(n) for r in range(repeats)])


class GapEvalTask(UnifyTask):
    """A ``UnifyTask`` with per-repeat rows."""

    def build_all_requests(self, **kwargs) -> None:
        repeats = int(self.config.repeats or 1)
        if repeats > 1:
            split = self.config.test_split
            for table in {id(d): d for d in (self.dataset, self.dataset_no_image)}.values():
                table[split] = with_repeats(table[split], repeats)
            self.config.repeats = 1
            logger.info("{}: {} repeats -> one row per question and repeat", self.config.task, repeats)
        super().build_all_requests(**kwargs)
