"""The Uni-MMMU groups: `uni_mmmu` = all six tasks, `uni_mmmu_programmatic` = the three without a judge."""

from pathlib import Path

import yaml

TASKS_DIR = Path(__file__).parents[3] / "tasks" / "uni_mmmu"
PROGRAMMATIC = ["uni_mmmu_maze", "uni_mmmu_sliding", "uni_mmmu_jigsaw"]
JUDGED = ["uni_mmmu_geometry", "uni_mmmu_science", "uni_mmmu_code"]


def _group(name: str) -> list[str]:
    return yaml.safe_load((TASKS_DIR / f"{name}.yaml").read_text())["task"]


def test_groups_list_the_tasks_and_only_the_judged_ones_need_a_judge():
    assert _group("uni_mmmu") == PROGRAMMATIC + JUDGED
    assert _group("uni_mmmu_programmatic") == PROGRAMMATIC
    for task in PROGRAMMATIC + JUDGED:
        text = (TASKS_DIR / f"{task}.yaml").read_text()
        assert f"task: {task}\n" in text
        assert ("judged: true" in text) == (task in JUDGED)
