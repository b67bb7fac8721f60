import json
import random

from conftest import make_request
from lmms_eval_unify.model_adapters.baselines import UnifyOracle, UnifyRandom

from lmms_eval_unify.output.record import parse_output
from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.maze import generate_maze
from lmms_eval_unify.puzzles.scoring import score_move_sequence

OPTIONS = {
    "protocol": "image_sequence_then_answer",
    "answer_space": "lmms_eval_unify.puzzles.answer_space:MAZE",
}


def _maze_request(doc_id=0):
    maze = DOMAINS["maze"]
    start, moves = generate_maze(maze, random.Random(doc_id))
    doc = {"steps": json.dumps(list(moves)), "image": maze.render(start)}
    request = make_request("solve", OPTIONS, task="maze", doc_id=doc_id)
    request.arguments = (*request.arguments[:2], lambda d: [d["image"]], *request.arguments[3:])
    return doc, request


def _model(cls, tmp_path, docs, **kwargs):
    model = cls(output_dir=str(tmp_path), **kwargs)
    model.task_dict = {"maze": {"test": docs}}
    return model


def test_oracle_runs_the_protocol_and_scores_one(tmp_path):
    doc, request = _maze_request()
    out = _model(UnifyOracle, tmp_path, {0: doc}).generate_until([request])[0]
    scores = score_move_sequence(DOMAINS["maze"], doc, out, doc["image"])
    assert scores["text_sample_acc"] == scores["img_sample_acc"] == 1.0


def test_random_is_seeded_per_sample(tmp_path):
    docs, requests = zip(*(_maze_request(i) for i in range(4)), strict=True)
    docs = dict(enumerate(docs))
    first = [parse_output(o).text for o in _model(UnifyRandom, tmp_path / "a", docs).generate_until(list(requests))]
    again = [parse_output(o).text for o in _model(UnifyRandom, tmp_path / "b", docs).generate_until(list(requests))]
    other = [
        parse_output(o).text for o in _model(UnifyRandom, tmp_path / "c", docs, seed=1).generate_until(list(requests))
    ]
    assert first == again and first != other


def test_task_without_answer_space_is_an_error_record(tmp_path):
    doc, request = _maze_request()
    request.arguments = (request.arguments[0], {"protocol": "direct"}, *request.arguments[2:])
    parsed = parse_output(_model(UnifyOracle, tmp_path, {0: doc}).generate_until([request])[0])
    assert parsed.failure.reason == "model_error" and "answer_space" in parsed.failure.detail
