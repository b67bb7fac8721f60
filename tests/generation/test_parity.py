"""``check-adapter A --parity B``: the comparison's pure parts, and the command on two local servers."""

from __future__ import annotations

import json

import pytest

from lmms_eval_unify.commands.check_adapter import main
from lmms_eval_unify.generation.parity import (
    DEFAULT_THRESHOLDS,
    PARTS,
    PairOutcome,
    Thresholds,
    compared_parts,
    normalised_answer,
    parity_docs,
    parity_requests,
    parity_samples,
    parity_verdict,
)
from lmms_eval_unify.generation.primitives import GENERATE_IMAGE, UNDERSTAND
from lmms_eval_unify.metrics.switches import TINY_METRICS_ENV
from lmms_eval_unify.metrics.tiny import CACHE_ENV
from lmms_eval_unify.testing.openai_server import ChatRequest, OpenAICompatServer

API_KEY = "sk-parity"


@pytest.mark.parametrize(("a", "b"), [("Red.", "red"), ("  The  answer\n", "the answer"), ('"blue"', "Blue!")])
def test_answers_agree_up_to_case_spacing_and_surrounding_punctuation(a, b):
    assert normalised_answer(a) == normalised_answer(b)


def test_answers_that_say_something_else_differ():
    assert normalised_answer("red square") != normalised_answer("red")


def test_samples_are_fixed_distinct_and_each_request_has_its_own_doc():
    first, again = parity_samples(10), parity_samples(10)
    assert [s.image.tobytes() for s in first] == [s.image.tobytes() for s in again]
    assert len({s.image.tobytes() for s in first}) == 10 and len({s.drawing for s in first}) == 10
    requests = parity_requests(first, PARTS, "x:y")
    doc_ids = [r.args[3] for r in requests]
    docs = parity_docs(first)
    assert sorted(doc_ids) == sorted(docs) == list(range(30))
    assert all(len(docs[r.args[3]]["inputs"]) == (0 if "Draw" in r.args[0] else 1) for r in requests)


def test_the_verdict_names_every_threshold_exceeded_and_counts_failures():
    answers = [PairOutcome("answer", i, ("a", "a" if i else "b"), agree=bool(i)) for i in range(4)]
    images = [PairOutcome("drawing", i, dreamsim=0.1 * i, lpips=0.2) for i in range(3)]
    verdict = parity_verdict([*answers, *images], DEFAULT_THRESHOLDS)
    assert (verdict.agreeing, verdict.answers, verdict.image_pairs) == (3, 4, 3)
    assert verdict.dreamsim_mean == pytest.approx(0.1) and verdict.dreamsim_max == pytest.approx(0.2)
    assert verdict.exceeded == ["answer agreement 3/4 below 90%"] and not verdict.passed
    strict = parity_verdict([*images, PairOutcome("edit", 0, failure="B: HTTP 500")], Thresholds(1.0, 0.05, 0.1))
    assert strict.exceeded == [
        "1 request(s) failed on a side",
        "mean DreamSim 0.1000 above 0.05",
        "mean LPIPS 0.2000 above 0.1",
    ]
    assert parity_verdict([*answers[1:], *images], DEFAULT_THRESHOLDS).passed


def _answer(request: ChatRequest) -> str:
    """Answers the colour the sample's question is about, as a model would (it reads the drawn square)."""
    return "Red." if request.images else "no image"


@pytest.fixture
def servers(monkeypatch, tmp_path):
    monkeypatch.setenv("PARITY_KEY", API_KEY)
    monkeypatch.setenv(TINY_METRICS_ENV, "1")
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    with (
        OpenAICompatServer(_answer, api_key=API_KEY).serve_images() as same_a,
        OpenAICompatServer(lambda r: "red", api_key=API_KEY).serve_images() as same_b,
        OpenAICompatServer(_answer, api_key=API_KEY).serve_images(ignore_prompts=True) as drifting,
    ):
        yield same_a, same_b, drifting


def _args(server: OpenAICompatServer) -> str:
    return (f"model=served/model,chat_model=vlm,base_url={server.base_url},api_key_env=PARITY_KEY,send_seed=true,"
            "size=64x64,timeout=10,max_retries=0")  # fmt: skip


@pytest.mark.heavy  # two adapters, tiny DreamSim and LPIPS
def test_two_servers_of_the_same_model_pass_and_a_drifting_one_is_flagged(servers, tmp_path, capsys):
    """Same weights behind two servers: every answer agrees (after normalisation) and every image pair is at
    distance 0. A server that ignores prompts draws other images: the mean distances pass the (tiny-metric)
    thresholds of the test, and the command exits 1 naming them; the report holds every pair."""
    same_a, same_b, drifting = servers
    base = ["openai_image", "--model_args", _args(same_a), "--parity", "openai_image", "--samples", "3"]
    assert main([*base, "--parity_args", _args(same_b), "--output_dir", str(tmp_path / "same")]) == 0
    printed = capsys.readouterr().out
    assert "answers: 3/3 agree" in printed and "parity: PASSED" in printed
    report = json.loads((tmp_path / "same" / "parity.json").read_text(encoding="utf-8"))
    assert report["verdict"]["dreamsim_max"] == pytest.approx(0, abs=1e-6) and report["verdict"]["lpips_max"] == 0
    assert len(report["outcomes"]) == 9 and report["verdict"]["image_pairs"] == 6
    assert [len(s.requests_to("/v1/images/edits")) for s in (same_a, same_b)] == [3, 3]
    seeds = [[e.body["fields"]["seed"] for e in s.requests_to("/v1/images/edits")] for s in (same_a, same_b)]
    assert seeds[0] == seeds[1] and len(set(seeds[0])) == 3  # each sample's own seed, the same on both sides

    strict = ["--max_dreamsim", "1e-6", "--max_lpips", "1e-6"]
    assert main([*base, "--parity_args", _args(drifting), "--output_dir", str(tmp_path / "drift"), *strict]) == 1
    printed = capsys.readouterr().out
    assert "parity: FAILED: mean DreamSim" in printed and "mean LPIPS" in printed
    drift = json.loads((tmp_path / "drift" / "parity.json").read_text(encoding="utf-8"))
    drawings = [o for o in drift["outcomes"] if o["part"] == "drawing"]
    assert all(o["dreamsim"] > 1e-6 and o["lpips"] > 1e-6 for o in drawings)


def test_a_model_that_cannot_be_built_or_different_seeds_exit_2(servers, tmp_path, capsys):
    same_a, _, _ = servers
    base = ["openai_image", "--model_args", _args(same_a), "--output_dir", str(tmp_path)]
    assert main([*base, "--parity", "no_such_model"]) == 2
    assert "no_such_model (B): cannot build the model" in capsys.readouterr().out
    assert main([*base, "--parity", "openai_image", "--parity_args", _args(same_a) + ",seed=1"]) == 2
    assert "different per-sample seeds" in capsys.readouterr().out


def test_only_the_primitives_both_adapters_claim_are_compared():
    both = frozenset({UNDERSTAND, GENERATE_IMAGE})
    assert compared_parts(both, both) == ["answer", "drawing", "edit"]
    assert compared_parts(both, frozenset({UNDERSTAND})) == ["answer"]
    assert compared_parts(frozenset({GENERATE_IMAGE}), frozenset({UNDERSTAND})) == []
