"""The judged Uni-MMMU tasks (geometry, science, code): fixtures, answer spaces, scorers against the local
judge server with the reference policy, invalid outputs and judge failures, and the judge check at start."""

import json
import random
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from lmms_eval_unify.benchmarks.uni_mmmu import code, geometry, reference_judge, science, svg
from lmms_eval_unify.benchmarks.uni_mmmu.judged import JUDGES_ENV
from lmms_eval_unify.benchmarks.uni_mmmu.offline import code as offline_code
from lmms_eval_unify.benchmarks.uni_mmmu.offline import geometry as offline_geometry
from lmms_eval_unify.benchmarks.uni_mmmu.offline import science as offline_science
from lmms_eval_unify.benchmarks.uni_mmmu.task import UniMMMUTask
from lmms_eval_unify.generation.protocols import Phase
from lmms_eval_unify.judges import JudgeNotConfiguredError, reset_judge_state
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.testing.openai_server import Fault, OpenAICompatServer, fixed_reply

pytestmark = pytest.mark.heavy  # generated geometry/science/code items and judge round trips

N = 6
TASKS_DIR = Path(__file__).parents[3] / "tasks" / "uni_mmmu"
TASKS = {
    "geometry": (offline_geometry.generate_geometry_items, geometry.GEOMETRY, geometry.score_geometry),
    "science": (offline_science.generate_science_items, science.SCIENCE, science.score_science),
    "code": (offline_code.generate_code_items, code.CODE, code.score_code),
}
METRICS = {
    "geometry": {"img_acc": 1.0, "text_acc": 1.0},
    "science": {"img_acc": 1.0, "reasoning_acc": 1.0, "text_acc": 1.0},
    "code": {"text_acc": 1.0, "shape_color_score": 5.0, "position_score": 5.0},
}
IMAGE_METRICS = {
    "geometry": ("img_acc",),
    "science": ("img_acc",),
    "code": ("shape_color_score", "position_score"),
}


@pytest.fixture(scope="module")
def items():
    return {name: generate(N, seed=3) for name, (generate, _, _) in TASKS.items()}


@pytest.fixture
def judge_server(tmp_path, monkeypatch):
    with OpenAICompatServer(reference_judge.verdict) as server:
        monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_CACHE", str(tmp_path / "judge.sqlite"))
        reset_judge_state()
        yield server
        reset_judge_state()


def output(root, text: str, images: list[Image.Image], **extra) -> str:
    names = []
    for index, image in enumerate(images):
        image.save(root / f"out_{index}.png")
        names.append(f"out_{index}.png")
    return UnifiedOutput("test", text=text, images=names, root=str(root), **extra).to_json()


def planned(name: str, doc: dict, oracle: bool, seed: int = 0) -> tuple[str, Image.Image]:
    plan = TASKS[name][1].plan(doc, [], random.Random(seed), oracle=oracle)
    return plan.text(Phase("answer")), plan.image(Phase("generate"))


def test_fixtures_have_the_official_fields_and_exact_answers(items):
    geo = items["geometry"][0]
    assert {"type", "problem_text_en", "choices_en", "auxiliary_text_en", "solution_en", "original_image",
            "auxiliary_image"} <= set(geo)  # fmt: skip
    for doc in items["geometry"]:
        value = reference_judge.final_value(doc["solution_en"])
        assert [c for c in doc["choices_en"] if geometry.final_answer(c) == value], doc["choices_en"]
        assert len(set(doc["choices_en"])) == 4
        lines = np.abs(np.asarray(doc["auxiliary_image"], int) - np.asarray(doc["original_image"], int)).max(-1)
        assert (lines > 48).sum() > 100  # the auxiliary line is drawn
    assert {d["level_1_category"] for d in items["science"]} == {"Physics", "Chemistry", "Biology"}
    for doc in items["science"]:
        assert reference_judge.FINAL_STATE.search(doc["output_prompt"])
        assert doc["initial_image"].tobytes() != doc["final_image"].tobytes()
    assert [d["difficulty"] for d in items["code"][:3]] == ["A", "B", "C"]
    for doc in items["code"]:
        colours = {c for _, c in svg.drawn_shapes(doc["svg"])}
        assert colours == reference_judge.colours_present(reference_judge.palette_classes(np.asarray(doc["gt_image"])))


@pytest.mark.parametrize("name", TASKS)
def test_oracle_scores_full_marks_and_wrong_answers_score_zero(name, items, judge_server, tmp_path):
    score = TASKS[name][2]
    for doc in items[name]:
        text, image = planned(name, doc, oracle=True)
        result = score(doc, [output(tmp_path, text, [image])])
        assert {k: result[k] for k in METRICS[name]} == METRICS[name], result["details"]
        assert result["invalid_outputs"] == ""
    doc = items[name][0]
    wrong_image = Image.new("RGB", (64, 64), "white")
    result = score(doc, [output(tmp_path, "<OUTPUT_PROMPT>nothing</OUTPUT_PROMPT> <RENDER_SUMMARY>a black dot"
                                          "</RENDER_SUMMARY> **Final answer: 999**", [wrong_image])])  # fmt: skip
    assert all(result[m] == 0.0 for m in METRICS[name]), result
    assert result["invalid_outputs"] == ""


@pytest.mark.parametrize("name", TASKS)
def test_random_baseline_draws_from_truth_and_a_wrong_answer(name, items, judge_server, tmp_path):
    score = TASKS[name][2]
    seen = {m: set() for m in METRICS[name]}
    for seed in range(12):
        doc = items[name][seed % N]
        text, image = planned(name, doc, oracle=False, seed=seed)
        result = score(doc, [output(tmp_path, text, [image])])
        for metric in METRICS[name]:
            seen[metric].add(result[metric])
    for metric, values in seen.items():
        assert max(values) == METRICS[name][metric] and min(values) == 0.0, (metric, values)


@pytest.mark.parametrize("name", TASKS)
def test_unusable_images_score_zero_with_a_reason(name, items, judge_server, tmp_path):
    score, doc = TASKS[name][2], items[name][1]
    text, image = planned(name, doc, oracle=True)
    missing = score(doc, [output(tmp_path, text, [])])
    assert missing["invalid_outputs"] == "wrong_image_count"
    (tmp_path / "broken.png").write_bytes(b"not a png")
    corrupt = score(doc, [UnifiedOutput("test", text=text, images=["broken.png"], root=str(tmp_path)).to_json()])
    assert corrupt["invalid_outputs"] == "corrupt_image"
    for result in (missing, corrupt):
        assert all(result[m] == 0.0 for m in IMAGE_METRICS[name])
        text_metrics = set(METRICS[name]) - set(IMAGE_METRICS[name])
        assert all(result[m] == METRICS[name][m] for m in text_metrics)  # the text is still judged
    malformed = score(doc, ["{not json"])
    assert malformed["invalid_outputs"] == "malformed_record" and all(malformed[m] == 0.0 for m in METRICS[name])
    unsupported = score(doc, [UnifiedOutput("test", unsupported="no image output").to_json()])
    assert all(unsupported[m] is None for m in METRICS[name]) and unsupported["invalid_outputs"] == ""


@pytest.mark.parametrize("name", TASKS)
def test_invalid_and_failed_judgements_score_zero_with_the_reason(name, items, tmp_path, monkeypatch):
    score, doc = TASKS[name][2], items[name][2]
    text, image = planned(name, doc, oracle=True)
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_CACHE", str(tmp_path / "judge.sqlite"))
    with OpenAICompatServer(fixed_reply("no verdict here")) as server:
        monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", server.base_url)
        reset_judge_state()
        invalid = score(doc, [output(tmp_path, text, [image])])
    assert invalid["invalid_outputs"] == "judge_invalid" and all(invalid[m] == 0.0 for m in METRICS[name])
    assert invalid["details"]["text"]["raw"] == "no verdict here"
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_CACHE", str(tmp_path / "judge2.sqlite"))
    with OpenAICompatServer(reference_judge.verdict) as server:
        server.inject([Fault.http(400)] * 10)
        monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", server.base_url)
        reset_judge_state()
        failed = score(doc, [output(tmp_path, text, [image])])
    reset_judge_state()
    assert failed["invalid_outputs"] == "judge_failed" and all(failed[m] == 0.0 for m in METRICS[name])


def test_code_keeps_the_best_of_several_images_and_needs_a_summary(items, judge_server, tmp_path):
    doc = items["code"][4]
    text, image = planned("code", doc, oracle=True)
    blank = Image.new("RGB", image.size, "white")
    result = code.score_code(doc, [output(tmp_path, "no tags at all", [blank, image])])
    assert (result["shape_color_score"], result["position_score"]) == (5.0, 5.0)
    assert result["details"]["image"]["verdict"] == "match" and result["details"]["image"]["judged_images"] == 2
    assert result["text_acc"] == 0.0 and result["details"]["text"] == {"skipped": "no <RENDER_SUMMARY> block"}
    assert code.render_summary("x <render_summary> two dots </RENDER_SUMMARY> y") == "two dots"


def test_official_code_verdict_rules():
    assert code.verdict(4, 4) == "match"
    assert code.verdict(2, 3) == code.verdict(5, 1) == "partial"
    assert code.verdict(3, 1) == code.verdict(0, 5) == "mismatch"


def test_geometry_prompt_fills_the_official_template(items):
    doc = items["geometry"][0]
    text = geometry.prompt(doc, "P: $PROBLEM_TEXT\nC: $CHOICES_TEXT\nAUX: $AUX_EN")
    assert doc["problem_text_en"] in text and doc["choices_en"][3] in text and doc["auxiliary_text_en"] in text
    assert "(no choices)" in geometry.prompt({**doc, "choices_en": []}, "$CHOICES_TEXT")


def test_judged_tasks_refuse_to_start_without_a_judge(monkeypatch):
    for name in ("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    judged = SimpleNamespace(
        config=SimpleNamespace(metadata={"judged": True, "benchmark": "uni_mmmu"}),
        judge_configs=UniMMMUTask.judge_configs,
    )
    judged.check_judges = lambda: UniMMMUTask.check_judges(judged)
    with pytest.raises(JudgeNotConfiguredError, match="LMMS_EVAL_UNIFY_JUDGE_BASE_URL"):
        judged.check_judges()
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv(JUDGES_ENV, "{not json")
    with pytest.raises(ValueError, match=JUDGES_ENV):
        judged.check_judges()
    for name in TASKS:
        config = (TASKS_DIR / f"uni_mmmu_{name}.yaml").read_text()
        assert "class: !function lmms_eval_unify.benchmarks.uni_mmmu.task.UniMMMUTask" in config
        assert "judged: true" in config


def test_one_template_can_use_its_own_judge_endpoint(items, tmp_path, monkeypatch):
    """The geometry text judge (Qwen3-32B officially) on a second endpoint, the rest on the global one."""
    doc = items["geometry"][0]
    text, image = planned("geometry", doc, oracle=True)
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_CACHE", str(tmp_path / "judge.sqlite"))
    with (
        OpenAICompatServer(fixed_reply("no verdict")) as default,
        OpenAICompatServer(reference_judge.verdict) as own,
    ):
        monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", default.base_url)
        monkeypatch.setenv(JUDGES_ENV, json.dumps({"uni_mmmu.geometry.text": {"base_url": own.base_url}}))
        reset_judge_state()
        result = geometry.score_geometry(doc, [output(tmp_path, text, [image])])
        assert own.requests_to()[0].model == "Qwen/Qwen3-32B"
    reset_judge_state()
    assert result["text_acc"] == 1.0 and result["img_acc"] == 0.0 and result["invalid_outputs"] == "judge_invalid"


def test_random_baseline_chance_levels(items):
    """Documented chance: geometry image 1/2 and text 1/4 (four choices), science and code 1/2 per part."""
    truths = {"geometry": lambda d: (d["auxiliary_image"], reference_judge.final_value(d["solution_en"])),
              "science": lambda d: (d["final_image"], science.explanation(d["output_prompt"])),
              "code": lambda d: (d["gt_image"], code.summary_text(d["summary"]))}  # fmt: skip
    chance = {"geometry": (0.5, 0.25), "science": (0.5, 0.5), "code": (0.5, 0.5)}
    for name, truth in truths.items():
        hits = np.zeros(2)
        for seed in range(400):
            doc = items[name][seed % N]
            text, image = planned(name, doc, oracle=False, seed=seed)
            true_image, true_text = truth(doc)
            answer = reference_judge.final_value(text) if name == "geometry" else text
            hits += (image.tobytes() == true_image.tobytes(), answer == true_text)
        assert np.abs(hits / 400 - chance[name]).max() < 0.08, (name, hits / 400)
