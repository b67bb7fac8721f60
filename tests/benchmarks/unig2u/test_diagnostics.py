import json
import shutil

import datasets
import pytest
from PIL import Image

from lmms_eval_unify.benchmarks.unig2u import diagnostics
from lmms_eval_unify.benchmarks.unig2u.offline.data import generate
from lmms_eval_unify.benchmarks.unig2u.prompts import gta_prompt
from lmms_eval_unify.judges import judge_stats, reset_judge_state
from lmms_eval_unify.judges.reference import reference_verdict
from lmms_eval_unify.output.record import Step, UnifiedOutput
from lmms_eval_unify.run.context import EXTRA_MEDIA_ROOTS_ENV
from lmms_eval_unify.testing.openai_server import OpenAICompatServer

pytestmark = pytest.mark.heavy  # each test generates a UniG2U set


def _row(root, task: str, doc_id: int, prompt: str, answer: str) -> dict:
    relative = f"{task}/{doc_id}/generated_00.png"
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (32, 32), "red").save(root / relative)
    record = UnifiedOutput("generate_then_answer", text=answer, images=[relative], root=str(root),
                           steps=[Step(text="draw it", image=relative), Step(text=answer)])  # fmt: skip
    return {"doc_id": doc_id, "filtered_resps": [record.to_json()], "input": prompt}


def _policy(request) -> str:
    text = request.text
    score = 5 if "Chart & Table" in text else 3  # the category addition picks the score
    key = "reasoning_visual_score" if "reasoning_visual_score" in text else "answer_visual_score"
    return json.dumps({key: score if key == "reasoning_visual_score" else score - 1, "reasoning": "ok"})


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    generate(tmp_path / "data", 2, seed=1)
    monkeypatch.setenv("LMMS_EVAL_UNIFY_DATA_DIR", str(tmp_path / "data"))
    out = tmp_path / "run"
    media = out / "unify_media" / "m-0123456789"  # the run's own media folder, as our models write it
    out.mkdir()
    chart = datasets.load_dataset(
        "parquet", data_files=str(tmp_path / "data/unig2u/chartqa100/chartqa100.parquet"), split="train"
    )
    rows = [_row(media, "unig2u_chartqa_gta", i, gta_prompt("chartqa", chart[i]), "12") for i in range(2)]
    (out / "x_samples_unig2u_chartqa_gta.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    msr = _row(media, "unig2u_msr_gta", 0, gta_prompt("msr", {"question": "Q?"}), "`A`")
    unsupported = {
        "doc_id": 1,
        "filtered_resps": [UnifiedOutput("generate_then_answer", unsupported="x").to_json()],
    }
    (out / "x_samples_unig2u_msr_gta.jsonl").write_text(json.dumps(msr) + "\n" + json.dumps(unsupported))
    (out / "x_samples_unig2u_msr.jsonl").write_text(json.dumps(msr))  # Direct: never judged
    return out


def test_ra_al_per_category_and_sample_weighted_overall(run_dir, tmp_path):
    reset_judge_state()
    with OpenAICompatServer(_policy, api_key="k") as server:
        config = {"base_url": server.base_url, "api_key": "k", "cache_path": str(tmp_path / "cache.sqlite")}
        result = diagnostics.run(run_dir, config=config)
        requests = server.requests_to()
    assert len(requests) == 6  # 3 judged samples x (RA, AL)
    # original image(s) + the generated one: ChartQA has one input image, MMSI two
    assert sorted(len(r.images) for r in requests) == [2, 2, 2, 2, 3, 3]
    table = result.table()
    assert table["chart_table"] == {"RA": 5.0, "AL": 4.0, "n_ra": 2, "n_al": 2}
    assert table["spatial_intelligence"]["RA"] == 3.0
    assert table["overall"]["RA"] == pytest.approx((5 * 2 + 3) / 3)
    assert table["overall"]["AL"] == pytest.approx((4 * 2 + 2) / 3)
    assert result.unusable == {"unsupported": 1}
    reset_judge_state()


def test_a_runs_own_media_is_judged_with_no_variable_and_nothing_else_is_read(run_dir, tmp_path, monkeypatch):
    """No ``$LMMS_EVAL_UNIFY_MEDIA_ROOTS``: the run's images are read from its media folders (also after the run
    folder moved), an image outside them is refused (``unsafe_path``); the reference judges (``judge serve``)
    answer every RA and AL prompt with a verdict (they answered 558 of 558 without one)."""
    monkeypatch.delenv(EXTRA_MEDIA_ROOTS_ENV)
    outside = _row(tmp_path / "elsewhere", "unig2u_msr_gta", 2, gta_prompt("msr", {"question": "Q?"}), "`B`")
    with (run_dir / "x_samples_unig2u_msr_gta.jsonl").open("a") as samples:
        samples.write("\n" + json.dumps(outside))
    moved = shutil.move(run_dir, tmp_path / "moved")
    reset_judge_state()
    with OpenAICompatServer(reference_verdict, api_key="k") as server:
        config = {"base_url": server.base_url, "api_key": "k", "cache_path": str(tmp_path / "cache.sqlite")}
        result = diagnostics.run(moved, config=config)
        stats = judge_stats()["unig2u_ra_al"]
    assert result.unusable == {"unsupported": 1, "unsafe_path": 1}
    assert (stats["judgements"], stats.get("invalid", 0), stats.get("failed", 0)) == (6, 0, 0)
    table = result.table()
    assert table["chart_table"]["n_ra"] == table["chart_table"]["n_al"] == 2
    assert table["spatial_intelligence"]["n_ra"] == table["spatial_intelligence"]["n_al"] == 1
    assert table["chart_table"]["AL"] == table["spatial_intelligence"]["AL"] == 5.0  # "12", "`A`" answer them
    reset_judge_state()
