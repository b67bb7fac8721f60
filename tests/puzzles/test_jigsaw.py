"""The 2x2 jigsaw items, the choice parser (the released evaluator's ``re.search`` rules) and the answer space."""

import random

import pytest

from lmms_eval_unify.generation.protocols import Phase
from lmms_eval_unify.puzzles import jigsaw


@pytest.fixture(scope="module")
def docs():
    return jigsaw.generate_jigsaw_items(6, seed=1)


def test_generator_items_are_consistent(docs):
    doc = docs[0]
    assert set(doc) >= {
        "ref_image",
        "cand0_image",
        "cand1_image",
        "label",
        "gt_completed_image",
        "gt_wrong_image",
    }
    truth = doc["cand0_image"] if doc["label"] == 0 else doc["cand1_image"]
    cell = truth.size[0]
    bottom_right = doc["gt_completed_image"].crop((cell, cell, 2 * cell, 2 * cell))
    assert list(bottom_right.getdata()) == list(truth.convert("RGB").getdata())
    masked = doc["ref_image"].crop((cell, cell, 2 * cell, 2 * cell)).getextrema()
    assert masked == ((0, 0), (0, 0), (0, 0))
    assert {d["label"] for d in docs} == {0, 1}


@pytest.mark.parametrize(
    "text,expected",
    [
        ('<FINAL_ANSWER_JSON>{"choice": 1, "rationale": "x"}</FINAL_ANSWER_JSON>', 1),
        ('<FINAL_ANSWER_JSON>\n{"choice": 0}\n</FINAL_ANSWER_JSON>', 0),
        ('<FINAL_ANSWER_JSON>{"choice": "0"}</FINAL_ANSWER_JSON>', None),
        ('<FINAL_ANSWER_JSON>{"choice": 2}</FINAL_ANSWER_JSON>', None),
        ('"choice": 1', None),
        # Official re.search: the first block counts, even when it is not valid JSON.
        (
            '<FINAL_ANSWER_JSON>{"choice": 0}</FINAL_ANSWER_JSON> <FINAL_ANSWER_JSON>{"choice": 1}</FINAL_ANSWER_JSON>',
            0,
        ),
        (
            '<FINAL_ANSWER_JSON>{choice: 1}</FINAL_ANSWER_JSON> <FINAL_ANSWER_JSON>{"choice": 1}</FINAL_ANSWER_JSON>',
            None,
        ),
    ],
)
def test_parse_choice(text, expected):
    assert jigsaw.parse_jigsaw_choice(text) == expected


def test_oracle_plan_shows_both_true_completions_then_the_true_choice(docs):
    doc = docs[0]
    plan = jigsaw.JIGSAW.plan(doc, [], random.Random(0), oracle=True)
    assert [plan.image(Phase("render", k)) for k in (1, 2)] == list(jigsaw.jigsaw_completions(doc))
    assert jigsaw.parse_jigsaw_choice(plan.text(Phase("final", 2))) == doc["label"]


def test_random_text_choice_is_at_chance(docs):
    rng = random.Random(3)
    hits = [
        jigsaw.parse_jigsaw_choice(jigsaw.JIGSAW.plan(d, [], rng, oracle=False).text(Phase("final"))) == d["label"]
        for _ in range(200)
        for d in docs
    ]
    assert abs(sum(hits) / len(hits) - 0.5) < 0.05
