import json
import random

from lmms_eval_unify.generation.media import MediaStore
from lmms_eval_unify.output.record import Step, UnifiedOutput
from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.domain import simulate
from lmms_eval_unify.puzzles.maze import generate_maze
from lmms_eval_unify.puzzles.scoring import METRICS, moves_from_answer, score_move_sequence, sequence_accuracy

MAZE = DOMAINS["maze"]


def test_moves_from_answer_takes_last_block_and_normalises():
    text = 'draft <ANSWER_JSON>["up"]</ANSWER_JSON> final:\n<answer_json> [" Right ","DOWN"] </answer_json>'
    assert moves_from_answer(text) == ["right", "down"]
    assert moves_from_answer("no answer") is None
    assert moves_from_answer("<ANSWER_JSON>[up, down]</ANSWER_JSON>") is None


def test_sequence_accuracy_is_position_wise_over_truth():
    assert sequence_accuracy(["a", "b", "c"], ["a", "b", "c"]) == (1.0, 1.0)
    assert sequence_accuracy(["a", "x", "c", "d"], ["a", "b", "c"]) == (0.0, 2 / 3)
    assert sequence_accuracy(["a"], ["a", "b"]) == (0.0, 0.5)
    assert sequence_accuracy([], []) == (1.0, 1.0)


def _sample(tmp_path, moves_stated, images_moves):
    start, truth = generate_maze(MAZE, random.Random(1))
    store = MediaStore(tmp_path)
    paths = [
        store.save_image("t", 0, f"step_{i}", MAZE.render(s)) for i, s in enumerate(simulate(MAZE, start, images_moves))
    ]
    record = UnifiedOutput(
        "image_sequence_then_answer",
        text=f"<ANSWER_JSON>{json.dumps(moves_stated(truth))}</ANSWER_JSON>",
        images=paths,
        steps=[Step("x", p) for p in paths],
        root=str(store.root),
    )
    doc = {"steps": json.dumps(list(truth))}
    return doc, record, MAZE.render(start), truth


def test_perfect_output_scores_one(tmp_path):
    start, truth = generate_maze(MAZE, random.Random(1))
    doc, record, initial, truth = _sample(tmp_path, list, truth)
    scores = score_move_sequence(MAZE, doc, record.to_json(), initial)
    assert all(scores[m] == 1.0 for m in METRICS) and scores["invalid_outputs"] == ""


def test_truncated_output_scores_steps(tmp_path):
    _, truth = generate_maze(MAZE, random.Random(1))
    doc, record, initial, truth = _sample(tmp_path, lambda t: list(t)[:1], truth[:1])
    scores = score_move_sequence(MAZE, doc, record.to_json(), initial)
    assert scores["text_sample_acc"] == 0.0 and scores["text_step_acc"] == 1 / len(truth)
    assert scores["img_sample_acc"] == 0.0 and scores["img_step_acc"] == 1 / len(truth)


def test_unsupported_output_gives_none(tmp_path):
    doc, _, initial, _ = _sample(tmp_path, list, [])
    scores = score_move_sequence(MAZE, doc, UnifiedOutput("x", unsupported="no images").to_json(), initial)
    assert all(scores[m] is None for m in METRICS)
