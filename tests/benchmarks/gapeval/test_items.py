"""Offline GapEval items: schema, determinism, and that the reference judge's reading of them matches the
ground truth for every candidate (so the oracle scores 100 and random exactly 1/len(answer_pool))."""

import datasets
import pytest

from lmms_eval_unify.benchmarks.gapeval import render
from lmms_eval_unify.benchmarks.gapeval.offline.data import (
    FEATURES,
    OFFLINE_FEATURES,
    category_path,
    generate,
)
from lmms_eval_unify.benchmarks.gapeval.offline.items import POOL_SIZE, make_items
from lmms_eval_unify.benchmarks.gapeval.paper import CATEGORIES

pytestmark = pytest.mark.heavy  # generated items (module fixture)


@pytest.fixture(scope="module")
def items():
    return {c: make_items(c, 12, seed=3) for c in CATEGORIES}


def test_generate_writes_every_category_in_the_schema(tmp_path):
    paths = generate(tmp_path, 2, seed=0)
    assert paths == [category_path(tmp_path, c) for c in CATEGORIES]
    for category, path in zip(CATEGORIES, paths, strict=True):
        table = datasets.load_dataset("parquet", data_files={"test": str(path)}, split="test")
        assert list(table.features) == [*FEATURES, *OFFLINE_FEATURES]
        assert table["category"] == [category] * 2 and len(set(table["id"])) == 2
        row = table[0]
        assert row["images"] and row["ref_image"] is not None and row["reference"] in row["answer_pool"]
        assert row["gen_uses_image"] == (category != "world_knowledge")  # multi-hop WK is text-to-image


def test_items_are_deterministic(items):
    again = make_items("reasoning", 12, seed=3)
    assert [i["reference"] for i in again] == [i["reference"] for i in items["reasoning"]]
    assert again[0]["ref_image"].tobytes() == items["reasoning"][0]["ref_image"].tobytes()
    assert [i["reference"] for i in make_items("reasoning", 12, seed=4)] != [i["reference"] for i in again]


@pytest.mark.parametrize("category", CATEGORIES)
def test_only_the_truth_matches_the_reference_content(items, category):
    for item in items[category]:
        pool, drawings = item["answer_pool"], item["pool_images"]
        assert len(pool) == len(set(pool)) == len(drawings) == POOL_SIZE
        reference = render.colour_counts(item["ref_image"])
        for text, drawing in zip(pool, drawings, strict=True):
            assert (render.colour_counts(drawing) == reference) == (text == item["reference"]), (text, pool)
            assert not render.is_copy(drawing, item["ref_image"])  # fresh renderings, never the reference
        if item["gen_uses_image"]:  # returning the input image unchanged is wrong
            assert render.colour_counts(item["images"][0]) != reference


def test_colour_counts_and_copy_detection():
    import random

    scene = render.draw_counts({("red", "circle"): 3, ("blue", "square"): 2}, random.Random(0))
    assert render.colour_counts(scene) == {"red": 3, "blue": 2}
    assert render.is_copy(scene.resize((300, 300)).resize(scene.size), scene)
    other = render.draw_counts({("red", "circle"): 3, ("blue", "square"): 2}, random.Random(1))
    assert render.colour_counts(other) == {"red": 3, "blue": 2} and not render.is_copy(other, scene)
