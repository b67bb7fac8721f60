"""The shipped judge templates: structure, rendering, category additions and fidelity to the papers."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from PIL import Image

from lmms_eval_unify.judges import get_template, load_templates

SEEDS = Path("/work/shared/seeds")
PAPER_PREFIX = {"GapEval": "gapeval.", "UniG2U": "unig2u.", "Uni-MMMU": "uni_mmmu."}
UNIG2U_RECONSTRUCTED = ("unig2u.geometry3k", "unig2u.auxsolidmath", "unig2u.answer_match")
"""UniG2U answer judges the paper does not print: written from what the released code's judges check."""
EXPECTED = {
    *UNIG2U_RECONSTRUCTED,
    # GapEval: the eight und/gen judgements of Appendix F plus the knowledge-manipulation pair.
    *(
        f"gapeval.{side}.{cat}"
        for side in ("und", "gen")
        for cat in ("world_knowledge", "numerical_perception", "instruction_following", "reasoning")
    ),
    "gapeval.und.knowledge_manipulation",
    "gapeval.gen.knowledge_editing",
    "unig2u.ra",
    "unig2u.al",
    "uni_mmmu.geometry.image",
    "uni_mmmu.geometry.text",
    "uni_mmmu.science.text",
    "uni_mmmu.science.image",
    "uni_mmmu.code.text",
    "uni_mmmu.code.image",
}
UNIG2U_CATEGORIES = {"real_world", "mathematical", "stem", "puzzles", "chart_table", "spatial", "perception"}


def dummy_inputs(template_id: str) -> tuple[dict[str, str], dict[str, Image.Image]]:
    template = get_template(template_id)
    variables = {name: f"<value of {name}>" for name in template.variables}
    images = {slot: Image.new("RGB", (4, 4), (i * 40, 0, 0)) for i, slot in enumerate(template.slots)}
    return variables, images


def user_text(template_id: str, **extra: str) -> str:
    variables, images = dummy_inputs(template_id)
    rendered = get_template(template_id).render(variables | extra, images)
    return "\n".join(p["text"] for p in rendered.messages[-1]["content"] if p["type"] == "text")


def test_expected_templates_with_provenance() -> None:
    templates = load_templates()
    assert set(templates) == EXPECTED
    for template_id, template in templates.items():
        assert template_id.startswith(PAPER_PREFIX[template.paper])
        assert template.version >= 1 and template.notes
        reconstructed = template_id in UNIG2U_RECONSTRUCTED  # Uni-MMMU: transcribed from eval_ummmu.py
        assert template.origin == ("reconstructed" if reconstructed else "transcribed")
        assert any(spec.required for spec in template.outputs)
        assert template.default_model


def test_official_decoding_defaults() -> None:
    assert get_template("unig2u.ra").default_model == "gpt-4o-2024-11-20"
    assert get_template("unig2u.ra").temperature == 0.0 and get_template("unig2u.ra").max_tokens == 3000
    assert get_template("uni_mmmu.geometry.text").default_model == "Qwen/Qwen3-32B"
    assert get_template("uni_mmmu.code.image").image_max_width == 2048
    for side, turns in (("und", 2), ("gen", 1)):
        template = get_template(f"gapeval.{side}.reasoning")
        assert template.turns == turns
    assert get_template("gapeval.und.reasoning").followup == "Are you sure? Think carefully."


@pytest.mark.parametrize("template_id", sorted(EXPECTED))
def test_every_template_renders_all_inputs(template_id: str) -> None:
    template = get_template(template_id)
    variables, images = dummy_inputs(template_id)
    rendered = template.render(variables, images)
    text = user_text(template_id)
    for name, value in variables.items():
        assert value in text and "{" + name + "}" not in text
    assert len(rendered.image_hashes) == len(template.slots)
    assert rendered.messages[-1]["role"] == "user"


def test_render_rejects_bad_inputs() -> None:
    template = get_template("gapeval.gen.reasoning")
    variables, images = dummy_inputs("gapeval.gen.reasoning")
    with pytest.raises(ValueError, match="missing variables"):
        template.render({"question": "q"}, images)
    with pytest.raises(ValueError, match="unknown variables"):
        template.render(variables | {"typo": "x"}, images)
    with pytest.raises(ValueError, match="unknown image slots"):
        template.render(variables, images | {"imgae": images["image"]})
    with pytest.raises(ValueError, match="'image' is required"):
        template.render(variables, {})
    assert template.render(variables, {"image": images["image"]}).image_hashes  # optional slots may be absent


def test_variable_values_are_not_reinterpreted() -> None:
    text = user_text("gapeval.und.reasoning", answer="{reference} and {question}")
    assert "Here is the answer: {reference} and {question}" in text


@pytest.mark.parametrize("metric", ["ra", "al"])
def test_unig2u_category_additions(metric: str) -> None:
    template_id = f"unig2u.{metric}"
    header = f"- {metric.upper()} Criteria"
    assert header not in user_text(template_id, task="vsp_collision")
    assert f"## Spatial Intelligence {header}" in user_text(template_id, category="spatial")
    assert f"## Perception Reasoning {header}" in user_text(template_id, task="illusionbench_icon")
    assert f"## Chart & Table Reasoning {header}" in user_text(template_id, task="chartqa100")
    assert f"## Physics {header}" in user_text(template_id, task="chartqa100", category="stem")
    assert set(get_template(template_id).addendum.texts) == UNIG2U_CATEGORIES
    with pytest.raises(ValueError, match="unknown category"):
        user_text(template_id, category="cooking")


def _squash(text: str) -> str:
    """Compare texts modulo layout: drop whitespace, table bars and the arrows lost by PDF extraction."""
    return re.sub(r"[\s|→]", "", text)


OUR_LINES = ("Here is the reference answer:", "Here is the ground_truth:", "Respond with a JSON object")


@pytest.mark.skipif(not SEEDS.is_dir(), reason="paper text extractions not available")
@pytest.mark.parametrize(
    "template_id",
    sorted(t for t in EXPECTED if not t.startswith("uni_mmmu.") and t not in UNIG2U_RECONSTRUCTED),
)
def test_transcriptions_match_the_papers(template_id: str) -> None:
    paper = {"gapeval": "004_*.txt", "unig2u": "002_*.txt"}[template_id.split(".")[0]]
    source = _squash(next(SEEDS.glob(paper)).read_text(encoding="utf-8"))
    template = get_template(template_id)
    placeholders = {"{question}": "[Question]", "{answer}": "[Answer]", "{reference}": "[Answer]"}
    texts = [s.text for s in template.segments if s.text] + list(
        template.addendum.texts.values() if template.addendum else []
    )
    checked = 0
    for line in "\n".join(texts).splitlines():
        if not line.strip() or line.startswith(OUR_LINES):
            continue
        if template_id.startswith("gapeval."):
            for placeholder, paper_name in placeholders.items():
                line = line.replace(placeholder, paper_name)
        assert _squash(line) in source, line
        checked += 1
    assert checked >= 5


def test_digest_names_the_text_not_the_notes() -> None:
    """Each shipped template has its own digest; editing any prompt text changes it under the same id and
    version, editing the prose notes does not."""
    templates = load_templates()
    digests = {t.digest for t in templates.values()}
    assert len(digests) == len(templates) and all(re.fullmatch(r"[0-9a-f]{12}", d) for d in digests)
    for template in templates.values():
        first = next(i for i, s in enumerate(template.segments) if s.text)
        segments = list(template.segments)
        segments[first] = dataclasses.replace(segments[first], text=segments[first].text + " ")
        assert dataclasses.replace(template, segments=tuple(segments)).digest != template.digest
        assert dataclasses.replace(template, notes=template.notes + " edited").digest == template.digest
