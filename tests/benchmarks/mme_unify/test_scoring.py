"""MME-Unify scorers: extraction, CLIP choices, VCoT step accounting and every official/corrected difference."""

import json

import pytest
from PIL import Image

from lmms_eval_unify.benchmarks.mme_unify import scoring, vcot
from lmms_eval_unify.benchmarks.mme_unify.scoring import (
    METRICS_ENV,
    choose_option,
    parse_step,
    prompt_coordinates,
    score_multiple_choice,
    score_unify_qa,
    score_vcot,
)
from lmms_eval_unify.output.record import Step, UnifiedOutput

TINY_CLIP = json.dumps({"clip_choice": {"backbone": "tiny", "weights": "random"}})


@pytest.fixture(autouse=True)
def tiny_clip(monkeypatch):
    monkeypatch.setenv(METRICS_ENV, TINY_CLIP)


def _photo(seed: int) -> Image.Image:
    from lmms_eval_unify.benchmarks.mme_unify.offline.data import photo

    return photo(seed % 6, 64)


def _record(tmp_path, text="", images=(), steps=None, protocol="answer_and_image") -> str:
    paths = []
    for i, image in enumerate(images):
        image.save(tmp_path / f"out_{i}.png")
        paths.append(f"out_{i}.png")
    return UnifiedOutput(protocol, text=text, images=paths, steps=steps or [], root=str(tmp_path)).to_json()


@pytest.mark.parametrize(
    "choices",
    [
        ["A. cat", "B. dog", "C. bird", "D. fish"],
        ["A: cat", "B: dog", "C: bird", "D: fish"],
        ["(A) cat", "(B) dog", "(C) bird", "(D) fish"],
        ["（A）cat", "（B）dog", "（C）bird", "（D）fish"],
    ],
)
@pytest.mark.parametrize(
    "text, expected",
    [
        ("C", "C"),
        ("Answer: C", "C"),
        ("**Answer:** (C)", "C"),
        ("I think the answer is bird.", "C"),
        ("The image shows a bird, so the answer is C.", "C"),
        ("It could be A or B or C.", None),
        ("No idea", None),
    ],
)
def test_choose_option_on_messy_strings(choices, text, expected):
    assert choose_option(text, choices) == expected


def test_multiple_choice_scores_and_reasons():
    doc = {"choice": ["A. no", "B. yes"], "answer": "B", "category": "c", "source": "MME"}
    assert score_multiple_choice(doc, ["Answer: B"])["acc"] == 1.0
    assert score_multiple_choice(doc, ["A"])["acc"] == 0.0
    unreadable = score_multiple_choice(doc, ["hmm"])
    assert unreadable["acc"] == 0.0 and unreadable["invalid_outputs"] == "no_choice"
    unsupported = UnifiedOutput("direct", unsupported="no understand").to_json()
    assert score_multiple_choice(doc, [unsupported])["acc"] is None


def test_accuracy_by_category_and_source():
    docs = [
        {"choice": ["A. no", "B. yes"], "answer": "B", "category": "count", "source": "MME"},
        {"choice": ["A. no", "B. yes"], "answer": "A", "category": "count", "source": "MMBench"},
        {"choice": ["A. no", "B. yes"], "answer": "A", "category": "color", "source": "MME"},
    ]
    samples = [score_multiple_choice(d, [t]) for d, t in zip(docs, ["B", "B", "garbage"], strict=True)]
    assert scoring.accuracy_by(samples, "category") == {"color": 0.0, "count": 50.0}
    assert scoring.accuracy_by(samples, "source") == {"MMBench": 0.0, "MME": 50.0}


def _qa_doc(answer="B"):
    candidates = [_photo(i) for i in range(4)]
    return {"choice": ["A: 1", "B: 2", "C: 3", "D: 4"], "answer": answer, "candidates": candidates}


def test_clip_choice_picks_an_exact_copy_with_a_random_tiny_backbone(tmp_path):
    doc = _qa_doc()
    for k in range(4):
        raw = _record(tmp_path, "Answer: B", [doc["candidates"][k]])
        assert score_unify_qa(doc, [raw], subtask="CSQ")["image_correct"] == float(k == 0)


def _failed_image_record(tmp_path, failure: str) -> str:
    """An answer_and_image output whose image has no path, a path that does not exist, or an undecodable file."""
    images = {"no_image": [], "missing_path": ["gone.png"], "corrupt_file": ["corrupt.png"]}[failure]
    (tmp_path / "corrupt.png").write_bytes(b"this is not a PNG")
    return UnifiedOutput("answer_and_image", text="Answer: B", images=images, root=str(tmp_path)).to_json()


# Expected image credit of the released scripts, derived by hand from each script's image branch:
# - IEE (Evaluate_IEE.py): `if output_image and all(exists(refs))` -> an empty path is skipped; otherwise
#   compute_image_similarity opens the output inside try/except and returns None on any error -> "failed".
#   Never correct.
# - CSQ (Evaluate_CS.py) and SD (Evaluate_SpotDiff.py): `if output and os.path.exists(output)` -> no path and
#   a missing path are skipped; an undecodable file makes load_image return None, so calculate_clip_similarity
#   returns 0.0 for all four references and `max(similarities, key=similarities.get)` keeps the first key,
#   the reference ("image" / "img_diff_a") -> correct.
# - AL (Evaluate_Math_Geo.py): `if not output_image: return` -> no path is skipped; compute_clip_similarity
#   returns 0.0 when the output does not exist and on any load error, so `sim(main) == max(...)` -> correct.
RELEASED_FAILED_IMAGE_CREDIT = {
    "IEE": {"no_image": 0.0, "missing_path": 0.0, "corrupt_file": 0.0},
    "CSQ": {"no_image": 0.0, "missing_path": 0.0, "corrupt_file": 1.0},
    "SD": {"no_image": 0.0, "missing_path": 0.0, "corrupt_file": 1.0},
    "AL": {"no_image": 0.0, "missing_path": 1.0, "corrupt_file": 1.0},
}
FAILURE_REASON = {
    "no_image": "wrong_image_count",
    "missing_path": "missing_image",
    "corrupt_file": "corrupt_image",
}


@pytest.mark.parametrize("failure", ["no_image", "missing_path", "corrupt_file"])
@pytest.mark.parametrize("subtask", ["IEE", "CSQ", "SD", "AL"])
def test_failed_output_image_per_subtask_rules(tmp_path, subtask, failure):
    doc = _qa_doc()
    raw = _failed_image_record(tmp_path, failure)
    official = score_unify_qa(doc, [raw], subtask=subtask, variant="official")
    corrected = score_unify_qa(doc, [raw], subtask=subtask, variant="corrected")
    assert official["image_correct"] == RELEASED_FAILED_IMAGE_CREDIT[subtask][failure]
    assert corrected["image_correct"] == 0.0
    assert official["invalid_outputs"] == corrected["invalid_outputs"] == FAILURE_REASON[failure]


def test_iee_official_scores_position_corrected_scores_label(tmp_path):
    # The correct explanation is listed first, under the shuffled label "C" (as in the release).
    doc = {
        "choice": [
            "C: the photo became black and white",
            "A: the scene is mirrored",
            "D: upside down",
            "B: neg",
        ],
        "answer": "C",
        "candidates": [_photo(i) for i in range(4)],
    }
    raw = _record(tmp_path, "Explanation: the photo became black and white", [doc["candidates"][0]])
    assert score_unify_qa(doc, [raw], subtask="IEE", variant="corrected")["text_correct"] == 1.0
    assert (
        score_unify_qa(doc, [raw], subtask="IEE", variant="official")["text_correct"] == 0.0
    )  # position 0 -> "A" != "C"
    doc["answer"], doc["choice"][0] = "A", "A: the photo became black and white"
    doc["choice"][1] = "C: the scene is mirrored"
    assert score_unify_qa(doc, [raw], subtask="IEE", variant="official")["text_correct"] == 1.0


def _lake_doc():
    lake = vcot.Lake(3, frozenset({(1, 1)}), (0, 0), (2, 2))
    moves = vcot.shortest_path(lake)
    record = vcot.official_record(lake, moves)
    coords = [json.dumps(c) for c in record["coordinates"]]
    return lake, moves, {**record, "coordinates": coords, "grid_size": 3}


def test_vcot_ground_truth_conventions():
    lake, moves, doc = _lake_doc()
    assert moves == ["Down", "Down", "Right", "Right"]
    assert json.loads(doc["coordinates"][0]) == [1, 1]  # 1-indexed [row, col] BEFORE the first move
    assert prompt_coordinates(doc) == [[0, 1], [0, 2], [1, 2], [2, 2], [2, 2]]  # 0-indexed [x, y] AFTER


def _steps(tmp_path, lake, texts, cells):
    steps = []
    for i, (text, cell) in enumerate(zip(texts, cells, strict=True)):
        name = None
        if cell is not None:
            name = f"step_{i}.png"
            vcot.render(lake, cell).save(tmp_path / name)
        steps.append(Step(text=text, image=name))
    return steps


def _oracle_steps(tmp_path, lake, moves):
    cells = vcot.positions(lake, moves)
    texts = [f"Action: {m}\nLocation: [{c[1]}, {c[0]}]" for m, c in zip(moves, cells, strict=True)]
    return _steps(
        tmp_path,
        lake,
        [*texts, f"Action: Finish\nLocation: [{cells[-1][1]}, {cells[-1][0]}]"],
        [*cells, None],
    )


def _vcot_raw(tmp_path, steps):
    return UnifiedOutput(
        "visual_cot_steps", steps=steps, images=[s.image for s in steps if s.image], root=str(tmp_path)
    ).to_json()


def test_vcot_perfect_corrected_vs_official(tmp_path):
    lake, moves, doc = _lake_doc()
    raw = _vcot_raw(tmp_path, _oracle_steps(tmp_path, lake, moves))
    corrected = score_vcot(doc, [raw], variant="corrected")
    assert (corrected["n_steps"], corrected["image_steps"]) == (5, 4)  # "Finish" draws nothing
    assert [corrected[f"{k}_steps_correct"] for k in ("action", "coordinate", "image")] == [5, 5, 4]
    official = score_vcot(doc, [raw], variant="official")
    # official compares the raw 1-indexed [row, col]-before coordinates and has no image for "Finish"
    assert official["action_steps_correct"] == 5
    assert official["coordinate_steps_correct"] == 0
    assert official["image_steps_correct"] == 4


def test_vcot_early_stop_and_overrun(tmp_path):
    lake, moves, doc = _lake_doc()
    steps = _oracle_steps(tmp_path, lake, moves)
    early = score_vcot(doc, [_vcot_raw(tmp_path, steps[:2])], variant="corrected")
    assert (early["n_steps"], early["action_steps_correct"], early["image_steps_correct"]) == (5, 2, 2)
    finish_early = [*steps[:2], Step(text="Action: Finish\nLocation: [0, 2]")]
    stopped = score_vcot(doc, [_vcot_raw(tmp_path, finish_early)], variant="corrected")
    assert (stopped["action_steps_correct"], stopped["image_steps_correct"]) == (2, 2)
    assert stopped["invalid_outputs"] == ""
    extra = steps[:4] + _steps(tmp_path, lake, ["Action: Up\nLocation: [2, 1]"] * 3, [(1, 2)] * 3)
    overrun = score_vcot(doc, [_vcot_raw(tmp_path, extra)], variant="corrected")
    assert overrun["action_steps_correct"] == 4 and overrun["n_steps"] == 5  # extra steps never add


def test_vcot_missing_step_image(tmp_path):
    lake, moves, doc = _lake_doc()
    steps = _oracle_steps(tmp_path, lake, moves)
    steps[0] = Step(text=steps[0].text, image="gone.png")
    corrected = score_vcot(doc, [_vcot_raw(tmp_path, steps)], variant="corrected")
    official = score_vcot(doc, [_vcot_raw(tmp_path, steps)], variant="official")
    assert corrected["image_steps_correct"] == 3 and corrected["invalid_outputs"] == "missing_image"
    # Evaluate_VSP.py: a load error gives similarity 0.0 to every Step_k, argmax 0 -> step 0 "correct";
    # steps 1-3 pick their own Step_k; "Finish" (index 4) can never be an argmax over 4 images -> 4
    assert official["image_steps_correct"] == 4


def test_vcot_malformed_dataset_coordinates_do_not_break_corrected():
    _, _, doc = _lake_doc()
    doc["coordinates"][2] = "[1.3]"
    assert scoring.raw_coordinates(doc)[2] is None
    assert prompt_coordinates(doc)[2] == [1, 2]


def test_parse_step():
    assert parse_step("Action: **Down**\nLocation: [0, 1]\nImage:") == ("Down", [0, 1])
    assert parse_step("action: finish") == ("Finish", None)
    assert parse_step("I go somewhere") == (None, None)


def test_unknown_variant_is_an_error():
    with pytest.raises(ValueError):
        score_unify_qa(_qa_doc(), ["Answer: B"], subtask="CSQ", variant="paper")


@pytest.mark.parametrize(
    "failure, official_expected",
    # Evaluate_VSP.py, evaluate_step: `if output_image and gt_images` -> an empty path is never attempted
    # (wrong); any other path goes to calculate_clip_similarity, which returns 0.0 on an exception (missing
    # or undecodable file) for every Step_k, so np.argmax picks 0: right at step 0 only. Steps 0 and 1 fail
    # here, steps 2 and 3 pick their own Step_k and "Finish" has none: 2 + (1 if step 0 is credited).
    [("no_image", 2), ("missing_path", 3), ("corrupt_file", 3)],
)
def test_vcot_failed_step_images_follow_the_released_rule(tmp_path, failure, official_expected):
    lake, moves, doc = _lake_doc()
    steps = _oracle_steps(tmp_path, lake, moves)
    (tmp_path / "corrupt.png").write_bytes(b"not a PNG")
    image = {"no_image": None, "missing_path": "gone.png", "corrupt_file": "corrupt.png"}[failure]
    steps[0], steps[1] = (Step(text=s.text, image=image) for s in steps[:2])
    raw = _vcot_raw(tmp_path, steps)
    assert score_vcot(doc, [raw], variant="official")["image_steps_correct"] == official_expected
    corrected = score_vcot(doc, [raw], variant="corrected")
    assert corrected["image_steps_correct"] == 2  # a failed image is never right
    assert corrected["invalid_outputs"] == {**FAILURE_REASON, "no_image": "no_image"}[failure]


def _release_convention_doc():
    """A maze as the prepared release holds it: Step_0 is the initial map shown to the model, Step_k the map
    before move k, and the map after the last move is missing."""
    lake, moves, doc = _lake_doc()
    before = [lake.start, *vcot.positions(lake, moves)[:-1]]
    return (
        lake,
        moves,
        {
            **doc,
            "step_images": [vcot.render(lake, c) for c in before],
            "initial_image": vcot.render(lake, lake.start),
        },
    )


def test_vcot_copying_the_input_map_earns_no_corrected_image_credit(tmp_path):
    lake, moves, doc = _release_convention_doc()
    copy = _steps(tmp_path, lake, [s.text for s in _oracle_steps(tmp_path, lake, moves)], [lake.start] * 4 + [None])
    raw = _vcot_raw(tmp_path, copy)
    # released: step 0's copy of Step_0 is the argmax at index 0 -> 1 credit; steps 1-3 pick index 0 != i
    assert score_vcot(doc, [raw], variant="official")["image_steps_correct"] == 1
    corrected = score_vcot(doc, [raw], variant="corrected")
    # corrected: move i must draw the map after move i, chosen among [initial, after move 1, 2, 3]; a copy
    # of the initial map picks index 0 != i + 1. The map after the last move is not in the data: 3 scored.
    assert (corrected["image_steps"], corrected["image_steps_correct"]) == (3, 0)


def test_vcot_corrected_credits_the_map_after_each_move(tmp_path):
    lake, moves, doc = _release_convention_doc()
    raw = _vcot_raw(tmp_path, _oracle_steps(tmp_path, lake, moves))  # draws the map after each move
    corrected = score_vcot(doc, [raw], variant="corrected")
    assert (corrected["image_steps"], corrected["image_steps_correct"]) == (3, 3)


def test_vcot_finish_step_image_is_never_credited(tmp_path):
    lake, moves, doc = _lake_doc()  # synthetic convention: initial map apart, Step_k = map after move k
    steps = _oracle_steps(tmp_path, lake, moves)
    final = vcot.positions(lake, moves)[-1]
    vcot.render(lake, final).save(tmp_path / "finish.png")
    steps[-1] = Step(text=steps[-1].text, image="finish.png")  # the model draws at "Finish" as well
    raw = _vcot_raw(tmp_path, steps)
    corrected = score_vcot(doc, [raw], variant="corrected")
    assert (corrected["image_steps"], corrected["image_steps_correct"]) == (4, 4)  # Finish not image-scored
    # released: "Finish" is step 4, np.argmax over the 4 Step_k images is at most 3 -> never right
    official = score_vcot(doc, [raw], variant="official")
    assert (official["image_steps"], official["image_steps_correct"]) == (5, 4)
