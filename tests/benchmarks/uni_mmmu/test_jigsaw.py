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
from lmms_eval_unify.metrics.tiny import TINY_DREAMSIM_TYPE, write_tiny_dreamsim_checkpoint
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.puzzles.jigsaw import JIGSAW, final_answer_text, jigsaw_completions
from lmms_eval_unify.testing.released_dreamsim import released_dreamsim


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
