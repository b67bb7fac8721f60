"""The layout rules of docs/architecture.md: one home per benchmark, and a module map that matches the package."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from lmms_eval_unify.benchmarks import BENCHMARKS

REPO = Path(__file__).resolve().parents[1]
REGISTRY = "lmms_eval_unify/benchmarks/__init__.py"
PACKAGE_ROOTS = ("lmms_eval_unify", "model_adapters", "tasks")
EXTERNAL_NAMES = {
    # UniG2U-Bench's release ships Uni-MMMU's puzzle sets under these names (a data fact, not a code dependency).
    "uni_mmmu": re.compile(r"uni_mmmu/uni_mmmu_(maze100|sliding54|jigsaw100)\.parquet"),
    # lmms-eval's own model `bagel_unig2u`, which the `upstream` adapter wraps (a model's name, not our benchmark).
    "unig2u": re.compile(r"\bbagel_unig2u\b"),
}
"""Others' names that contain a benchmark's name: a released file, an lmms-eval model."""


def files_naming(name: str) -> list[str]:
    """Tracked package files outside the benchmark's own folders and the registry whose text names ``name``."""
    found = subprocess.run(
        ["git", "grep", "-il", name, "--", *PACKAGE_ROOTS], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.split()
    own = (f"lmms_eval_unify/benchmarks/{name}/", f"tasks/{name}/")
    return [path for path in found if not path.startswith(own) and path != REGISTRY]


def stray_lines(name: str, text: str) -> list[str]:
    """Lines of ``text`` that name ``name`` other than through one of :data:`EXTERNAL_NAMES`."""
    released = EXTERNAL_NAMES.get(name)
    return [
        line.strip() for line in text.splitlines() if name in (released.sub("", line) if released else line).lower()
    ]


@pytest.mark.parametrize("name", BENCHMARKS)
def test_a_benchmark_is_named_only_in_its_own_folders_and_the_registry(name):
    texts = {path: (REPO / path).read_text(encoding="utf-8") for path in files_naming(name)}
    strays = {path: lines for path, text in texts.items() if (lines := stray_lines(name, text))}
    assert not strays, f"{name} is named outside its folders and the registry: {strays}"


def test_the_check_sees_names_in_code_and_prose_but_not_a_released_file_name():
    assert stray_lines("gapeval", "from lmms_eval_unify.benchmarks.gapeval import paper")
    assert stray_lines("gapeval", "Fig. 3 of GapEval")
    assert stray_lines("uni_mmmu", "uni_mmmu/uni_mmmu_maze100.parquet; write_uni_mmmu_puzzles(out)")
    assert not stray_lines("uni_mmmu", 'files=("uni_mmmu/uni_mmmu_maze100.parquet",)')
    assert not stray_lines("unig2u", '"bagel_unig2u": Convention(') and stray_lines("unig2u", "unig2u_visual_cot")


def module_map() -> set[str]:
    """The folders listed in the module map that opens docs/architecture.md."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("<!-- module map -->")[1].split("<!-- /module map -->")[0]
    return {m.group(1) for line in block.splitlines() if (m := re.match(r"(\S+/)\s", line))}


def package_folders() -> set[str]:
    """Every folder of the installed package holding code or task files, benchmark names written ``<name>``."""
    tracked = subprocess.run(
        ["git", "ls-files", "--", *PACKAGE_ROOTS], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    folders = {str(Path(path).parent) + "/" for path in tracked}
    pattern = re.compile(r"/(" + "|".join(BENCHMARKS) + r")/")
    return {pattern.sub("/<name>/", folder) for folder in folders}


def test_the_module_map_lists_every_package_folder_and_nothing_else():
    listed, present = module_map(), package_folders()
    assert listed == present, f"not in the map: {sorted(present - listed)}; no longer there: {sorted(listed - present)}"
