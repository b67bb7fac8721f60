import json

import datasets
import numpy as np
import pytest

from lmms_eval_unify.benchmarks.uni_mmmu.offline.code import generate_code_items
from lmms_eval_unify.benchmarks.uni_mmmu.offline.geometry import generate_geometry_items
from lmms_eval_unify.benchmarks.uni_mmmu.offline.prepare import (
    GEOMETRY_JSON,
    JIGSAW_METADATA,
    SCIENCE_JSON,
    SLIDING_SUMMARY,
    SVG_METADATA,
    prepare_main,
)
from lmms_eval_unify.benchmarks.uni_mmmu.offline.science import generate_science_items
from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.jigsaw import generate_jigsaw_items
from lmms_eval_unify.puzzles.sliding import SOLVED


def _official_layout(root, n):
    folder = root / JIGSAW_METADATA.parent
    folder.mkdir(parents=True)
    items = []
    for index, item in enumerate(generate_jigsaw_items(n, seed=3)):
        names = {}
        for key in ("ref_image", "cand0_image", "cand1_image", "gt_completed_image", "gt_wrong_image"):
            names[key] = f"{index}_{key}.png"
            item[key].save(folder / names[key])
        items.append({
            "id": index, "label": item["label"], "ref_panel": {"ref_image_path": names["ref_image"]},
            "candidate_paths": [names["cand0_image"], names["cand1_image"]],
            "gt_completed_2x2_path": names["gt_completed_image"], "gt_wrong_2x2_path": names["gt_wrong_image"],
        })  # fmt: skip
    (root / JIGSAW_METADATA).write_text(json.dumps({"items": items}))
    return items


def test_prepare_converts_the_official_jigsaw_layout(tmp_path):
    items = _official_layout(tmp_path / "src", 3)
    assert prepare_main(["--root", str(tmp_path / "src"), "--out", str(tmp_path / "out")]) == 0
    rows = list(datasets.Dataset.from_parquet(str(tmp_path / "out/uni_mmmu/jigsaw/test.parquet")))
    assert [r["label"] for r in rows] == [i["label"] for i in items]
    assert rows[0]["gt_completed_image"].size == rows[0]["ref_image"].size


def test_prepare_reports_missing_files(tmp_path, capsys):
    _official_layout(tmp_path / "src", 2)
    (tmp_path / "src" / JIGSAW_METADATA.parent / "1_cand0_image.png").unlink()
    assert prepare_main(["--root", str(tmp_path / "src"), "--out", str(tmp_path / "out")]) == 1
    printed = capsys.readouterr().out
    assert "missing 1_cand0_image.png" in printed and "nothing was written" in printed
    assert not list((tmp_path / "out").rglob("*.parquet"))  # all or nothing


def _official_judged_layout(root, n):
    """geometry (filtered.json), science (dim_all.json) and code (svg/metadata.json) as in the official data."""
    math = root / GEOMETRY_JSON.parent
    (math / "imgs").mkdir(parents=True)
    geometry = {}
    for index, item in enumerate(generate_geometry_items(n, seed=2)):
        for key in ("original_image", "auxiliary_image"):
            item[key].save(math / "imgs" / f"{index}_{key}.png")
            item[key] = f"imgs/{index}_{key}.png"
        geometry.setdefault("book", {})[f"q {index}"] = {**item, "solution": "中文解答"}
    (root / GEOMETRY_JSON).write_text(json.dumps(geometry))
    science_dir = root / SCIENCE_JSON.parent
    science_dir.mkdir(parents=True)
    blocks = {}
    for index, item in enumerate(generate_science_items(n, seed=2)):
        item["initial_image"].save(science_dir / f"{index}.png")
        block = blocks.setdefault(item["level_1_category"], {"level_1_category": item["level_1_category"],
                                                             "level_2_category": item["level_2_category"],
                                                             "samples": []})  # fmt: skip
        block["samples"].append(
            {
                "input_image_file_path_list": [f"data/science/{index}.png"],
                "input_prompt": item["input_prompt"],
                "output_prompt": item["output_prompt"],
            }
        )
    (root / SCIENCE_JSON).write_text(json.dumps(list(blocks.values())))
    svg_dir = root / SVG_METADATA.parent
    svg_dir.mkdir(parents=True)
    samples = []
    for index, item in enumerate(generate_code_items(n, seed=2)):
        (svg_dir / f"{index}.svg").write_text(item["svg"])
        sample = {"id": item["id"], "difficulty": item["difficulty"], "svg": f"{index}.svg"}
        if index % 2 == 0:  # the others fall back to the rasterised SVG, as the official evaluator does
            item["gt_image"].save(svg_dir / f"{index}.png")
            sample["png"] = f"{index}.png"
        samples.append(sample)
    (root / SVG_METADATA).write_text(json.dumps({"samples": samples}))


def test_prepare_converts_the_official_geometry_science_and_code_layouts(tmp_path):
    _official_judged_layout(tmp_path / "src", 3)
    assert prepare_main(["--root", str(tmp_path / "src"), "--out", str(tmp_path / "out")]) == 0
    out = tmp_path / "out" / "uni_mmmu"
    assert not (out / "jigsaw").exists()  # absent in the source: skipped, not an error
    geometry = list(datasets.Dataset.from_parquet(str(out / "geometry/test.parquet")))
    assert [g["id"] for g in geometry] == ["book__q_0", "book__q_1", "book__q_2"]
    assert geometry[0]["auxiliary_image"].size == geometry[0]["original_image"].size
    assert len(geometry[1]["choices_en"]) == 4 and "Final answer" in geometry[1]["solution_en"]
    science = list(datasets.Dataset.from_parquet(str(out / "science/test.parquet")))
    assert [s["id"] for s in science] == ["case_01", "case_02", "case_03"]
    assert {s["level_1_category"] for s in science} == {"Physics", "Chemistry", "Biology"}
    code = list(datasets.Dataset.from_parquet(str(out / "code/test.parquet")))
    expected = generate_code_items(3, seed=2)
    for row, item in zip(code, expected, strict=True):
        assert row["svg"] == item["svg"] and row["difficulty"] == item["difficulty"]
        assert np.array_equal(np.asarray(row["gt_image"]), np.asarray(item["gt_image"]))


def test_prepare_reports_broken_judged_items(tmp_path, capsys):
    _official_judged_layout(tmp_path / "src", 3)
    (tmp_path / "src" / GEOMETRY_JSON.parent / "imgs" / "1_auxiliary_image.png").write_bytes(b"not a png")
    blocks = json.loads((tmp_path / "src" / SCIENCE_JSON).read_text())
    blocks[0]["samples"][0]["output_prompt"] = " "
    (tmp_path / "src" / SCIENCE_JSON).write_text(json.dumps(blocks))
    (tmp_path / "src" / SVG_METADATA.parent / "2.svg").write_text(
        '<!DOCTYPE svg [<!ENTITY a "x">]><svg xmlns="http://www.w3.org/2000/svg"/>'
    )
    assert prepare_main(["--root", str(tmp_path / "src"), "--out", str(tmp_path / "out")]) == 1
    printed = capsys.readouterr().out
    assert "book__q_1: unreadable imgs/1_auxiliary_image.png" in printed
    assert "case_01: empty output_prompt" in printed
    assert "SVG does not render safely" in printed and "3 problem(s) in the release; nothing was written" in printed
    assert not list((tmp_path / "out").rglob("*.parquet"))


def test_a_failed_prepare_keeps_the_data_written_before(tmp_path, capsys):
    _official_layout(tmp_path / "src", 2)
    assert prepare_main(["--root", str(tmp_path / "src"), "--out", str(tmp_path / "out")]) == 0
    written = tmp_path / "out/uni_mmmu/jigsaw/test.parquet"
    before = written.read_bytes()
    (tmp_path / "src" / JIGSAW_METADATA.parent / "1_cand0_image.png").write_bytes(b"\x89PNG truncated")
    assert prepare_main(["--root", str(tmp_path / "src"), "--out", str(tmp_path / "out")]) == 1
    assert written.read_bytes() == before and not list((tmp_path / "out/uni_mmmu").glob(".prepare-*"))


@pytest.mark.parametrize("bad", [[1, 2], "text", 7, None, {"book": [1]}, {"book": {"q": "not a dict"}}])
def test_wrongly_typed_release_files_are_listed_not_raised(tmp_path, capsys, bad):
    _official_judged_layout(tmp_path / "src", 2)
    (tmp_path / "src" / GEOMETRY_JSON).write_text(json.dumps(bad))
    assert prepare_main(["--root", str(tmp_path / "src"), "--out", str(tmp_path / "out")]) == 1
    printed = capsys.readouterr().out
    assert "PROBLEM" in printed and "Traceback" not in printed
    assert not list((tmp_path / "out").rglob("*.parquet"))


def test_prepare_without_any_official_data_fails(tmp_path, capsys):
    assert prepare_main(["--root", str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    assert "no Uni-MMMU data" in capsys.readouterr().out


def _official_sliding_layout(root, names_per_item):
    """data/sliding/summary_steps_le_8.json with step folders; item k's step images play ``played[k]`` while
    its steps_words json names ``named[k]``."""
    domain = DOMAINS["sliding"]
    folder = root / SLIDING_SUMMARY.parent
    items = []
    for index, (named, played) in enumerate(names_per_item, 1):
        steps = folder / f"demo_3x3_{index:05d}_steps"
        steps.mkdir(parents=True)
        state = domain.apply(SOLVED, "down")  # every direction is legal from the middle-right empty cell
        state = domain.apply(state, "right")
        domain.render(state).save(steps / "demo_step_0000.png")
        for k, move in enumerate(played, 1):
            state = domain.apply(state, move)
            domain.render(state).save(steps / f"demo_step_{k:04d}.png")
        (folder / f"demo_3x3_steps_words_{index:05d}.json").write_text(json.dumps({"steps_words": named}))
        items.append({"steps_dir": f"data/sliding/{steps.name}",
                      "steps_words_json": f"data/sliding/demo_3x3_steps_words_{index:05d}.json"})  # fmt: skip
    (root / SLIDING_SUMMARY).write_text(json.dumps({"items": items}))


def test_prepare_sliding_keeps_step_images_and_reports_moves_they_contradict(tmp_path, capsys):
    _official_sliding_layout(
        tmp_path / "src",
        [(["down", "left"], ["down", "left"]), (["up", "right"], ["down", "left"]), (["Down"], ["down"])],
    )
    assert prepare_main(["--root", str(tmp_path / "src"), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "WARNING sliding demo_3x3_00001" not in printed
    assert (
        "WARNING sliding demo_3x3_00002_steps: step images [1, 2] differ from the moves ['up', 'right'] "
        "(they agree with up/down and left/right swapped)" in printed
    )
    assert "demo_3x3_00003_steps: move names ['Down'] are not lower case" in printed
    assert "sliding: 2 warning(s)" in printed
    rows = list(datasets.Dataset.from_parquet(str(tmp_path / "out/uni_mmmu/sliding/test.parquet")))
    assert [r["id"] for r in rows] == ["demo_3x3_00001_steps", "demo_3x3_00002_steps", "demo_3x3_00003_steps"]
    assert [len(r["step_images"]) for r in rows] == [2, 2, 1] and json.loads(rows[2]["steps_words"]) == ["Down"]
    first = rows[0]
    state = DOMAINS["sliding"].state_from_grid(DOMAINS["sliding"].parse_grid(first["initial_image"]))
    for move, image in zip(["down", "left"], first["step_images"], strict=True):
        state = DOMAINS["sliding"].apply(state, move)
        assert DOMAINS["sliding"].parse_grid(image) == DOMAINS["sliding"].grid_of(state)
    assert np.array_equal(np.asarray(first["final_image"]), np.asarray(first["step_images"][-1]))


def test_prepare_sliding_reports_a_missing_moves_file(tmp_path, capsys):
    _official_sliding_layout(tmp_path / "src", [(["down"], ["down"]), (["down"], ["down", "left"])])
    (tmp_path / "src/data/sliding/demo_3x3_steps_words_00001.json").unlink()
    assert prepare_main(["--root", str(tmp_path / "src"), "--out", str(tmp_path / "out")]) == 1
    printed = capsys.readouterr().out
    assert "demo_3x3_00001_steps: need one *0000*.png and the steps_words json" in printed
    assert "WARNING sliding demo_3x3_00002_steps: 1 moves but 2 step images" in printed
    assert not list((tmp_path / "out").rglob("*.parquet"))
