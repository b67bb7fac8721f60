"""Strict judge-reply parsing: robust extraction, no guessing."""

from __future__ import annotations

import pytest

from lmms_eval_unify.judges.parsing import FieldSpec, parse_reply

BINARY = (
    FieldSpec("score", "binary", aliases=("judge_result",)),
    FieldSpec("reason", "text", required=False),
)
SCALE = (FieldSpec("answer_visual_score", "int", minimum=1, maximum=5, aliases=("score",)),)
TWO_AXES = (
    FieldSpec("shape_color_accuracy", "int", minimum=0, maximum=5),
    FieldSpec("position_accuracy", "int", minimum=0, maximum=5),
)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"score": 1, "reason": "ok"}', {"score": 1, "reason": "ok"}),
        (
            'Here you go:\n```json\n{"score": "0", "reason": "wrong"}\n```\nHope that helps.',
            {"score": 0, "reason": "wrong"},
        ),
        ('<think>maybe {"score": 0}</think>\nFinal: {"score": true}', {"score": 1}),
        ('{"Judge_Result": "yes"} trailing words', {"score": 1}),
        ('The analysis {is long}. {"reason": "r", "score": "no"}', {"score": 0, "reason": "r"}),
        ("score: 1", {"score": 1}),
    ],
)
def test_binary_replies(reply: str, expected: dict) -> None:
    outcome = parse_reply(reply, BINARY)
    assert outcome.valid and outcome.fields == expected


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I cannot decide.",
        '{"score": 2}',
        '{"score": "maybe"}',
        '{"reason": "no score"}',
        "<think>unfinished",
    ],
)
def test_unparseable_binary_replies_are_invalid(reply: str) -> None:
    outcome = parse_reply(reply, BINARY)
    assert not outcome.valid and outcome.fields == {} and outcome.error


def test_scores_and_ranges() -> None:
    assert parse_reply('{"answer_visual_score": 4, "reasoning": "..."}', SCALE).fields == {"answer_visual_score": 4}
    assert parse_reply("Score: 3\nThe answer is coherent.", SCALE).fields == {"answer_visual_score": 3}
    assert parse_reply('{"answer_visual_score": 4.0}', SCALE).fields == {"answer_visual_score": 4}
    for bad in ('{"answer_visual_score": 6}', '{"answer_visual_score": 3.5}', '{"answer_visual_score": 0}'):
        assert not parse_reply(bad, SCALE).valid
    reply = 'Scores follow.\n{"shape_color_accuracy": 5, "position_accuracy": "2"}'
    assert parse_reply(reply, TWO_AXES).fields == {"shape_color_accuracy": 5, "position_accuracy": 2}
    assert not parse_reply('{"shape_color_accuracy": 5}', TWO_AXES).valid


def test_key_inside_longer_name_is_not_matched() -> None:
    assert not parse_reply("reasoning_visual_score: 4", (FieldSpec("score", "binary"),)).valid


def test_first_object_with_all_fields_wins() -> None:
    reply = 'Example format {"score": X}. My verdict: {"score": 0, "reason": "missing"}'
    assert parse_reply(reply, BINARY).fields == {"score": 0, "reason": "missing"}
