"""The Uni-MMMU jigsaw scorer: DreamSim image score (tiny backbone) and text accuracy."""

import json
import random

import datasets
import pytest
import torch
from PIL import Image

from lmms_eval_unify.benchmarks.uni_mmmu import jigsaw
from lmms_eval_unify.benchmarks.uni_mmmu.offline.data import generate
from lmms_eval_unify.generation.protocols import Phase
from lmms_eval_unify.metrics import MissingWeightsError
from lmms_eval_unify.metrics.tiny import TINY_DREAMSIM_TYPE, write_tiny_dreamsim_checkpoint
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.puzzles.jigsaw import JIGSAW, final_answer_text, jigsaw_completions
from lmms_eval_unify.testing.released_dreamsim import released_dreamsim

FLOAT32_COSINE_ROUNDING = 2.5e-7
"""How far from 0 the official (float32, as released) distance of two identical images may land."""


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    out = tmp_path_factory.mktemp("data")
    paths = generate(out, 6, seed=1)
    jig = [p for p in paths if p.parent.name == "jigsaw"][0]
    return list(datasets.Dataset.from_parquet(str(jig)))


@pytest.fixture(scope="module", autouse=True)
def tiny_dreamsim(tmp_path_factory):
    """The tiny DreamSim checkpoint folder, configured for the scorer (default variant: official)."""
    directory = tmp_path_factory.mktemp("dreamsim")
    write_tiny_dreamsim_checkpoint(directory)
    config = {"dreamsim": {"backbone": TINY_DREAMSIM_TYPE, "weights": str(directory), "device": "cpu"}}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(jigsaw.METRICS_ENV, json.dumps(config))
        yield directory


def _record(tmp_path, text, images):
    names = []
    for i, image in enumerate(images):
        image.save(tmp_path / f"p{i}.png")
        names.append(f"p{i}.png")
    return UnifiedOutput("image_sequence_then_answer", text=text, images=names, root=str(tmp_path)).to_json()


def test_oracle_scores_one_and_swapped_panels_do_not(docs, tmp_path):
    doc = docs[0]
    plan = JIGSAW.plan(doc, [], random.Random(0), oracle=True)
    panels = [plan.image(Phase("render", k)) for k in (1, 2)]
    result = jigsaw.score_jigsaw(doc, [_record(tmp_path, plan.text(Phase("final", 2)), panels)])
    assert result["text_acc"] == 1.0 and result["img_score"] == pytest.approx(1.0, abs=1e-6)
    assert result["invalid_outputs"] == ""
    swapped = jigsaw.score_jigsaw(doc, [_record(tmp_path, "", panels[::-1])])
    assert swapped["text_acc"] == 0.0 and swapped["img_score"] < 1.0 - 1e-4


def test_wrong_image_count_is_penalised_and_reported(docs, tmp_path):
    doc = docs[0]
    completions = jigsaw_completions(doc)
    text = final_answer_text(doc["label"])
    result = jigsaw.score_jigsaw(doc, [_record(tmp_path, text, [completions[0]])])
    assert result["img_score"] == 0.0 and result["text_acc"] == 1.0
    assert result["invalid_outputs"] == "wrong_image_count"
    unsupported = UnifiedOutput("image_sequence_then_answer", unsupported="generate_image").to_json()
    assert jigsaw.score_jigsaw(doc, [unsupported])["img_score"] is None


def test_image_score_is_the_released_evaluators_bit_for_bit(docs, tmp_path, tiny_dreamsim):
    """The per-sample distance equals what the released evaluator computes on the same files with dreamsim's
    own entry point (``Image.open``, ``convert("RGB")``, its ``preprocess``, ``model(a, b)``; (d0 + d1) / 2),
    for outputs of other sizes and PIL modes than the references."""
    model, preprocess = released_dreamsim(tiny_dreamsim)

    def released_distance(a: Image.Image, b: Image.Image) -> float:
        with torch.no_grad():
            return float(model(preprocess(a.convert("RGB")), preprocess(b.convert("RGB"))).item())

    forms = [
        lambda image: image.resize((300, 210), Image.Resampling.BILINEAR),
        lambda image: image.resize((97, 133), Image.Resampling.NEAREST).quantize(32),
        lambda image: image.convert("RGBA").resize((256, 256)),
        lambda image: image.convert("L"),
    ]
    for k, doc in enumerate(docs[:3]):
        completions = jigsaw_completions(doc)
        outputs = [forms[(k + i) % len(forms)](completions[1 - i if k == 2 else i]) for i in (0, 1)]
        folder = tmp_path / str(k)
        folder.mkdir()
        result = jigsaw.score_jigsaw(doc, [_record(folder, "", outputs)])
        opened = [Image.open(folder / f"p{i}.png") for i in (0, 1)]
        expected = (released_distance(opened[0], completions[0]) + released_distance(opened[1], completions[1])) / 2.0
        assert result["details"]["distance"] == expected and result["img_score"] == 1.0 - expected


def test_a_batch_of_items_scores_each_as_the_released_evaluator(docs, tiny_dreamsim):
    """Several items in one call (one batched DreamSim call): each item's distance is the released one."""
    model, preprocess = released_dreamsim(tiny_dreamsim)

    def released_distance(a: Image.Image, b: Image.Image) -> float:
        with torch.no_grad():
            return float(model(preprocess(a.convert("RGB")), preprocess(b.convert("RGB"))).item())

    references = [jigsaw_completions(doc) for doc in docs[:3]]
    generated = [[second.resize((120, 90)), first.convert("L")] for first, second in references]
    expected = [
        (released_distance(g0, r0) + released_distance(g1, r1)) / 2.0
        for (g0, g1), (r0, r1) in zip(generated, references, strict=True)
    ]
    scored = jigsaw.jigsaw_dreamsim_score(generated, references, jigsaw.metric_config("dreamsim"))
    assert list(scored.distances) == expected and scored.penalised == (False, False, False)


def test_wrong_counts_and_unreadable_images_are_penalised_item_by_item(docs, tmp_path):
    references = jigsaw_completions(docs[0])
    other = jigsaw_completions(docs[1])
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not an image")
    items = [list(other), list(references), other[:1], None, [other[0], str(broken)], [other[0], str(tmp_path / "no")]]
    config = jigsaw.metric_config("dreamsim")
    result = jigsaw.jigsaw_dreamsim_score(items, [references] * len(items), config)
    unpenalised = jigsaw.jigsaw_dreamsim_score([list(other)], [references], config).distances[0]
    assert result.distances[0] == pytest.approx(unpenalised, abs=1e-9) and unpenalised > 1e-4
    assert result.distances[1] == pytest.approx(0.0, abs=FLOAT32_COSINE_ROUNDING)
    assert result.distances[2:] == (jigsaw.PENALTY_DISTANCE,) * 4
    assert result.penalised == (False, False, True, True, True, True)
    assert result.score == pytest.approx(1.0 - sum(result.distances) / 6.0, abs=1e-12)


def test_a_missing_checkpoint_raises_instead_of_penalising(docs, tmp_path):
    config = {**jigsaw.metric_config("dreamsim"), "weights": str(tmp_path / "absent")}
    with pytest.raises(MissingWeightsError):
        jigsaw.jigsaw_dreamsim_score([list(jigsaw_completions(docs[0]))], [jigsaw_completions(docs[0])], config)
