import json

from conftest import make_request
from PIL import Image

from lmms_eval_unify.generation.protocols import split_generate_then_answer_prompt
from lmms_eval_unify.generation.visuals import visuals_fingerprint
from lmms_eval_unify.output.record import parse_output


def _run(model, prompt, gen_kwargs, **kwargs):
    return parse_output(model.generate_until([make_request(prompt, gen_kwargs, **kwargs)])[0])


def test_direct_passes_decoding_and_a_per_sample_seed(scripted):
    model = scripted(["B"])
    parsed = _run(model, "Q?", {"max_new_tokens": 5, "until": ["\n\n"]})
    assert parsed.text == "B" and parsed.record.protocol == "direct"
    decoding = model.calls[0][5]
    assert decoding["max_new_tokens"] == 5 and "until" not in decoding
    assert decoding["seed"] == model.sample_seed("toy", 0) != model.sample_seed("toy", 1)


def test_generate_then_answer_feeds_the_generated_image_back(scripted):
    model = scripted(["A"])
    prompt = "[GEN_PROMPT]Draw aux lines for {question}[/GEN_PROMPT][QUESTION]What is x?[/QUESTION]"
    parsed = _run(model, prompt, {"protocol": "generate_then_answer"}, n_images=2)
    assert [c[0] for c in model.calls] == ["generate_image", "understand"]
    assert model.calls[0][1] == "Draw aux lines for What is x?" and model.calls[0][2] == 2
    assert model.calls[1][1] == "What is x?" and model.calls[1][2] == 3
    assert len(parsed.load_images(expected=1)) == 1 and parsed.text == "A"


def test_generate_then_answer_official_first_image_only(scripted):
    model = scripted(["A"])
    _run(model, "Q", {"protocol": "generate_then_answer", "gen_inputs": "first"}, n_images=3)
    assert [c[2] for c in model.calls] == [
        1,
        4,
    ]  # stage 1 gets the first input, stage 2 all inputs + generated
    assert "gen_inputs" not in model.calls[0][5]


def test_upstream_visual_cot_flag_means_generate_then_answer(scripted):
    model = scripted(["A"])
    assert _run(model, "Q", {"visual_cot": True}).record.protocol == "generate_then_answer"
    assert split_generate_then_answer_prompt("plain", {"gen_prompt": "Sketch: {question}"}) == (
        "Sketch: plain",
        "plain",
    )


def test_image_sequence_stops_on_stop_word_and_keeps_history(scripted):
    model = scripted(["Next, move up.", "Next, move left.", "Done.", '<ANSWER_JSON>["up","left"]</ANSWER_JSON>'])
    options = {"protocol": "image_sequence_then_answer", "max_steps": 5, "step_prompt": "step {step}?"}
    parsed = _run(model, "Solve.", options)
    kinds = [(c[0], c[3], c[4]) for c in model.calls]
    assert kinds == [
        ("understand", "plan", 1),
        ("generate_image", "render", 1),
        ("understand", "plan", 2),
        ("generate_image", "render", 2),
        ("understand", "plan", 3),
        ("understand", "final", 2),
    ]
    assert [c[2] for c in model.calls if c[0] == "understand"] == [1, 2, 3, 3]
    assert "Next, move up." in model.calls[2][1] and model.calls[0][1].endswith("step 1?")
    assert len(parsed.record.images) == 2 and len(parsed.record.steps) == 3
    assert parsed.text.startswith("<ANSWER_JSON>")


def test_step_loop_overrun_is_capped(scripted):
    model = scripted(["Next, move up."] * 3 + ["final"])
    parsed = _run(model, "Solve.", {"protocol": "image_sequence_then_answer", "max_steps": 3})
    assert len(parsed.record.images) == 3 and parsed.text == "final"


def test_visual_cot_steps_without_final_answer(scripted):
    model = scripted(["go right", "Finish"])
    parsed = _run(model, "Walk.", {"protocol": "visual_cot_steps", "stop_words": ["Finish"]})
    assert [s.text for s in parsed.record.steps] == ["go right", "Finish"] and len(parsed.record.images) == 1


def test_missing_primitive_is_unsupported_not_a_crash(scripted):
    model = scripted([])
    parsed = _run(model, "make a video", {"protocol": "video"})
    assert parsed.unsupported and parsed.failure is None


def test_unknown_protocol_and_primitive_failure_are_recorded(scripted):
    model = scripted([])
    assert (
        parse_output(model.generate_until([make_request("x", {"protocol": "nope"})])[0]).failure.reason == "model_error"
    )
    model = scripted([])  # understand() pops from an empty script -> IndexError inside the primitive
    parsed = _run(model, "x", {})
    assert parsed.failure.reason == "model_error" and "IndexError" in parsed.failure.detail


def test_non_image_from_generate_image_is_an_error(scripted):
    model = scripted(["t"])
    model.generate_image = lambda prompt, images, **d: "not an image"
    parsed = _run(model, "x", {"protocol": "image_only"})
    assert parsed.failure.reason == "model_error" and "PIL" in parsed.failure.detail


def test_resume_reuses_finished_records(scripted, tmp_path):
    first = scripted(["answer"])
    out1 = first.generate_until([make_request("Q", {})])[0]
    second = scripted([])  # would fail if it had to call the model again
    out2 = second.generate_until([make_request("Q", {})])[0]
    assert json.loads(out1)["text"] == json.loads(out2)["text"] == "answer" and second.calls == []
    third = scripted(["other"])
    assert json.loads(third.generate_until([make_request("Q changed", {})])[0])["text"] == "other"


def test_resume_does_not_reuse_an_output_for_other_input_images(scripted):
    """Same task, doc id and prompt but another image (the dataset changed under the doc id): run again."""
    scripted(["blue answer"]).generate_until([make_request("Q", {})])
    again = scripted(["red answer"])
    assert json.loads(again.generate_until([make_request("Q", {}, colour="red")])[0])["text"] == "red answer"
    assert again.calls != []
    assert json.loads(scripted([]).generate_until([make_request("Q", {}, colour="red")])[0])["text"] == ("red answer")


def test_visuals_fingerprint_sees_pixels_bytes_and_files_without_decoding(tmp_path):
    blue, red = Image.new("RGB", (4, 4), "blue"), Image.new("RGB", (4, 4), "red")
    assert visuals_fingerprint([blue]) == visuals_fingerprint([blue.copy()])
    assert visuals_fingerprint([blue]) != visuals_fingerprint([red])
    assert visuals_fingerprint([blue, red]) != visuals_fingerprint([red, blue])
    assert visuals_fingerprint({"bytes": b"a"}) != visuals_fingerprint({"bytes": b"b"})
    path = tmp_path / "x.png"
    blue.save(path)
    before = visuals_fingerprint(str(path))
    red.resize((8, 8)).save(path)
    assert visuals_fingerprint(str(path)) != before
    assert visuals_fingerprint(str(tmp_path / "missing.png")) != before


def test_images_are_written_under_task_and_doc(scripted, tmp_path):
    model = scripted([])
    parsed = _run(model, "draw", {"protocol": "image_only"}, doc_id=7)
    assert parsed.record.images == ["toy/7/image_00.png"]
    (folder,) = [p for p in tmp_path.iterdir() if p.name.startswith("scripted-")]  # one per configuration
    assert model.media.root == folder.resolve()
    assert Image.open(folder / "toy" / "7" / "image_00.png").size == (16, 16)
