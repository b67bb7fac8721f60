"""`lmms-eval-unify data prepare gapeval`: the official raw layout (data_<id>/prompt.json + image/ + ref/)."""

import json

import datasets
from PIL import Image

from lmms_eval_unify.benchmarks.gapeval.offline.data import FEATURES, category_path
from lmms_eval_unify.cli import main as cli


def _question(root, name, prompt, inputs=1, refs=1, image_dir="image", as_list=False):
    folder = root / name
    (folder / image_dir).mkdir(parents=True)
    (folder / "ref").mkdir()
    (folder / "prompt.json").write_text(json.dumps([prompt] if as_list else prompt))
    for i in range(inputs):
        Image.new("RGB", (16, 16), (10 * i, 0, 0)).save(folder / image_dir / f"{i}.png")
    for i in range(refs):
        Image.new("RGB", (16, 16), (0, 200, 0)).save(folder / "ref" / f"ref{i}.jpg")
    return folder


def raw_layout(root):
    _question(root, "data_1", {"category": "Multi Hop", "subcategory": "literature",
              "und_prompt": "Who wrote it?", "gen_prompt": "Generate a photo of the author.",
              "reference": ["Gabriel Garcia Marquez", "a man with a moustache"]}, inputs=0)  # fmt: skip
    _question(
        root,
        "data_2",
        {
            "category": "counting",
            "subcategory": "Animals Counting",
            "problem": "Count",
            "gen_prompt": "Swap them",
            "reference": "2 ducks and 3 birds",
        },
        image_dir="inage",
        as_list=True,
    )
    _question(root, "data_3", {"category": "rule_based", "subcategory": "recolour", "und_prompt": "Describe",
              "gen_prompt": "Apply", "reference": "blue car"}, inputs=2)  # fmt: skip
    _question(root, "data_4", {"category": "physics", "und_prompt": "What happens?", "gen_prompt": "Draw it",
              "reference": "it floats"}, refs=0)  # fmt: skip
    _question(root, "data_5", {"category": "reasoning", "subcategory": "puzzle", "und_prompt": "Which?",
              "gen_prompt": "Highlight it", "reference": "B"})  # fmt: skip


def _rows(out, category):
    path = category_path(out, category)
    return list(datasets.load_dataset("parquet", data_files={"test": str(path)}, split="test"))


def test_prepare_converts_the_official_layout(tmp_path, capsys):
    raw_layout(tmp_path / "raw")
    assert cli(["data", "prepare", "gapeval", "--root", str(tmp_path / "raw"), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "reasoning: 2 questions" in printed and "world_knowledge: 1 questions" in printed
    [wk] = _rows(tmp_path / "out", "world_knowledge")
    assert list(wk) == list(FEATURES)
    assert wk["id"] == "data_1" and wk["reference"] == "Gabriel Garcia Marquez\na man with a moustache"
    assert wk["images"] == [] and wk["gen_uses_image"] is False and wk["ref_image"].size == (16, 16)
    [count] = _rows(tmp_path / "out", "numerical_perception")
    assert count["und_prompt"] == "Count" and len(count["images"]) == 1 and count["gen_uses_image"] is True
    [rule] = _rows(tmp_path / "out", "instruction_following")
    assert len(rule["images"]) == 2 and rule["subcategory"] == "recolour"
    physics, puzzle = _rows(tmp_path / "out", "reasoning")
    assert (physics["id"], physics["subcategory"], physics["ref_image"]) == ("data_4", "physics", None)
    assert puzzle["reference"] == "B"


def test_prepare_lists_every_problem_and_writes_nothing(tmp_path, capsys):
    raw = tmp_path / "raw"
    raw_layout(raw)
    _question(raw, "data_6", {"category": "cooking", "und_prompt": "a", "gen_prompt": "b", "reference": "c"})
    _question(raw, "data_7", {"category": "counting", "und_prompt": "a", "reference": "c"})
    _question(raw, "data_8", {"category": "counting", "und_prompt": "a", "gen_prompt": "b", "reference": "c"},
              inputs=0)  # fmt: skip
    bad = _question(raw, "data_9", {"category": "physics", "und_prompt": "a", "gen_prompt": "b", "reference": "c"})
    (bad / "ref" / "ref0.jpg").write_bytes(b"broken")
    assert cli(["data", "prepare", "gapeval", "--root", str(raw), "--out", str(tmp_path / "out")]) == 1
    printed = capsys.readouterr().out
    assert "unknown category 'cooking'" in printed and "missing gen_prompt" in printed
    assert "without an input image" in printed and "unreadable image" in printed
    assert "4 problem(s) in the release; nothing was written" in printed and not (tmp_path / "out").exists()
