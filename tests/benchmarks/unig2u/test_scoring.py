import json

import pytest

from lmms_eval_unify.benchmarks.unig2u.scoring import (
    choice_from_text,
    collision_times,
    illusion_labels,
    label_recalled,
    net_displacement,
    relaxed_correct,
    score_answer,
    vsp_score,
)
from lmms_eval_unify.scoring.task_aggregations import mean_supported


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("`B`", "B"),
        ("The answer is `C`.", "C"),
        ("Based on the image, the answer is D.", "D"),  # upstream RealUnify took the "B" of "Based"
        ("Answer: (A)", "A"),
        ("I cannot tell.", None),  # upstream VisualPuzzles crashed on an unparseable answer
    ],
)
def test_choice_extraction_is_robust(text, expected):
    assert choice_from_text(text) == expected


@pytest.mark.parametrize(
    ("prediction", "target", "correct"),
    [("105", "100", True), ("105.1", "100", False), ("95%", "0.95", True), ("Yes", "yes", True),
     ("0", "0", True), ("1", "0", False), ("The answer is 100", "100", False)],
)  # fmt: skip
def test_chartqa_relaxed_accuracy(prediction, target, correct):
    assert relaxed_correct(prediction, target) is correct


def test_illusion_label_recall():
    labels = illusion_labels("paper_clip-3-Medieval_Village-Easy-1.5-90.png")
    assert labels == {"shape": "paper_clip", "scene": "Medieval_Village"}
    assert label_recalled(labels["shape"], "It is a Paper clip.")
    assert label_recalled(labels["scene"], "medieval_village")
    assert not label_recalled(labels["scene"], "City")


def test_vsp_rules():
    assert net_displacement("<Output>\n1. North: 2\n2. East: 1\n3. South: 1") == (1, 1)
    assert net_displacement("no path") is None
    gmap = {"gt_north_south": 1, "gt_east_west": 1}
    assert vsp_score(gmap, "Output\n1. North: 1\n2. East: 1")[0] == 1.0
    assert collision_times("Car: 2.0\nPerson: 4") == {"car": 2.0, "person": 4.0}
    doc = {"car_dir": "left", "gt_car": 2.0, "gt_person": 4.0}
    assert vsp_score(doc, "Car: 3.0\nPerson: 5.5")[0] == 0.5  # within 1.0 / off by 1.5
    assert vsp_score(doc, "Person: 4.0")[0] == 0.5  # a missing time is wrong


def test_unsupported_and_invalid_outputs():
    unsupported = json.dumps({"schema": "lmms_eval_unify/output@1", "protocol": "generate_then_answer",
                              "unsupported": "generate_image"})  # fmt: skip
    result = score_answer({"answer": "A"}, [unsupported], subtask="msr")
    assert result["acc"] is None and mean_supported([result["acc"]]) == "-"
    broken = score_answer({"answer": "A"}, ['{"schema": "lmms_eval_unify/output@1", "protocol": 3'], subtask="msr")
    assert broken["acc"] == 0.0 and broken["invalid_outputs"]
    assert score_answer({"answer": "A"}, ["Answer: A"], subtask="msr")["acc"] == 1.0
