import pytest

from lmms_eval_unify.generation.answer_spaces import load_answer_space
from lmms_eval_unify.puzzles.answer_space import MAZE


def test_answer_space_reference_resolves():
    assert load_answer_space("lmms_eval_unify.puzzles.answer_space:MAZE") is MAZE


@pytest.mark.parametrize("reference", ["no_colon", ":MAZE", "lmms_eval_unify.puzzles.answer_space:"])
def test_bad_reference_is_a_clear_error(reference):
    with pytest.raises(ValueError, match="package.module:ATTRIBUTE"):
        load_answer_space(reference)


def test_choice_space_oracle_and_random():
    import random

    from lmms_eval_unify.generation.answer_spaces import ChoiceSpace
    from lmms_eval_unify.generation.protocols import Phase

    space = ChoiceSpace(options=lambda d: ["A", "B", "C", "D"], truth=lambda d: d["answer"], answer_format="Answer: {}")
    assert space.plan({"answer": "C"}, [], random.Random(0), oracle=True).text(Phase()) == "Answer: C"
    picks = [space.plan({"answer": "C"}, [], random.Random(i), oracle=False).text(Phase())[-1] for i in range(400)]
    assert set(picks) == {"A", "B", "C", "D"} and 60 < picks.count("C") < 140


def test_candidate_image_space():
    import random

    from PIL import Image

    from lmms_eval_unify.generation.answer_spaces import CandidateImageSpace, ChoiceSpace
    from lmms_eval_unify.generation.protocols import Phase

    images = [Image.new("RGB", (2, 2), c) for c in ("red", "green", "blue")]
    space = CandidateImageSpace(lambda d: images, lambda d: 2, text=ChoiceSpace(lambda d: "AB", lambda d: "B"))
    plan = space.plan({}, [], random.Random(0), oracle=True)
    assert plan.text(Phase()) == "B" and plan.image(Phase()) is images[2]
