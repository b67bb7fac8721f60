"""UniG2U subtasks: paper name (Tables 11/12 column) -> category, published parquet file(s), size, family.

Names and sizes follow the metric-name contract of ``lmms_eval_unify.scoring.unig2u`` (docs/scoring.md).
``family`` selects the prompt builder, visuals and scorer; ``doc_type`` keeps only the rows of that
BabyVision ``type`` (both BabyVision subtasks read one file). Subtasks scored by a GPT-4o judge are in
``JUDGED``.
"""

from __future__ import annotations

from dataclasses import dataclass

HUB_ROOT = "hf://datasets/kkv233/unig2u_dataset/"


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
ILLUSION_SUBSETS = {"icon": "Illusion_ICON", "logo": "Illusion_LOGO", "in": "Illusion_IN"}
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
        Subtask("attn_focus", "real_world_apps", ("realunify/realunify_attentional_focusing.parquet",), 100, "realunify"),
        Subtask(
            "vsp_reason",
            "real_world_apps",
            ("vsp/vsp_google_map_50.parquet", "vsp/vsp_collision_50.parquet"),
            100,
            "vsp",
        ),
        Subtask("geometry", "geometry_reasoning", ("geometry3k/geometry3k_train_first100.parquet",), 100, "geometry3k"),
        Subtask("geometry_3d", "geometry_reasoning", ("auxsolidmath/auxsolidmath_test_easy_first100.parquet",), 100,
                "auxsolidmath"),
        Subtask("light", "physics_reasoning", ("phyx/phyx_optics100.parquet",), 100, "phyx"),
        Subtask("mechanism", "physics_reasoning", ("phyx/phyx_mechanics100.parquet",), 100, "phyx"),
        Subtask("mental_recon", "puzzles_games", ("realunify/realunify_mental_reconstruction.parquet",), 100, "realunify"),
        Subtask("mental_track", "puzzles_games", ("realunify/realunify_mental_tracking.parquet",), 100, "realunify"),
        Subtask("visual_track", "puzzles_games", (BABYVISION_FILE,), 83, "babyvision", doc_type="Visual Tracking"),
        Subtask("maze", "puzzles_games", ("uni_mmmu/uni_mmmu_maze100.parquet",), 100, "maze"),
        Subtask("jigsaw", "puzzles_games", ("uni_mmmu/uni_mmmu_jigsaw100.parquet",), 100, "jigsaw"),
        Subtask("sliding", "puzzles_games", ("uni_mmmu/uni_mmmu_sliding54.parquet",), 54, "sliding"),
        Subtask("chartqa", "chart_table", ("chartqa100/chartqa100.parquet",), 100, "chartqa"),
        *[Subtask(s, "spatial_intelligence", (f"mmsi_bench/{MMSI_FILES[s]}.parquet",), 100, "mmsi") for s in MMSI],
        *[
            Subtask(f"{sub}_{q}", "perception_reasoning", (f"illusionbench/illusion_{sub}_test100.parquet",), 100,
                    "illusion", split)
            for sub, split in ILLUSION_SUBSETS.items()
            for q in ("scene", "shape")
        ],
        *[
            Subtask(s, "perception_reasoning", (f"visualpuzzles/{s}.parquet",), 100, "visual_puzzles", "test")
            for s in VISUAL_PUZZLES
        ],
        Subtask("fine_discrim", "perception_reasoning", (BABYVISION_FILE,), 163, "babyvision",
                doc_type="Fine-grained Discrimination"),
    ]
}  # fmt: skip

# Scored by a GPT-4o judge (templates unig2u.geometry3k, unig2u.auxsolidmath, unig2u.answer_match).
JUDGED = ("geometry", "geometry_3d", "light", "mechanism", "visual_track", "fine_discrim")
JUDGED_FAMILIES = ("geometry3k", "auxsolidmath", "phyx", "babyvision")
# Subtasks of the paper not implemented here (none left).
NOT_YET: tuple[str, ...] = ()

CATEGORY_GROUPS = (
    "real_world_apps",
    "geometry_reasoning",
    "physics_reasoning",
    "puzzles_games",
    "chart_table",
    "spatial_intelligence",
    "perception_reasoning",
)
