"""MME-Unify hooks in process: video and image inputs through the core's rules, prompts, '-' handling and
the random instrument's chance level."""

import functools
import json
import random
from pathlib import Path

import datasets
import pytest
from lmms_eval.utils import load_yaml_config

from lmms_eval_unify.benchmarks.mme_unify import inputs as utils
from lmms_eval_unify.benchmarks.mme_unify import spaces
from lmms_eval_unify.benchmarks.mme_unify.generation import score_generation
from lmms_eval_unify.benchmarks.mme_unify.offline.data import generate
from lmms_eval_unify.benchmarks.mme_unify.scoring import METRICS_ENV, score_unify_qa, score_vcot
from lmms_eval_unify.generation.protocols import Phase
from lmms_eval_unify.generation.visuals import model_inputs
from lmms_eval_unify.output.record import Step, UnifiedOutput

TASKS = Path(__file__).resolve().parents[3] / "tasks" / "mme_unify"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("mme_unify")
    generate(root, 3, seed=0)

    def load(subtask):
        path = root / "mme_unify" / subtask / "test.parquet"
        return datasets.load_dataset("parquet", data_files=str(path))["train"]

    return load


@pytest.fixture(autouse=True)
def tiny_clip(monkeypatch):
    monkeypatch.setenv(METRICS_ENV, json.dumps({"clip_choice": {"backbone": "tiny", "weights": "random"}}))


def test_vpu_names_the_six_frame_rule_and_keeps_the_understanding_options():
    vpu = load_yaml_config(str(TASKS / "mme_unify_vpu.yaml"), mode="full")["generation_kwargs"]
    template = load_yaml_config(str(TASKS / "_understanding_template_yaml"), mode="full")["generation_kwargs"]
    assert vpu == {**template, "num_frames": 6}


def test_vpu_video_becomes_six_frames_or_the_first_frame(data):
    doc = data("vpu")[0]
    visuals = utils.video_doc_to_visual(doc)
    n_frames = load_yaml_config(str(TASKS / "mme_unify_vpu.yaml"), mode="full")["generation_kwargs"]["num_frames"]
    assert len(model_inputs(visuals, watches_video=False, max_images=None, n_frames=n_frames)) == 6
    assert len(model_inputs(visuals, watches_video=False, max_images=1, n_frames=n_frames)) == 1
    assert model_inputs(visuals, watches_video=True, max_images=None)[0].path == doc["video"]


def test_interleaved_placeholders_and_image_order(data):
    doc = data("mitiu")[0]
    prompt = utils.understanding_doc_to_text(doc)
    assert prompt.count("<img>") == 2 and all(c in prompt for c in doc["choice"])
    assert len(utils.image_doc_to_visual(doc)) == 2


def test_vcot_prompt_substitutes_the_true_grid_size(data):
    for doc in data("vcot"):
        n = doc["grid_size"]
        prompt = utils.vcot_doc_to_text(doc)
        assert f"The grid is {n}×{n}" in prompt and f"top-right cell is ({n - 1},0)" in prompt


@pytest.mark.parametrize("subtask", ["csq", "vcot", "fir"])
def test_unsupported_outputs_give_dash(data, subtask):
    doc = data(subtask)[0]
    raw = UnifiedOutput("answer_and_image", unsupported="no generate_image").to_json()
    hook = {"csq": functools.partial(score_unify_qa, subtask="CSQ"), "vcot": score_vcot}.get(
        subtask, functools.partial(score_generation, subtask="FIR")
    )
    result = hook(doc, [raw])
    assert all(v is None for k, v in result.items() if k not in ("invalid_outputs", "details"))
    assert result["invalid_outputs"] == "" and len(result) > 2


def test_tvg_item_without_reference_is_skipped_not_invalid(data):
    doc = next(d for d in data("tvg") if not d["video"])
    result = score_generation(doc, [UnifiedOutput("video", video_frames=["f.png"]).to_json()], subtask="TVG")
    assert result["fvd"] is None and result["invalid_outputs"] == ""


def _qa_record(plan, tmp_path, name):
    image = plan.image(Phase("generate"))
    image.save(tmp_path / f"{name}.png")
    return UnifiedOutput(
        "answer_and_image", text=plan.text(Phase("answer")), images=[f"{name}.png"], root=str(tmp_path)
    )


def test_random_unify_qa_is_at_chance(data, tmp_path):
    rng, hits, draws = random.Random(0), [], 0
    for subtask, space in (
        ("csq", spaces.LETTER_AND_IMAGE),
        ("sd", spaces.LETTER_AND_IMAGE),
        ("iee", spaces.IEE),
    ):
        for doc in data(subtask):
            for _ in range(20):
                plan = space.plan(doc, [], rng, oracle=False)
                raw = _qa_record(plan, tmp_path, f"r{draws}").to_json()
                result = score_unify_qa(doc, [raw], subtask=subtask.upper())
                hits.append((result["text_correct"], result["image_correct"]))
                draws += 1
    text = sum(h[0] for h in hits) / draws
    image = sum(h[1] for h in hits) / draws
    # chance 1/4 each (4 options, 4 candidates), both 1/16; 180 draws -> sd 0.032
    assert abs(text - 0.25) < 0.1 and abs(image - 0.25) < 0.1
    assert sum(h[0] * h[1] for h in hits) / draws < 0.15


def test_oracle_vcot_plan_scores_every_step(data, tmp_path):
    doc = data("vcot")[0]
    plan = spaces.VCOT.plan(doc, [], random.Random(0), oracle=True)
    moves = [a for a in doc["actions"] if a != "Finish"]
    steps = []
    for i in range(1, len(moves) + 1):
        plan.image(Phase("render", i)).save(tmp_path / f"s{i}.png")
        steps.append(Step(text=plan.text(Phase("plan", i)), image=f"s{i}.png"))
    steps.append(Step(text=plan.text(Phase("plan", len(moves) + 1))))
    raw = UnifiedOutput("visual_cot_steps", steps=steps, root=str(tmp_path)).to_json()
    result = score_vcot(doc, [raw])
    assert result["action_steps_correct"] == result["coordinate_steps_correct"] == result["n_steps"]
    # "Finish" draws nothing and is not image-scored
    assert result["image_steps_correct"] == result["image_steps"] == result["n_steps"] - 1
