"""Our adapters also answer lmms-eval's own tasks, in its convention (plain text answers, stage-2 text for its
``generate_visual_cot`` tasks, JSON ``{"text", "images"}`` for image outputs), next to our tasks in one run.

lmms-eval's tasks read their data from the Hub; here each is a local YAML that ``include:``s the built-in one
and points ``dataset_kwargs.data_files`` at a generated parquet, run through the real CLI with
``--include_path``.
"""

import io
import json
from pathlib import Path

import lmms_eval
import pandas as pd
import pytest
from PIL import Image

from lmms_eval_unify.integration.model import lmms_eval_response
from lmms_eval_unify.output.record import UnifiedOutput, parse_output

BUILTIN_TASKS = Path(lmms_eval.__file__).parent / "tasks"


def png(colour: str) -> dict:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), colour).save(buffer, format="PNG")
    return {"bytes": buffer.getvalue(), "path": None}


def write_local_builtin_tasks(root: Path) -> Path:
    """Two built-in tasks on local parquets: RealUnify (``generate_until``, letters parsed from raw text) and
    an IllusionBench GtA twin of UniG2U (``generate_visual_cot``, ``str(results[0])`` scored)."""
    root.mkdir()
    realunify = root / "realunify.parquet"
    pd.DataFrame(
        [
            {"image": png(c), "prompt": f"Which letter? A. red B. blue ({c})", "answer": a, "task_type": "t"}
            for c, a in (("red", "A"), ("blue", "B"))
        ]
    ).to_parquet(realunify)
    illusion = root / "illusion.parquet"
    names = ["animal-1-Medieval_Village-Easy-1.5-90.png", "cat-2-Ocean-Hard-1.5-90.png"]
    pd.DataFrame([{"image_name": n, "image": png("green")} for n in names]).to_parquet(illusion)
    (root / "local_realunify.yaml").write_text(
        f"include: {BUILTIN_TASKS / 'realunify' / 'realunify_mental_tracking.yaml'}\n"
        "task: local_realunify\ndataset_path: parquet\ndataset_name: null\n"
        f"dataset_kwargs:\n  data_files:\n    test: {realunify}\n"
    )
    illusion_yaml = BUILTIN_TASKS / "unig2u" / "illusionbench" / "illusionbench_arshia_icon_scene_visual_cot.yaml"
    (root / "local_illusion_gta.yaml").write_text(
        f"include: {illusion_yaml}\ntask: local_illusion_gta\n"
        f"dataset_kwargs:\n  data_files:\n    Illusion_ICON: {illusion}\n"
    )
    return root


def first_response(sample: dict) -> str:
    response = sample["filtered_resps"]
    return response[0] if isinstance(response, list) else response


def test_lmms_eval_response_follows_its_convention(tmp_path):
    answer = UnifiedOutput("direct", text="B", root=str(tmp_path))
    assert lmms_eval_response(answer) == "B"
    gta = UnifiedOutput("generate_then_answer", text="cat", images=["t/0/generated_00.png"], root="/m")
    assert lmms_eval_response(gta) == "cat"
    drawn = UnifiedOutput("answer_and_image", text="ok", images=["t/0/image_00.png"], root="/m")
    assert json.loads(lmms_eval_response(drawn)) == {"text": "ok", "images": ["/m/t/0/image_00.png"]}
    video = UnifiedOutput("video", video_frames=["t/0/frame_000.png"], root="/m")
    assert json.loads(lmms_eval_response(video))["images"] == ["/m/t/0/frame_000.png"]
    assert lmms_eval_response(UnifiedOutput("direct", error="RuntimeError: boom")) == ""
    assert lmms_eval_response(UnifiedOutput("image_only", unsupported="lacks generate_image")) == ""


@pytest.mark.slow
def test_tiny_janus_answers_builtin_tasks_in_their_convention_and_ours_in_our_record(
    tiny_janus, puzzle_data, tmp_path, run_cli
):
    include = write_local_builtin_tasks(tmp_path / "builtin")
    out = run_cli(
        "janus_pro",
        f"pretrained={tiny_janus},max_new_tokens=8",
        "unig2u_chartqa_gta,local_realunify,local_illusion_gta",
        puzzle_data,
        tmp_path / "out",
        extra=("--include_path", str(include)),
    )
    samples, results = out["samples"], out["results"]
    assert set(samples) == {"unig2u_chartqa_gta", "local_realunify", "local_illusion_gta"}
    for task in ("local_realunify", "local_illusion_gta"):  # plain text, never our record's JSON
        assert len(samples[task]) == 2
        for sample in samples[task]:
            response = first_response(sample)
            assert not response.lstrip().startswith("{"), (task, response)
    assert 0.0 <= results["local_realunify"]["mental_tracking,none"] <= 1.0
    assert 0.0 <= results["local_illusion_gta"]["scene_recall,none"] <= 1.0
    (media,) = (tmp_path / "out" / "unify_media").glob("janus_pro-*")
    records = [json.loads(p.read_text()) for p in (media / "local_illusion_gta").rglob("record.json")]
    assert len(records) == 2 and all(r["protocol"] == "generate_then_answer" for r in records)
    assert all((media / r["images"][0]).is_file() for r in records)  # the stage-1 image is kept on disk
    for sample in samples["unig2u_chartqa_gta"]:  # our task: our record, with its stage-1 image
        parsed = parse_output(first_response(sample))
        assert parsed.failure is None and parsed.record.protocol == "generate_then_answer"
        assert len(parsed.load_images()) == 1
