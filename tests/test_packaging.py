"""The wheel ships the task YAMLs under lmms_eval_unify and creates no generic top-level packages or files."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_file_list(tmp_path):
    # build from a clean copy: setuptools' build/ folder would otherwise carry stale files between builds
    source = tmp_path / "src"
    skip = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "out")
    shutil.copytree(REPO, source, ignore=skip)
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(source)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("lmms_eval_unify-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names}
    dist_info = next(n for n in top_level if n.endswith(".dist-info"))
    assert top_level == {"lmms_eval_unify", dist_info}
    assert not [name for name in names if name.endswith(".pth")], "nothing runs at interpreter start"
    for expected in (
        "lmms_eval_unify/tasks/uni_mmmu/uni_mmmu_maze.yaml",
        "lmms_eval_unify/tasks/uni_mmmu/_default_template_yaml",
        "lmms_eval_unify/benchmarks/uni_mmmu/inputs.py",
        "lmms_eval_unify/model_adapters/baselines.py",
        "lmms_eval_unify/integration/plugin.py",
        "lmms_eval_unify/generation/adapter.py",
        "lmms_eval_unify/benchmarks/gapeval/judge_prompts.yaml",
        "lmms_eval_unify/benchmarks/unig2u/pairs_table3.yaml",
    ):
        assert expected in names, expected
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "lmms_eval_unify.integration.plugin:manifests" in text and "lmms-eval-unify" in text
