"""UniG2U-Bench at a glance (torch-free): subtasks (paper name = Tables 11/12 column) -> category,
published parquet file(s), paper size and family; categories (Table 4 order and titles); protocols; judge;
the paper's roll-up.

``family`` selects the prompt builder, visuals and scorer; ``doc_type`` keeps only the rows of that
BabyVision ``type`` (both BabyVision subtasks read one file). Subtasks scored by a GPT-4o judge are in
``JUDGED``. The data generator, the scorers, the roll-ups (``lmms_eval_unify.benchmarks.unig2u.paper``), the task
YAML generator and the task classes read these names from here.
"""

from __future__ import annotations

from dataclasses import dataclass

HUB_REPO = "kkv233/unig2u_dataset"
HUB_ROOT = f"hf://datasets/{HUB_REPO}/"


@dataclass(frozen=True)
class Subtask:
    name: str
    category: str
    files: tuple[str, ...]
    n: int
    family: str
    split: str = "train"
    doc_type: str | None = None


MMSI = ("msr", "attr_meas", "attr_appr", "motion_cam", "motion_obj")
MMSI_FILES = {
    "msr": "msr",
    "attr_meas": "attribute_meas",
    "attr_appr": "attribute_appr",
    "motion_cam": "motion_cam",
    "motion_obj": "motion_obj",
}
ILLUSION_SUBSETS = {"icon": "Illusion_ICON", "in": "Illusion_IN", "logo": "Illusion_LOGO"}
VISUAL_PUZZLES = ("algorithmic", "analogical", "deductive", "inductive", "spatial")
BABYVISION_FILE = "babyvision/babyvision_first2types_all.parquet"
REALUNIFY_FILES = {
    "attn_focus": "realunify_attentional_focusing",
    "mental_recon": "realunify_mental_reconstruction",
    "mental_track": "realunify_mental_tracking",
}

SUBTASKS: dict[str, Subtask] = {
    s.name: s
    for s in [
        Subtask(
            "attn_focus", "real_world_apps", ("realunify/realunify_attentional_focusing.parquet",), 100, "realunify"
        ),
        Subtask(
            "vsp_reason",
            "real_world_apps",
            ("vsp/vsp_google_map_50.parquet", "vsp/vsp_collision_50.parquet"),
            100,
            "vsp",
        ),
        Subtask("geometry", "geometry_reasoning", ("geometry3k/geometry3k_train_first100.parquet",), 100, "geometry3k"),
        Subtask(
            "geometry_3d",
            "geometry_reasoning",
            ("auxsolidmath/auxsolidmath_test_easy_first100.parquet",),
            100,
            "auxsolidmath",
        ),
        Subtask("light", "physics_reasoning", ("phyx/phyx_optics100.parquet",), 100, "phyx"),
        Subtask("mechanism", "physics_reasoning", ("phyx/phyx_mechanics100.parquet",), 100, "phyx"),
        Subtask(
            "mental_recon", "puzzles_games", ("realunify/realunify_mental_reconstruction.parquet",), 100, "realunify"
        ),
        Subtask("mental_track", "puzzles_games", ("realunify/realunify_mental_tracking.parquet",), 100, "realunify"),
        Subtask("visual_track", "puzzles_games", (BABYVISION_FILE,), 83, "babyvision", doc_type="Visual Tracking"),
        Subtask("maze", "puzzles_games", ("uni_mmmu/uni_mmmu_maze100.parquet",), 100, "maze"),
        Subtask("jigsaw", "puzzles_games", ("uni_mmmu/uni_mmmu_jigsaw100.parquet",), 100, "jigsaw"),
        Subtask("sliding", "puzzles_games", ("uni_mmmu/uni_mmmu_sliding54.parquet",), 54, "sliding"),
        Subtask("chartqa", "chart_table", ("chartqa100/chartqa100.parquet",), 100, "chartqa"),
        *[Subtask(s, "spatial_intelligence", (f"mmsi_bench/{MMSI_FILES[s]}.parquet",), 100, "mmsi") for s in MMSI],
        *[
            Subtask(
                f"{sub}_{q}",
                "perception_reasoning",
                (f"illusionbench/illusion_{sub}_test100.parquet",),
                100,
                "illusion",
                split,
            )
            for sub, split in ILLUSION_SUBSETS.items()
            for q in ("scene", "shape")
        ],
        *[
            Subtask(s, "perception_reasoning", (f"visualpuzzles/{s}.parquet",), 100, "visual_puzzles", "test")
            for s in VISUAL_PUZZLES
        ],
        Subtask(
            "fine_discrim",
            "perception_reasoning",
            (BABYVISION_FILE,),
            163,
            "babyvision",
            doc_type="Fine-grained Discrimination",
        ),
    ]
}

# Scored by a GPT-4o judge (templates unig2u.geometry3k, unig2u.auxsolidmath, unig2u.answer_match).
JUDGED = ("geometry", "geometry_3d", "light", "mechanism", "visual_track", "fine_discrim")
JUDGED_FAMILIES = ("geometry3k", "auxsolidmath", "phyx", "babyvision")
# Subtasks of the paper not implemented here (none left).
NOT_YET: tuple[str, ...] = ()

CATEGORY_TITLES = {
    "real_world_apps": "Real-world Apps",
    "geometry_reasoning": "Geometry Reasoning",
    "physics_reasoning": "Physics Reasoning",
    "puzzles_games": "Puzzles & Games",
    "chart_table": "Chart & Table",
    "spatial_intelligence": "Spatial Intelligence",
    "perception_reasoning": "Perception Reasoning",
}
"""Category group name -> Table 4 column title, in Table 4 order."""
CATEGORY_GROUPS = tuple(CATEGORY_TITLES)
BENCHMARK = "unig2u"
TASK_PREFIX = f"{BENCHMARK}_"
"""Prefix of every task name of the benchmark (the leaderboard reads the tasks that start with it)."""
METRICS = ("acc",)
"""Per-sample metric of every task (plus ``invalid_outputs``; the puzzles add Uni-MMMU's step metrics)."""
JUDGE_MODEL = "gpt-4o-2024-11-20"
"""The paper's judge of the ``JUDGED`` subtasks."""
MODES = {"direct": "", "gta": "_gta", "gta_official": "_gta_official"}
"""Protocol mode -> task-name suffix: Direct, Generate-then-Answer, GtA as the released code (first image)."""


def task_name(subtask: str, suffix: str = "") -> str:
    """lmms-eval task name, e.g. ``unig2u_chartqa`` (Direct) or ``unig2u_chartqa_gta``."""
    return f"{BENCHMARK}_{subtask}{suffix}"
