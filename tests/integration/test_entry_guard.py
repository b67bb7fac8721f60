"""A third-party ``lmms_eval.models`` plugin whose entry point raises leaves our models registered."""

import subprocess
import sys
from pathlib import Path

import pytest

from lmms_eval_unify.puzzles.dataset import write_uni_mmmu_puzzles

BROKEN_PLUGIN = "broken_model_plugin"


def write_broken_plugin(root: Path) -> Path:
    """A distribution (dist-info + module, no install) whose model entry point raises when loaded."""
    (root / f"{BROKEN_PLUGIN}.py").write_text('raise RuntimeError("this plugin is broken")\n')
    dist_info = root / f"{BROKEN_PLUGIN}-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {BROKEN_PLUGIN}\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(f"[lmms_eval.models]\nbroken = {BROKEN_PLUGIN}:manifests\n")
    return root


def test_broken_entry_point_is_skipped_not_fatal(tmp_path):
    from lmms_eval.models.registry_v2 import ModelRegistryV2

    plugin = write_broken_plugin(tmp_path)
    sys.path.insert(0, str(plugin))
    try:
        registry = ModelRegistryV2()
        registry.load_entrypoint_manifests()  # guarded at interpreter start by lmms_eval_unify_guard.pth
    finally:
        sys.path.remove(str(plugin))
    assert {"unify_random", "unify_oracle", "janus_pro"} <= set(registry.list_canonical_model_ids())


@pytest.mark.slow
def test_cli_runs_our_model_next_to_a_broken_plugin(tmp_path):
    """The broken plugin comes first on sys.path (PYTHONPATH), so unguarded lmms-eval never reaches ours."""
    (tmp_path / "plugin").mkdir()
    plugin = write_broken_plugin(tmp_path / "plugin")
    data = tmp_path / "data"
    write_uni_mmmu_puzzles(data, 2, 2, seed=1)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(plugin), "LMMS_EVAL_UNIFY_DATA_DIR": str(data),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HOME": str(tmp_path)}  # fmt: skip
    command = [str(Path(sys.executable).parent / "lmms-eval"), "--model", "unify_oracle", "--tasks",
               "uni_mmmu_maze", "--output_path", str(tmp_path / "out")]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "skipping model plugin 'broken'" in done.stdout + done.stderr
    assert next((tmp_path / "out").rglob("*_results.json")).is_file()
