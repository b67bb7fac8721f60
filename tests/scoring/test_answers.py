import pytest

from lmms_eval_unify.scoring.answers import extract_choice, extract_number, split_option

LABELS = ["A", "B", "C", "D"]
OPTIONS = ["A. a red cat", "B: a blue dog", "(C) a green bird", "（D）a yellow fish"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("B", "B"),
        ("(C)", "C"),
        ("Answer: D", "D"),
        ("The answer is **B**.", "B"),
        ("I think the correct option is (A) because ...", "A"),
        ("\\boxed{C}", "C"),
        ("answer：（Ｂ）", "B"),
        ("After looking closely, it is a blue dog.", "B"),
        ("I am not sure.", None),
        ("A or B, hard to say", None),
        ("Answer: E", None),
        ("First I thought A. Final answer: C", "C"),
    ],
)
def test_extract_choice(text, expected):
    assert extract_choice(text, LABELS, OPTIONS) == expected


@pytest.mark.parametrize(
    "option, expected",
    [
        (option, (label, body))
        for option, label, body in zip(
            OPTIONS, LABELS, ["a red cat", "a blue dog", "a green bird", "a yellow fish"], strict=True
        )
    ],
)
def test_split_option_four_styles(option, expected):
    assert split_option(option) == expected


def test_extract_number():
    assert extract_number("so x = 1,234.5 cm") == 1234.5
    assert extract_number("about 45%") == pytest.approx(0.45)
    assert extract_number("no digits") is None
