"""Uni-MMMU at a glance (torch-free): tasks, their per-sample metrics, the judge and the paper's roll-up.

The scorers, the roll-ups in ``lmms_eval_unify.benchmarks.uni_mmmu.paper`` and the task class read these names from
here (the maze/sliding metrics are the shared puzzle scorer's, ``puzzles.scoring.METRICS``).
"""

from __future__ import annotations

from lmms_eval_unify.env_vars import Variable, json_objects

BENCHMARK = "uni_mmmu"
TASK_PREFIX = f"{BENCHMARK}_"
"""Prefix of every task name of the benchmark (the leaderboard reads the tasks that start with it)."""
TASKS = ("jigsaw", "maze", "sliding", "geometry", "science", "code")
STEP_TASKS = ("maze", "sliding")
JUDGED = ("geometry", "science", "code")
JUDGED_METRICS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "geometry": (("img_acc",), ("text_acc",)),
    "science": (("img_acc",), ("reasoning_acc", "text_acc")),
    "code": (("shape_color_score", "position_score"), ("text_acc",)),
}
"""Judged task -> (metrics of the image judgement, metrics of the text judgement)."""
METRICS: dict[str, tuple[str, ...]] = {
    "jigsaw": ("img_score", "text_acc"),
    **{task: (*image, *text) for task, (image, text) in JUDGED_METRICS.items()},
}
"""Per-sample metrics of the jigsaw and judged tasks (besides ``invalid_outputs``)."""
METRIC_FAMILIES: dict[str, tuple[str, ...]] = {"jigsaw": ("dreamsim",)}
"""Metric backbones each task's scorer loads (the others load none; checked by the run preflight)."""
JUDGE_MODEL = "Qwen/Qwen2.5-VL-72B-Instruct"
"""The official judge of every Uni-MMMU judgement but the geometry text (Qwen3-32B)."""
JUDGES_ENV = "LMMS_EVAL_UNIFY_UNI_MMMU_JUDGES"
"""JSON mapping template id -> judge config fields for that template only, e.g. to send the geometry text
to a second endpoint serving Qwen3-32B: ``{"uni_mmmu.geometry.text": {"base_url": "http://host:8001/v1",
"extra_body": {"chat_template_kwargs": {"enable_thinking": true}}}}``. Unset = the global judge settings."""
ENV_VARIABLES = (
    Variable(
        JUDGES_ENV,
        json_objects,
        "per-template judge settings of Uni-MMMU: template id -> judge config fields (docs/judges.md)",
        'a JSON object of objects, e.g. {"uni_mmmu.geometry.text": {"base_url": "http://HOST:8001/v1"}}',
    ),
)
"""The benchmark's own environment variables (``lmms_eval_unify.env_vars`` registers them)."""


def task_name(task: str) -> str:
    """lmms-eval task name, e.g. ``uni_mmmu_maze``."""
    return f"{BENCHMARK}_{task}"


def metric_families(task: str) -> tuple[str, ...]:
    """The metric backbones the scorer of `task` loads (:data:`METRIC_FAMILIES`)."""
    return METRIC_FAMILIES.get(task.removeprefix(TASK_PREFIX), ())
