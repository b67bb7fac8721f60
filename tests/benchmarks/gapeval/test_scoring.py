"""GapEval scoring through the judge layer against the local judge server with the reference policy:
verdicts, the answer spaces, two-turn text judging, the anti-plagiarism rule and every failure path."""

import random

import pytest
from PIL import Image

from lmms_eval_unify.benchmarks.gapeval import spaces
from lmms_eval_unify.benchmarks.gapeval.offline.items import make_items
from lmms_eval_unify.benchmarks.gapeval.paper import CATEGORIES
from lmms_eval_unify.benchmarks.gapeval.reference_judge import verdict
from lmms_eval_unify.benchmarks.gapeval.scoring import score_gen, score_und
from lmms_eval_unify.generation.protocols import Phase
from lmms_eval_unify.judges import reset_judge_state
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.testing.openai_server import Fault, OpenAICompatServer, fixed_reply

pytestmark = pytest.mark.heavy  # generated items and judge round trips


@pytest.fixture(scope="module")
def docs():
    return {c: make_items(c, 3, seed=11) for c in CATEGORIES}


@pytest.fixture
def judge_server(tmp_path, monkeypatch):
    with OpenAICompatServer(verdict) as server:
        monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_CACHE", str(tmp_path / "judge.sqlite"))
        reset_judge_state()
        yield server
        reset_judge_state()


def image_output(tmp_path, images: list[Image.Image], name: str = "out") -> str:
    root = tmp_path / "media"
    root.mkdir(exist_ok=True)
    paths = []
    for i, image in enumerate(images):
        image.save(root / f"{name}_{i}.png")
        paths.append(f"{name}_{i}.png")
    return UnifiedOutput("image_only", images=paths, root=str(root)).to_json()


def text_output(text: str) -> str:
    return UnifiedOutput("direct", text=text).to_json()


@pytest.mark.parametrize("category", CATEGORIES)
def test_every_candidate_is_judged_right_iff_it_is_the_truth(docs, category, judge_server, tmp_path):
    """So the oracle scores 100 and random (uniform over the pool) exactly 1/len(pool) in each direction."""
    for doc in docs[category]:
        for i, (text, drawing) in enumerate(zip(doc["answer_pool"], doc["pool_images"], strict=True)):
            truth = text == doc["reference"]
            und = score_und(doc, [text_output(text)])
            gen = score_gen(doc, [image_output(tmp_path, [drawing], f"{doc['id']}_{i}")])
            assert und["correct"] == gen["correct"] == float(truth), (text, und, gen)
            assert und["invalid_outputs"] == gen["invalid_outputs"] == ""
            assert (und["question_id"], und["repeat"]) == (gen["question_id"], gen["repeat"]) == (doc["id"], 0)
            assert gen["details"]["judge"]["template_id"] == f"gapeval.gen.{category}"


def test_oracle_and_random_plans(docs):
    doc = docs["numerical_perception"][0]
    rng = random.Random(0)
    assert spaces.UND.plan(doc, [], rng, oracle=True).text(Phase("answer")) == doc["reference"]
    truth = doc["answer_pool"].index(doc["reference"])
    drawn = spaces.GEN.plan(doc, [], rng, oracle=True).image(Phase("generate"))
    assert drawn.tobytes() == doc["pool_images"][truth].tobytes()
    answers = {spaces.UND.plan(doc, [], random.Random(s), oracle=False).text(Phase("answer")) for s in range(60)}
    assert answers == set(doc["answer_pool"])
    # Published rows have no candidates: the oracle draws the reference (a copy the judge must reject),
    # random abstains.
    published = {k: v for k, v in doc.items() if k not in ("answer_pool", "pool_images")}
    drawn = spaces.GEN.plan(published, [], rng, oracle=True).image(Phase("generate"))
    assert drawn.tobytes() == doc["ref_image"].tobytes()
    assert spaces.UND.plan(published, [], rng, oracle=False).text(Phase("answer")) == ""


def test_text_judging_is_two_turn_by_default_and_single_turn_on_request(docs, judge_server):
    doc = docs["reasoning"][0]
    score_und(doc, [text_output(doc["reference"])])
    assert [r.user_turns for r in judge_server.requests_to()] == [1, 2]
    assert judge_server.requests_to()[1].texts("user")[-1] == "Are you sure? Think carefully."
    assert score_und(doc, [text_output(doc["reference"] + " ")], judge={"two_turn": False})["correct"] == 1.0
    assert [r.user_turns for r in judge_server.requests_to()][2:] == [1]


def test_a_copy_of_the_reference_image_fails_the_anti_plagiarism_rule(docs, judge_server, tmp_path):
    doc = docs["world_knowledge"][0]
    copied = score_gen(doc, [image_output(tmp_path, [doc["ref_image"]])])
    assert copied["correct"] == 0.0 and "plagiarism" in copied["details"]["judge"]["fields"]["reason"]
    request = judge_server.requests_to()[-1]
    assert "[Original_Image]" not in request.text  # multi-hop world knowledge: text-to-image, no input image
    edit = docs["instruction_following"][0]
    score_gen(edit, [image_output(tmp_path, [edit["ref_image"]], "edit")])
    assert "[Original_Image]" in judge_server.requests_to()[-1].text


def test_unusable_outputs_score_0_with_a_reason_without_a_judge_call(docs, judge_server, tmp_path):
    doc = docs["reasoning"][1]
    drawing = doc["pool_images"][0]
    two = score_gen(doc, [image_output(tmp_path, [drawing, drawing])])
    assert two["correct"] == 0.0 and two["invalid_outputs"] == "wrong_image_count"
    missing = UnifiedOutput("image_only", images=["nope.png"], root=str(tmp_path)).to_json()
    assert score_gen(doc, [missing])["invalid_outputs"] == "missing_image"
    (tmp_path / "bad.png").write_bytes(b"not a png")
    corrupt = UnifiedOutput("image_only", images=["bad.png"], root=str(tmp_path)).to_json()
    assert score_gen(doc, [corrupt])["invalid_outputs"] == "corrupt_image"
    error = UnifiedOutput("direct", error="CUDA out of memory").to_json()
    assert score_und(doc, [error]) | {"details": None} == {
        "correct": 0.0, "invalid_outputs": "model_error", "question_id": doc["id"], "repeat": 0, "details": None
    }  # fmt: skip
    assert score_und(doc, [text_output("  ")])["correct"] == 0.0
    unsupported = UnifiedOutput("image_only", unsupported="lacks generate_image").to_json()
    assert score_gen(doc, [unsupported])["correct"] is None and score_gen(doc, [unsupported])["invalid_outputs"] == ""
    assert judge_server.request_count == 0


def test_unparseable_and_failed_judgements_score_0_with_a_reason(docs, tmp_path, monkeypatch):
    doc = {**docs["world_knowledge"][0], "repeat": 3}
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_CACHE", str(tmp_path / "judge.sqlite"))
    with OpenAICompatServer(fixed_reply("Looks right to me.")) as server:
        monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", server.base_url)
        reset_judge_state()
        invalid = score_und(doc, [text_output(doc["reference"])])
        assert invalid["correct"] == 0.0 and invalid["invalid_outputs"] == "judge_invalid"
        assert invalid["details"]["judge"]["raw"] == "Looks right to me." and invalid["repeat"] == 3
        server.inject([Fault.http(400)])
        failed = score_gen(doc, [image_output(tmp_path, [doc["pool_images"][0]])])
        assert failed["correct"] == 0.0 and failed["invalid_outputs"] == "judge_failed"
    reset_judge_state()
