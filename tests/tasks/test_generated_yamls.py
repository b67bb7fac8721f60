"""The committed MME-Unify and UniG2U task YAMLs are exactly what their generators write (a hand edit or a
spec change without regeneration fails here)."""

import importlib.util

import pytest

from lmms_eval_unify.plugin import tasks_path


@pytest.mark.parametrize("benchmark", ["mme_unify", "unig2u"])
def test_committed_yamls_equal_the_generator_output(benchmark):
    folder = tasks_path() / benchmark
    spec = importlib.util.spec_from_file_location(f"_make_{benchmark}", folder / "_make_yamls.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    expected = generator.task_files()
    committed = {path.name: path.read_text() for path in folder.glob(f"{benchmark}*.yaml")}
    assert sorted(committed) == sorted(expected)
    assert [name for name in expected if committed[name] != expected[name]] == []
