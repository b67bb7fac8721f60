import random

import datasets
import pytest

from lmms_eval_unify.benchmarks.unig2u import spaces
from lmms_eval_unify.benchmarks.unig2u.offline.data import generate
from lmms_eval_unify.benchmarks.unig2u.prompts import direct_prompt, gta_prompt, illusion_candidates
from lmms_eval_unify.benchmarks.unig2u.scoring import answer_check, relaxed_correct
from lmms_eval_unify.benchmarks.unig2u.spec import HUB_ROOT, JUDGED_FAMILIES, SUBTASKS
from lmms_eval_unify.benchmarks.unig2u.task import concatenate, resolve_files
from lmms_eval_unify.generation.protocols import Phase, split_generate_then_answer_prompt
from lmms_eval_unify.integration.task import LocalDataMissingError

pytestmark = pytest.mark.heavy  # the generated UniG2U set (module fixture)

TEXT_SUBTASKS = [
    name for name, s in SUBTASKS.items() if s.family not in ("maze", "sliding", "jigsaw", *JUDGED_FAMILIES)
]
SPACE = {"realunify": spaces.MULTIPLE_CHOICE, "visual_puzzles": spaces.MULTIPLE_CHOICE, "mmsi": spaces.MMSI,
         "chartqa": spaces.CHARTQA, "vsp": spaces.VSP}  # fmt: skip


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("unig2u")
    generate(root, 6, seed=3)
    return root


def load_docs(name: str, data_dir) -> list[dict]:
    subtask = SUBTASKS[name]
    paths = resolve_files([HUB_ROOT + f for f in subtask.files], str(data_dir))
    parts = [datasets.load_dataset("parquet", data_files={"x": p}, split="x") for p in paths]
    return list(parts[0] if len(parts) == 1 else concatenate(parts, ["gmap", "collision"]))


def space_and_scorer(name: str):
    family = SUBTASKS[name].family
    space = spaces.ILLUSION[name] if family == "illusion" else SPACE[family]
    return space, answer_check(name)


def test_local_files_mirror_the_hub_layout(data_dir, tmp_path):
    assert resolve_files(HUB_ROOT + "chartqa100/chartqa100.parquet", None) == [
        HUB_ROOT + "chartqa100/chartqa100.parquet"
    ]
    with pytest.raises(LocalDataMissingError, match="chartqa100.parquet"):
        resolve_files([HUB_ROOT + "chartqa100/chartqa100.parquet"], str(tmp_path))
    vsp = load_docs("vsp_reason", data_dir)
    assert len(vsp) == 12 and {d["source"] for d in vsp} == {"gmap", "collision"}
    assert vsp[0]["car_dir"] is None and vsp[-1]["gt_north_south"] is None


@pytest.mark.parametrize("name", TEXT_SUBTASKS)
def test_oracle_answers_score_1_in_both_modes(name, data_dir):
    space, scorer = space_and_scorer(name)
    for doc in load_docs(name, data_dir):
        gen_prompt, question = split_generate_then_answer_prompt(gta_prompt(name, doc), {})
        assert gen_prompt and question and "[GEN_PROMPT]" not in question
        assert question != direct_prompt(name, doc)  # the GtA stage-2 question mentions the auxiliary image
        plan = space.plan(doc, [], random.Random(0), oracle=True)
        assert plan.image(Phase("generate", 1)).size  # GtA stage 1 gets an image
        assert scorer(doc, plan.text(Phase("answer", 2)))[0] == 1.0


def expected_chance(name: str, doc: dict) -> float:
    """Analytic expected score of the random answer space on one document."""
    family = SUBTASKS[name].family
    if family in ("realunify", "visual_puzzles", "mmsi"):
        return 0.25
    if family == "illusion":
        candidates = illusion_candidates(name.split("_")[0])
        scorer = answer_check(name)
        return sum(scorer(doc, c)[0] for c in candidates) / len(candidates)
    if family == "chartqa":
        low, high = spaces.CHART_RANDOM_RANGE
        return sum(relaxed_correct(str(k), doc["answer"]) for k in range(low, high + 1)) / (high - low + 1)
    if doc["car_dir"] is None:
        low, high = spaces.VSP_RANDOM_RANGE
        inside = all(low <= doc[k] <= high for k in ("gt_north_south", "gt_east_west"))
        return inside / (high - low + 1) ** 2
    times = spaces.COLLISION_RANDOM_TIMES
    hits = [sum(abs(t - doc[k]) <= 1.0 for t in times) / len(times) for k in ("gt_car", "gt_person")]
    return sum(hits) / 2


@pytest.mark.parametrize(
    "name", ["attn_focus", "msr", "algorithmic", "icon_shape", "in_scene", "chartqa", "vsp_reason"]
)
def test_random_answers_land_at_the_analytic_chance_level(name, data_dir):
    space, scorer = space_and_scorer(name)
    docs = load_docs(name, data_dir)
    rng, draws = random.Random(7), 400
    observed = sum(
        scorer(doc, space.plan(doc, [], rng, oracle=False).text(Phase("answer")))[0]
        for doc in docs
        for _ in range(draws)
    ) / (draws * len(docs))
    expected = sum(expected_chance(name, doc) for doc in docs) / len(docs)
    assert abs(observed - expected) < 0.035, (observed, expected)
    assert expected < 1.0


def test_prepare_copies_a_snapshot_and_checks_the_paper_sizes(data_dir, tmp_path):
    from lmms_eval_unify.benchmarks.unig2u.offline.prepare import prepare

    # The generated set has 6 rows per file, not the paper's sizes: prepare lists every subtask and copies nothing.
    copied, problems = prepare(data_dir / "unig2u", tmp_path / "out")
    assert not copied and len(problems) == len(SUBTASKS) and "the paper has 100" in " ".join(problems)
    assert not (tmp_path / "out").exists()
    copied, problems = prepare(tmp_path / "empty", tmp_path / "out")
    assert not copied and all("download kkv233/unig2u_dataset" in p for p in problems)


def test_prepare_mirrors_the_snapshot_layout(data_dir, tmp_path, monkeypatch):
    import dataclasses

    from lmms_eval_unify.benchmarks.unig2u import spec as subtasks
    from lmms_eval_unify.benchmarks.unig2u.offline.prepare import prepare

    sizes = {name: dataclasses.replace(s, n=6 * len(s.files)) for name, s in SUBTASKS.items()}
    monkeypatch.setattr(subtasks, "SUBTASKS", sizes)
    copied, problems = prepare(data_dir / "unig2u", tmp_path / "out")
    assert problems == [] and len(copied) == len({f for s in SUBTASKS.values() for f in s.files})
    assert resolve_files([HUB_ROOT + "vsp/vsp_collision_50.parquet"], str(tmp_path / "out"))


def test_prompts_follow_the_appendix_wording():
    assert "contains a icon" in direct_prompt("icon_shape", {}) and "contains an icon" in gta_prompt("icon_shape", {})
    assert "contribute to forming the shape. Draw" in gta_prompt("in_shape", {})
    assert "contribute to forming the logo shape. Draw" in gta_prompt("logo_shape", {})
    question = direct_prompt("algorithmic", {"question": " Which? ", "options": ["w", "x", "y", "z"]})
    assert question == (
        "Question: Which?\nOptions:\n(A) w\n(B) x\n(C) y\n(D) z\n"
        "Answer the question with the option's letter from the given choices directly."
    )
    assert direct_prompt("algorithmic", {"question": "Q", "options": None}).startswith(
        "Question: Q\nOptions: Choose from (A) (B) (C) (D) in the image."
    )


def test_subtask_table_follows_the_scoring_contract():
    from lmms_eval_unify.benchmarks.unig2u import paper as contract
    from lmms_eval_unify.benchmarks.unig2u.spec import JUDGED, NOT_YET

    assert set(SUBTASKS) | set(NOT_YET) == set(contract.SUBTASKS)
    assert set(JUDGED) <= set(SUBTASKS) and not set(SUBTASKS) & set(NOT_YET)
    paper_sizes = {s: n for subs in contract.CATEGORY_SUBTASKS.values() for s, n in subs.items()}
    assert {name: s.n for name, s in SUBTASKS.items()} == {name: paper_sizes[name] for name in SUBTASKS}
    assert sum(s.n for s in SUBTASKS.values()) == 3000 - sum(paper_sizes[name] for name in NOT_YET)


def test_jigsaw_reuses_the_shared_parser_with_unig2u_fields(data_dir):
    import numpy as np

    from lmms_eval_unify.benchmarks.unig2u.scoring import score_jigsaw
    from lmms_eval_unify.puzzles.jigsaw import generate_jigsaw_items

    docs = load_docs("jigsaw", data_dir)
    assert set(docs[0]) == {"ref_image", "cand0_image", "cand1_image", "label"}  # the published columns
    # The completion built from the published fields is the generator's ground-truth completion.
    [item] = generate_jigsaw_items(1, seed=9)
    doc = {k: item[k] for k in ("ref_image", "cand0_image", "cand1_image", "label")}
    built = spaces.jigsaw_completion(doc, item["label"])
    assert np.array_equal(np.asarray(built), np.asarray(item["gt_completed_image"]))
    rng, hits, draws = random.Random(3), 0, 300
    for doc in docs:
        oracle = spaces.JIGSAW.plan(doc, [], rng, oracle=True)
        assert score_jigsaw(doc, [oracle.text(Phase("answer"))])["acc"] == 1.0  # Direct
        assert score_jigsaw(doc, [oracle.text(Phase("final"))])["acc"] == 1.0  # GtA final text
        assert oracle.image(Phase("render", 1)).size == oracle.image(Phase("render", 2)).size
        hits += sum(
            score_jigsaw(doc, [spaces.JIGSAW.plan(doc, [], rng, oracle=False).text(Phase("answer"))])["acc"]
            for _ in range(draws)
        )
    assert abs(hits / (draws * len(docs)) - 0.5) < 0.05
    assert score_jigsaw(docs[0], ['<FINAL_ANSWER_JSON>{"choice": "0"}</FINAL_ANSWER_JSON>'])["acc"] == 0.0
