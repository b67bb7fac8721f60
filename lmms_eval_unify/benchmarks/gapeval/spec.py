"""GapEval at a glance (torch-free): categories, directions, tasks, metrics, judge and the paper's roll-up.

The data generator, the release converter, the scorers, the roll-ups in ``lmms_eval_unify.benchmarks.gapeval.paper``
and the task class (``JUDGE_MODEL``, through ``UnifyTask``) read these names from here.
"""

from __future__ import annotations

BENCHMARK = "gapeval"
TASK_PREFIX = f"{BENCHMARK}_"
"""Prefix of every task name of the benchmark (the leaderboard reads the tasks that start with it)."""
CATEGORIES = ("world_knowledge", "numerical_perception", "instruction_following", "reasoning")
CATEGORY_TITLES = dict(
    zip(
        CATEGORIES,
        ("World Knowledge", "Numerical Perception", "Instruction Following", "Reasoning"),
        strict=True,
    )
)
DIRECTIONS = ("und", "gen")
"""Every question is asked twice: answered in text (``und``) and drawn as one image (``gen``)."""
METRICS = ("correct",)
"""Per-sample metric of every task (plus ``invalid_outputs``), a judge verdict in {0, 1}."""
JUDGE_MODEL = "openai/gpt-5-mini"
"""The paper's judge (Sec. 3; the templates' default model)."""
GROUP = "gapeval"


def task_name(category: str, direction: str) -> str:
    """``gapeval_<category>_<direction>``."""
    return f"{BENCHMARK}_{category}_{direction}"


def judge_template(category: str, direction: str) -> str:
    """Id of the judge prompt (``judges/prompts/gapeval.yaml``) of one category and direction."""
    return f"{BENCHMARK}.{direction}.{category}"


TASKS = tuple(task_name(c, d) for c in CATEGORIES for d in DIRECTIONS)
