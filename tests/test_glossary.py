"""docs/glossary.md stays true: every file it points to exists, and the names it rules out are not back."""

from __future__ import annotations

import re
from pathlib import Path

from lmms_eval_unify.benchmarks import BENCHMARKS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lmms_eval_unify"
GLOSSARY = ROOT / "docs" / "glossary.md"


def glossary_paths() -> list[str]:
    """The file and folder paths the glossary names in backticks (``benchmarks/<b>/…`` for every benchmark)."""
    named = re.findall(r"`([\w<>./]+/[\w<>./]*)`", GLOSSARY.read_text())
    return [p.replace("<b>", b) for p in named for b in (BENCHMARKS if "<b>" in p else ("",))]


def exists(path: str) -> bool:
    return any((base / path).exists() for base in (ROOT, PACKAGE))


def python_files(name: str) -> list[str]:
    return sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob(name))


def test_every_path_in_the_glossary_exists():
    paths = glossary_paths()
    assert "run/saved.py" in paths and "benchmarks/gapeval/paper.py" in paths
    assert [p for p in paths if not exists(p)] == []


def test_each_word_has_one_home():
    assert python_files("rescore*.py") == [], "the score command is commands/score.py"
    expected = ["reports/leaderboard.py", *(f"benchmarks/{b}/leaderboard.py" for b in BENCHMARKS)]
    assert python_files("leaderboard.py") == sorted(expected)
    assert python_files("paper.py") == sorted(f"benchmarks/{b}/paper.py" for b in BENCHMARKS)
    run_infos = [p for p in PACKAGE.rglob("*.py") if re.search(r"^class RunInfo\b", p.read_text(), re.M)]
    assert [str(p.relative_to(PACKAGE)) for p in run_infos] == ["reports/results_io.py"]
