import pytest

from lmms_eval_unify.instruments import load_answer_space
from lmms_eval_unify.puzzles.instrument import MAZE


def test_answer_space_reference_resolves():
    assert load_answer_space("lmms_eval_unify.puzzles.instrument:MAZE") is MAZE


@pytest.mark.parametrize("reference", ["no_colon", ":MAZE", "lmms_eval_unify.puzzles.instrument:"])
def test_bad_reference_is_a_clear_error(reference):
    with pytest.raises(ValueError, match="package.module:ATTRIBUTE"):
        load_answer_space(reference)
