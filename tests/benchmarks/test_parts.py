"""A benchmark entry's parts (``benchmarks/parts.py``): every declared part imports, as the module it names."""

from __future__ import annotations

import pytest

from lmms_eval_unify.benchmarks import BENCHMARKS, entry, part


@pytest.mark.heavy  # imports every benchmark's leaderboard, exports and offline data
def test_every_part_an_entry_declares_imports_as_its_own_module():
    for benchmark in BENCHMARKS:
        for name, importer in entry(benchmark).PARTS.items():
            module = part(benchmark, name)
            assert module.__name__ == f"{entry(benchmark).__name__}.{name}" and importer() is module


def test_a_part_no_entry_declares_is_refused_naming_the_declared_ones():
    with pytest.raises(KeyError, match="mme_unify has no 'judge_plan'; it has spec, leaderboard"):
        part("mme_unify", "judge_plan")
