"""docs/adding_a_model.md's out-of-tree recipe, built from the page's own code blocks, runs through the CLI."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from lmms_eval_unify.puzzles.dataset import write_puzzles

DOC = Path(__file__).resolve().parents[1] / "docs" / "adding_a_model.md"


def doc_file(first_line: str) -> str:
    """The code block of the page whose first line is ``first_line`` (a file name comment)."""
    blocks = re.findall(r"```\w*\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    (block,) = [b for b in blocks if b.startswith(first_line + "\n")]
    return block


def build_plugin(root: Path) -> Path:
    """The doc's module plus a dist-info carrying the doc's pyproject entry points (no venv install)."""
    root.mkdir()
    (root / "my_unified_model.py").write_text(doc_file("# my_unified_model.py"))
    project = tomllib.loads(doc_file("# pyproject.toml"))["project"]
    dist_info = root / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    lines = [f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items())
             for group, eps in project["entry-points"].items()]  # fmt: skip
    (dist_info / "entry_points.txt").write_text("\n".join(lines))
    return root


@pytest.mark.slow
def test_out_of_tree_recipe_runs_through_the_cli(tmp_path):
    plugin = build_plugin(tmp_path / "plugin")
    data = tmp_path / "data"
    write_puzzles(data / "uni_mmmu", 2, 2, seed=1)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(plugin), "LMMS_EVAL_UNIFY_DATA_DIR": str(data),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HOME": str(tmp_path)}  # fmt: skip
    out = tmp_path / "out"
    command = [str(Path(sys.executable).parent / "lmms-eval"), "--model", "solid_painter",
               "--model_args", "colour=white", "--tasks", "uni_mmmu_maze", "--output_path", str(out),
               "--log_samples"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert next(out.rglob("*_results.json")).is_file()
    (media,) = (out / "unify_media").glob("solid_painter-*")
    steps = list((media / "uni_mmmu_maze").rglob("step_*.png"))
    assert steps, "the adapter's images were saved through the output contract"
