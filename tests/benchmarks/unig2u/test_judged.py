"""The judged subtasks (Geometry3K, AuxSolidMath, PhyX, BabyVision): prompts, extraction, answer spaces
and scoring through the judge layer against the local test judge server."""

import json
import random

import datasets
import pytest

from lmms_eval_unify.benchmarks.unig2u import spaces
from lmms_eval_unify.benchmarks.unig2u.offline.data import generate
from lmms_eval_unify.benchmarks.unig2u.prompts import direct_prompt, gta_prompt
from lmms_eval_unify.benchmarks.unig2u.reference_judge import verdict
from lmms_eval_unify.benchmarks.unig2u.scoring import extracted_answer, judge_request, score_judged
from lmms_eval_unify.benchmarks.unig2u.spec import HUB_ROOT, JUDGED, SUBTASKS
from lmms_eval_unify.benchmarks.unig2u.task import base64_image, resolve_files, rows_of_type
from lmms_eval_unify.generation.protocols import Phase, split_generate_then_answer_prompt
from lmms_eval_unify.judges import get_template, reset_judge_state
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.testing.openai_server import ChatRequest, Fault, OpenAICompatServer, fixed_reply

pytestmark = pytest.mark.heavy  # the generated UniG2U set (module fixture) and judge round trips

SPACE = {"geometry3k": spaces.GEOMETRY, "auxsolidmath": spaces.GEOMETRY, "phyx": spaces.PHYX,
         "babyvision": spaces.BABYVISION}  # fmt: skip


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    root = tmp_path_factory.mktemp("unig2u_judged")
    generate(root, 6, seed=4)
    out = {}
    for name in JUDGED:
        subtask = SUBTASKS[name]
        [path] = resolve_files([HUB_ROOT + subtask.files[0]], str(root))
        table = datasets.load_dataset("parquet", data_files={"x": path}, split="x")
        out[name] = list(rows_of_type(table, subtask.doc_type) if subtask.doc_type else table)
    return out


@pytest.fixture
def judge_server(tmp_path, monkeypatch):
    """The local judge server with the ground-truth-agreeing policy; a fresh cache per test."""
    with OpenAICompatServer(verdict) as server:
        monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_CACHE", str(tmp_path / "judge.sqlite"))
        reset_judge_state()
        yield server
        reset_judge_state()


def _answer(name: str, doc: dict, oracle: bool, rng: random.Random) -> str:
    return SPACE[SUBTASKS[name].family].plan(doc, [], rng, oracle=oracle).text(Phase("answer"))


def test_fixture_files_have_the_published_fields(docs):
    assert set(docs["geometry"][0]) == {"images", "problem", "answer"} and "<image>" in docs["geometry"][0]["problem"]
    assert {"original_image", "question", "answer", "auxiliary_line_description"} == set(docs["geometry_3d"][0])
    assert base64_image(docs["light"][0]["image"]).size == (256, 192)  # PhyX images are base64 strings
    assert {d["category"] for d in docs["light"]} == {"Optics"}
    baby = docs["visual_track"] + docs["fine_discrim"]
    assert {
        "image",
        "question",
        "ansType",
        "options",
        "choiceAns",
        "blankAns",
        "type",
        "subtype",
        "taskId",
    } <= set(baby[0])
    assert {d["type"] for d in docs["visual_track"]} == {"Visual Tracking"} and len(docs["fine_discrim"]) == 6
    assert {d["ansType"] for d in baby} == {"choice", "blank"}


@pytest.mark.parametrize("name", JUDGED)
def test_prompts_direct_and_gta(name, docs):
    doc = docs[name][0]
    gen, question = split_generate_then_answer_prompt(gta_prompt(name, doc), {})
    assert gen and question and question != direct_prompt(name, doc)
    assert "auxiliary" in question.lower()


def test_prompt_wording():
    doc = {"question": " Which one? ", "ansType": "choice", "options": ["cat", "dog"]}
    assert direct_prompt("fine_discrim", doc) == (
        "Which one?\nChoices:\n(A) cat\n(B) dog\n\n"
        "Think step by step and give your final answer in \\boxed{Answer} format."
    )
    assert direct_prompt("light", {"question": "Q?"}) == "Q?"
    gen, question = split_generate_then_answer_prompt(gta_prompt("mechanism", {"question": "Q?"}), {})
    assert gen.startswith("Based on this mechanics problem, draw a free body diagram")
    assert question.endswith("to help you solve the problem.\n\nQ?")
    assert direct_prompt("geometry", {"problem": "<image>Find x."}).startswith("<image>Find x.\n\nInstructions:\n1.")
    gen, question = split_generate_then_answer_prompt(gta_prompt("geometry_3d", {"question": "P"}), {})
    assert "Problem: P" in gen and question.startswith("You are given a solid geometry problem.\n\nProblem: P")


def test_extraction_before_the_judge():
    assert extracted_answer(r"so \boxed{\frac{1}{2}} and finally \boxed{x^{2}}") == "x^{2}"
    assert extracted_answer("the value is `42`, done") == "42"
    # Official: the first standalone letter anywhere ("A" of "A careful ..."); ours: the committed option.
    assert extracted_answer("A careful look shows the answer is (C).", ("A", "B", "C", "D")) == "C"
    assert extracted_answer("no letter here at all", ("A", "B")) == "no letter here at all"
    long = "x" * 60_000 + " the answer is 7"
    _, variables, verdict_field = judge_request("geometry3k", {"problem": "p", "answer": "7"}, long)
    assert verdict_field == "answer_correct" and variables["response"].endswith("answer is 7")
    assert len(variables["response"]) == 50_000 + len("...[truncated]...\n")


@pytest.mark.parametrize("name", JUDGED)
def test_oracle_scores_1_through_the_judge_server_and_results_are_cached(name, docs, judge_server):
    scored = [score_judged(d, [_answer(name, d, True, random.Random(0))], subtask=name) for d in docs[name]]
    assert [s["acc"] for s in scored] == [1.0] * len(docs[name])
    assert all(s["invalid_outputs"] == "" and s["details"]["judge"]["status"] == "ok" for s in scored)
    calls = judge_server.request_count
    assert 0 < calls <= len(docs[name])  # identical fixture items share one judgement
    again = score_judged(docs[name][0], [_answer(name, docs[name][0], True, random.Random(0))], subtask=name)
    assert again["acc"] == 1.0 and judge_server.request_count == calls  # served from the cache
    wrong = score_judged(docs[name][0], ["\\boxed{-1} The final answer is -1."], subtask=name)
    assert wrong["acc"] == 0.0 and wrong["invalid_outputs"] == ""


def expected_chance(name: str, doc: dict) -> float:
    if SUBTASKS[name].family == "babyvision" and doc["ansType"] == "choice":
        return 1 / len(doc["options"])
    low, high = spaces.FREE_RANDOM_RANGE
    truth = int(doc["blankAns"] if "ansType" in doc else doc["answer"])
    return (low <= truth <= high) / (high - low + 1)


@pytest.mark.parametrize("name", JUDGED)
def test_random_answers_land_at_the_analytic_chance_level(name, docs):
    """The reference judge applied in process to the rendered judge prompts (no HTTP for 3,600 draws)."""
    family, rng, draws = SUBTASKS[name].family, random.Random(11), 600
    hits = 0
    for doc in docs[name]:
        for _ in range(draws):
            template_id, variables, field = judge_request(family, doc, _answer(name, doc, False, rng))
            rendered = get_template(template_id).render(variables, {})
            reply = verdict(ChatRequest(body={"messages": rendered.messages}, headers={}))
            hits += get_template(template_id).outputs[0].coerce(json.loads(reply)[field])
    observed = hits / (draws * len(docs[name]))
    expected = sum(expected_chance(name, d) for d in docs[name]) / len(docs[name])
    assert abs(observed - expected) < 0.03, (observed, expected)
    assert expected < 0.5


def test_unparseable_and_failed_judgements_score_0_with_a_reason(docs, tmp_path, monkeypatch):
    doc = docs["light"][0]
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_CACHE", str(tmp_path / "judge.sqlite"))
    with OpenAICompatServer(fixed_reply("Sure, looks fine to me.")) as server:
        monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", server.base_url)
        reset_judge_state()
        invalid = score_judged(doc, [f"\\boxed{{{doc['answer']}}}"], subtask="light")
        assert invalid["acc"] == 0.0 and invalid["invalid_outputs"] == "judge_invalid"
        assert invalid["details"]["judge"]["raw"] == "Sure, looks fine to me."
        server.inject([Fault.http(400)])
        failed = score_judged(doc, ["\\boxed{0}"], subtask="light")
        assert failed["acc"] == 0.0 and failed["invalid_outputs"] == "judge_failed"
    reset_judge_state()


def test_unsupported_and_broken_outputs_never_reach_the_judge(docs, judge_server):
    doc = docs["geometry"][0]
    unsupported = UnifiedOutput("generate_then_answer", unsupported="generate").to_json()
    assert score_judged(doc, [unsupported], subtask="geometry")["acc"] is None
    broken = score_judged(doc, ['{"unify_output": 1, "text": 3'], subtask="geometry")
    assert broken["acc"] == 0.0 and broken["invalid_outputs"]
    assert score_judged(doc, ["   "], subtask="geometry") == {
        "acc": 0.0,
        "invalid_outputs": "",
        "details": {"empty": True},
    }
    assert judge_server.request_count == 0


def test_a_judged_task_refuses_to_start_without_a_judge_endpoint(monkeypatch):
    from types import SimpleNamespace

    from lmms_eval_unify.benchmarks.unig2u.task import UniG2UTask
    from lmms_eval_unify.judges import JudgeNotConfiguredError

    for name in ("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    judged = SimpleNamespace(
        config=SimpleNamespace(metadata={"judged": True, "benchmark": "unig2u"}),
        judge_configs=UniG2UTask.judge_configs,
    )
    judged.check_judges = lambda: UniG2UTask.check_judges(judged)
    with pytest.raises(JudgeNotConfiguredError, match="LMMS_EVAL_UNIFY_JUDGE_BASE_URL"):
        UniG2UTask.download(judged, {})
    assert UniG2UTask.judge_configs({"metadata": {"judged": True, "benchmark": "unig2u"}})[0][1] == (
        "gpt-4o-2024-11-20"
    )
    assert UniG2UTask.judge_configs({"metadata": {"benchmark": "unig2u"}}) == []


def test_ra_al_diagnostics_read_the_babyvision_rows_of_the_task(tmp_path, monkeypatch):
    from lmms_eval_unify.benchmarks.unig2u import diagnostics

    generate(tmp_path, 2, seed=1)
    monkeypatch.setenv("LMMS_EVAL_UNIFY_DATA_DIR", str(tmp_path))
    diagnostics._docs.cache_clear()
    try:
        docs = diagnostics._docs("unig2u_visual_track_gta")  # doc_id indexes the filtered rows
        assert len(docs) == 2 and set(docs["type"]) == {"Visual Tracking"}
    finally:
        diagnostics._docs.cache_clear()
