"""``score_puzzle`` of the ``uni_mmmu_{maze,sliding}{,_official}`` tasks on generated data (which carries the sliding
step images)."""

import json

import datasets
import pytest

from lmms_eval_unify.benchmarks.uni_mmmu.scoring import score_puzzle
from lmms_eval_unify.generation.media import MediaStore
from lmms_eval_unify.generation.visuals import to_pil_images
from lmms_eval_unify.output.record import Step, UnifiedOutput
from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.dataset import write_puzzles
from lmms_eval_unify.puzzles.domain import moves_from_field, read_state, simulate
from lmms_eval_unify.puzzles.scoring import METRICS

pytestmark = pytest.mark.heavy  # generated puzzle sets (module fixture)


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    maze, sliding = write_puzzles(tmp_path_factory.mktemp("puzzles"), 3, 3, seed=5)
    return {
        name: list(datasets.Dataset.from_parquet(str(path))) for name, path in (("maze", maze), ("sliding", sliding))
    }


def _oracle(tmp_path, puzzle, doc):
    domain = DOMAINS[puzzle]
    moves = moves_from_field(doc[domain.answer_field])
    states = simulate(domain, read_state(domain, to_pil_images(doc["initial_image"])[0]), moves)
    store = MediaStore(tmp_path)
    paths = [store.save_image("t", doc["id"], f"s{i}", domain.render(s)) for i, s in enumerate(states)]
    return UnifiedOutput("image_sequence_then_answer", text=f"<ANSWER_JSON>{json.dumps(moves)}</ANSWER_JSON>",
                         images=paths, steps=[Step("x", p) for p in paths], root=str(store.root)).to_json()  # fmt: skip


def test_unknown_variant_is_a_clear_error(tmp_path, docs):
    doc = docs["maze"][0]
    with pytest.raises(ValueError, match="unknown scoring variant 'oficial'"):
        score_puzzle(doc, [_oracle(tmp_path, "maze", doc)], domain="maze", variant="oficial")


@pytest.mark.parametrize("puzzle", ["maze", "sliding"])
def test_oracle_scores_one_in_both_variants(tmp_path, docs, puzzle):
    for doc in docs[puzzle]:
        output = _oracle(tmp_path, puzzle, doc)
        for variant in ("corrected", "official"):
            scores = score_puzzle(doc, [output], domain=puzzle, variant=variant)
            assert [scores[m] for m in METRICS] == [1.0] * 4, (variant, scores)


def test_generated_sliding_step_images_are_the_boards_after_each_move(docs):
    domain = DOMAINS["sliding"]
    for doc in docs["sliding"]:
        moves = moves_from_field(doc["steps_words"])
        states = simulate(domain, read_state(domain, doc["initial_image"]), moves)
        assert [domain.parse_grid(i) for i in doc["step_images"]] == [domain.grid_of(s) for s in states]
        assert doc["final_image"].tobytes() == doc["step_images"][-1].tobytes()


def test_sliding_official_without_step_images_leaves_image_metrics_unscored(tmp_path, docs):
    doc = {k: v for k, v in docs["sliding"][0].items() if k != "step_images"}
    scores = score_puzzle(doc, [_oracle(tmp_path, "sliding", doc)], domain="sliding", variant="official")
    assert scores["text_sample_acc"] == 1.0 and scores["img_step_acc"] is None and scores["img_sample_acc"] is None
