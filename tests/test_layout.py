"""The layout rules of docs/architecture.md: one home per benchmark, and a module map that matches the package."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from lmms_eval_unify.benchmarks import BENCHMARKS, entry

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


def homes(benchmark: str) -> tuple[str, ...]:
    """The folders that are a benchmark's own."""
    return (f"lmms_eval_unify/benchmarks/{benchmark}/", f"tasks/{benchmark}/")


def files_naming(name: str) -> list[str]:
    """Tracked package files outside the benchmark's own folders and the registry whose text names ``name``."""
    found = subprocess.run(
        ["git", "grep", "-il", name, "--", *PACKAGE_ROOTS], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.split()
    return [path for path in found if not path.startswith(homes(name)) and path != REGISTRY]


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


DISPLAY_NAMES = {b: entry(b).DISPLAY_NAMES for b in BENCHMARKS}
"""How each benchmark's paper and boards name it (its registry entry's ``DISPLAY_NAMES``), matched as words."""
SHARED_PUZZLE_NAMES = ("jigsaw",)
"""Puzzles that live in ``puzzles/`` and that benchmarks pose: only their homes and the benchmarks' may name them
(a benchmark's rule about one, like Uni-MMMU's DreamSim image score, lives in that benchmark)."""
BENCHMARK_HOMES = tuple(home for b in BENCHMARKS for home in homes(b))
PUZZLE_HOMES = ("lmms_eval_unify/puzzles/", "tasks/puzzles/", *BENCHMARK_HOMES)
CITED = {
    ("lmms_eval_unify/judges/estimate.py", "Uni-MMMU"): "the estimate's stated assumption about one judge",
    ("lmms_eval_unify/reports/boards.py", "MME-U"): "the source of the split-half stability check",
    ("lmms_eval_unify/reports/plots.py", "MME-Unify"): "why the 0-100 axis may reach 100.1",
    ("lmms_eval_unify/scoring/aggregate.py", "MME-U"): "a worked example of the missing-as-zero mean",
    ("lmms_eval_unify/scoring/scorer.py", "Uni-MMMU"): "the one user of ``raw_scorer``",
}
"""Display names outside their homes, each with why it stays: prose citing the benchmark. Every other mention is a
stray."""


def as_word(name: str) -> str:
    """A pattern of ``name`` not inside a longer name ("MME-U" does not match in "MME-Unify")."""
    return rf"(?<![\w-]){re.escape(name)}(?!\w)"


def files_matching(pattern: str, ignore_case: bool = False) -> set[str]:
    """Tracked package files whose text matches the Perl-style `pattern`."""
    found = subprocess.run(
        ["git", "grep", "-l", "-P", *(["-i"] if ignore_case else []), pattern, "--", *PACKAGE_ROOTS],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    return set(found)


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_a_benchmarks_display_names_appear_in_shared_code_only_in_the_registry_and_cited_prose(benchmark):
    """Shared code (everything outside the benchmarks' homes) that names a benchmark may hold its rule, where an
    edit to a "shared" function moves a paper score unseen. Another benchmark's home may cite it (UniG2U's paper
    defines its puzzle scores by Uni-MMMU's); code dependencies between benchmarks are the id check's concern."""
    strays = {
        (path, name)
        for name in DISPLAY_NAMES[benchmark]
        for path in files_matching(as_word(name))
        if not path.startswith(BENCHMARK_HOMES) and path != REGISTRY
    }
    assert not strays - set(CITED), f"{benchmark}'s display names outside its homes: {sorted(strays - set(CITED))}"
    stale = {cited for cited in CITED if cited[1] in DISPLAY_NAMES[benchmark]} - strays
    assert not stale, f"no longer there, drop from CITED: {sorted(stale)}"


@pytest.mark.parametrize("puzzle", SHARED_PUZZLE_NAMES)
def test_a_shared_puzzle_is_named_only_by_the_puzzles_and_the_benchmarks(puzzle):
    found = files_matching(re.escape(puzzle), ignore_case=True)  # in identifiers too: `JigsawImageScore`
    strays = sorted(path for path in found if not path.startswith(PUZZLE_HOMES))
    assert not strays, f"{puzzle} is named outside the puzzles and the benchmarks: {strays}"


def test_a_display_name_matches_as_a_name_not_inside_a_longer_one():
    assert DISPLAY_NAMES["mme_unify"] == ("MME-Unify", "MME-U")
    assert re.search(as_word("MME-U"), "(MME-U Table 2)") and re.search(as_word("MME-U"), "MME-U's score")
    assert not re.search(as_word("MME-U"), "MME-Unify") and not re.search(as_word("UniG2U"), "X-UniG2U")


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
