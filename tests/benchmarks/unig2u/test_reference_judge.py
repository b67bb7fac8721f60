"""The UniG2U reference judge on the RA / AL diagnostics prompts: the real templates rendered, the reply parsed by
the judge layer's own parser (a reply it cannot parse would be ``judge_invalid``)."""

from __future__ import annotations

import json

import pytest
from PIL import Image, ImageDraw

from lmms_eval_unify.benchmarks.unig2u.reference_judge import rendered_text, verdict
from lmms_eval_unify.judges import get_template
from lmms_eval_unify.judges.parsing import parse_reply
from lmms_eval_unify.judges.reference import reference_verdict
from lmms_eval_unify.testing.openai_server import ChatRequest

QUESTION = "Which bar is the tallest?\nA. the red bar\nB. the blue bar\nC. the green bar"


def chart() -> Image.Image:
    """An original image: three bars on white."""
    image = Image.new("RGB", (96, 64), "white")
    draw = ImageDraw.Draw(image)
    for k, colour in enumerate(("red", "blue", "green")):
        draw.rectangle((8 + 30 * k, 60 - 15 * (k + 1), 28 + 30 * k, 60), fill=colour)
    return image


def judged(template_id: str, variables: dict, original: list, generated: list) -> dict:
    """The parsed verdict fields of the reference judges' reply to a rendered diagnostics prompt."""
    template = get_template(template_id)
    values = {"task": "unig2u_chartqa_gta", "question": QUESTION, "category": "chart_table", **variables}
    rendered = template.render(values, {"original": original, "generated": generated})
    reply = reference_verdict(ChatRequest({"messages": rendered.messages}, {}))
    assert reply == verdict(ChatRequest({"messages": rendered.messages}, {}))  # UniG2U's own judge answered
    outcome = parse_reply(reply, template.outputs)
    assert outcome.valid, reply
    return outcome.fields


def marked(image: Image.Image) -> Image.Image:
    """The image with an auxiliary line drawn over it (what a GtA visualisation adds)."""
    copy = image.copy()
    ImageDraw.Draw(copy).line((0, 20, 95, 20), fill="black", width=2)
    return copy


@pytest.mark.parametrize(
    ("generated", "score"),
    [(chart, 5), (lambda: marked(chart()), 5), (lambda: Image.new("RGB", (96, 64), "black"), 1)],
    ids=["copy", "marked", "unrelated"],
)
def test_ra_scores_how_much_of_the_question_scene_the_visualisation_keeps(generated, score):
    fields = judged("unig2u.ra", {"generation_prompt": "Highlight the tallest bar."}, [chart()], [generated()])
    assert fields["reasoning_visual_score"] == score


def test_ra_without_an_original_image_is_the_middle_of_the_scale():
    fields = judged("unig2u.ra", {"generation_prompt": "Draw a bar chart."}, [], [chart()])
    assert fields["reasoning_visual_score"] == 3


@pytest.mark.parametrize(
    ("question", "answer", "score"),
    [(QUESTION, "The tallest is C.", 5), (QUESTION, "Answer: D", 1), (QUESTION, "", 1),
     ("How many bars are there?", "3", 5), ("How many bars are there?", "  ", 1)],
)  # fmt: skip
def test_al_scores_whether_the_final_answer_answers_the_question(question, answer, score):
    fields = judged("unig2u.al", {"question": question, "answer": answer}, [chart()], [marked(chart())])
    assert fields["answer_visual_score"] == score


def test_an_answer_quoting_the_templates_own_words_is_read_back_whole():
    """The variables are read where the template puts them, whatever they hold (quotes, the template's headings)."""
    answer = 'C\n\n## Evaluation Criteria "quoted"'
    values = {"task": "t", "question": QUESTION, "answer": answer, "category": "chart_table"}
    rendered = get_template("unig2u.al").render(values, {"generated": [chart()]})
    read = rendered_text("unig2u.al").search(ChatRequest({"messages": rendered.messages}, {}).text)
    assert read is not None and (read["question"], read["answer"]) == (QUESTION, answer)


def test_a_prompt_of_no_template_gets_no_verdict():
    reply = verdict(ChatRequest({"messages": [{"role": "user", "content": "Rate this image from 1 to 5."}]}, {}))
    with pytest.raises(ValueError):
        json.loads(reply)
