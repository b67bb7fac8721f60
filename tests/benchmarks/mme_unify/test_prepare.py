"""data prepare mme_unify on a small fixture in the official release's schema, with missing files."""

import json
import os
from pathlib import Path

import datasets
import pytest
from PIL import Image

from lmms_eval_unify.benchmarks.mme_unify.offline.data import write_video
from lmms_eval_unify.benchmarks.mme_unify.offline.prepare import prepare, prepare_main


def _png(root, relative, colour="red"):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (16, 16), colour).save(path, format="PNG" if path.suffix == ".png" else "JPEG")
    return relative


def _release(tmp_path):
    ann, media = tmp_path / "Unify_Dataset", tmp_path / "media"
    sipu = _png(media, "Single_Image_Perception_and_Understanding/MME/1.png")
    _png(media, "Multiple_Images_and_Text_Interlaced/a.png")
    video = "Video_Perception_and_Understanding/v.mp4"
    write_video(media / video, [Image.new("RGB", (16, 16), "blue")] * 4)
    understanding = [
        {
            "question": "q",
            "answer": "B",
            "choice": ["A. no", "B. yes"],
            "image": [sipu],
            "category": "c",
            "subcategory": "s",
            "source": "MME",
            "question_id": 1,
        },
        {
            "question": "q <img> <img>",
            "answer": "A",
            "choice": ["(A) x", "(B) y"],
            "category": "c",
            "image": [
                "Multiple_Images_and_Text_Interlaced/a.png",
                "Multiple_Images_and_Text_Interlaced/missing.png",
            ],
            "subcategory": "s",
            "source": "SEED",
            "question_id": 2,
            "data_type": "Interleaved Image",
            "level": "L1",
        },
        {
            "question": "v",
            "answer": "A",
            "choice": ["（A）x", "（B）y"],
            "image": [video],
            "category": "c",
            "subcategory": "s",
            "source": "Video-MME",
            "question_id": 3,
        },
    ]
    generation = [
        {
            "category": "Fine-Grained_Image_Reconstruction",
            "Text_Prompt": " ",
            "source": "ImageNet",
            "id": 1,
            "data": {"image": _png(media, "Fine-Grained_Image_Reconstruction/f.png")},
        },
        {
            "category": "Text-Image_Editing",
            "Text_Prompt": "remove the dot",
            "source": "Imagenhub",
            "subcategory": "Mask guided image editing",
            "id": 2,
            "data": {
                "image": _png(media, "Text-Image_Editing/i.png"),
                "edited_image": _png(media, "Text-Image_Editing/e.png", "blue"),
                "mask_img": _png(media, "Text-Image_Editing/m.png", "white"),
            },
        },
        {
            "category": "Text-Image_Editing",
            "Text_Prompt": "make it blue",
            "source": "Emu_Edit",
            "subcategory": "color",
            "id": 3,
            "data": {
                "image": _png(media, "Text-Image_Editing/i.png"),
                "edited_image": _png(media, "Text-Image_Editing/e.png", "blue"),
            },
        },
        {
            "category": "Text-to-Video_Generation",
            "Text_Prompt": "a dog",
            "source": "MSR-VTT",
            "id": 1,
            "data": {},
        },
    ]
    csq_image = "Common_Sense_Questions/c.jpg"
    _png(media, "Common_Sense_Questions/c.jfif")  # the release ships .jfif where the JSON says .jpg
    fakes = {f"fake_image{i}": _png(media, f"Common_Sense_Questions/f{i}.png") for i in (1, 2, 3)}
    csq = [
        {
            "question": "q",
            "choice": ["A: a", "B: b", "C: c", "D: d"],
            "answer": "C",
            "id": 1,
            "data": {"image": csq_image, **fakes},
        }
    ]
    steps = {f"Step_{i}": _png(media, f"Visual_CoT/s{i}.png") for i in range(2)}
    vcot = [
        {
            "id": 14,
            "subcategory": "data_5x5",
            "category": "Visual CoT",
            "data": {"Action": ["Up", "Left", "Finish"], "Coordinate": [[3, 3], [2, 3], [1.3]], **steps},
        }
    ]
    files = {
        "Understanding/Understanding_Unified.json": understanding,
        "Generation/Generation_Unified.json": generation,
        "Uinfy_capability/Common_Sense_Question.json": csq,
        "Uinfy_capability/Visual_CoT.json": vcot,
        "Uinfy_capability/Image_Editing_and_Explaning/Unified_Explanation.json": [],
        "Uinfy_capability/Auxiliary_Lines..json": [],
        "Uinfy_capability/Spot_Diff.json": [],
    }
    for relative, content in files.items():
        (ann / relative).parent.mkdir(parents=True, exist_ok=True)
        (ann / relative).write_text(json.dumps(content))
    return ann, media


def _outside(media):
    """A readable image outside the media root (``data prepare`` must not import it)."""
    return media.parent / "outside" / _png(media.parent / "outside", "x.png")


def _replace_media(media, relative, make):
    (media / relative).unlink()
    make(media / relative)


def _edit_understanding(ann, key, value):
    path = ann / "Understanding/Understanding_Unified.json"
    items = json.loads(path.read_text())
    items[0][key] = value
    path.write_text(json.dumps(items))


def test_prepare_validates_files_and_reports_oddities(tmp_path):
    ann, media = _release(tmp_path)
    out, lines = tmp_path / "out", []
    problems = prepare(ann, media, out, log=lines.append)
    assert problems == ["missing media file Multiple_Images_and_Text_Interlaced/missing.png"]
    assert not out.exists() or not list(out.rglob("*.parquet"))  # nothing is written while anything is wrong
    assert prepare_main(["--annotations", str(ann), "--media", str(media), "--out", str(out)]) == 1
    _png(media, "Multiple_Images_and_Text_Interlaced/missing.png")
    lines.clear()
    assert prepare(ann, media, out, log=lines.append) == []
    report = "\n".join(lines)
    assert "sipu: 1 items" in report and "mitiu: 1 items" in report and "vpu: 1 items" in report
    assert "TVG items without reference video (skipped when scoring): 1" in report
    assert "VCoT items with malformed coordinates: 1" in report
    assert "(.jpg->.jfif): 1" in report
    csq = datasets.load_dataset("parquet", data_files=str(out / "mme_unify/csq/test.parquet"))["train"]
    assert len(csq[0]["candidates"]) == 4 and csq[0]["answer"] == "C"
    vcot = datasets.load_dataset("parquet", data_files=str(out / "mme_unify/vcot/test.parquet"))["train"]
    assert vcot[0]["grid_size"] == 5 and vcot[0]["actions"][-1] == "Finish"
    tie = datasets.load_dataset("parquet", data_files=str(out / "mme_unify/tie/test.parquet"))["train"]
    assert [r["subcategory"] for r in tie] == ["Mask guided image editing", "color"]
    assert tie[0]["mask_img"].getpixel((0, 0)) == (255, 255, 255) and tie[1]["mask_img"] is None
    assert prepare_main(["--annotations", str(ann), "--media", str(media), "--out", str(out)]) == 0
    (video,) = datasets.load_dataset("parquet", data_files=str(out / "mme_unify/vpu/test.parquet"))["train"]["video"]
    assert Path(video).is_relative_to(out.resolve() / "mme_unify" / "vpu" / "media") and Path(video).is_file()


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda ann, media: (media / "Visual_CoT/s1.png").write_bytes(b"\x89PNG\r\n\x1a\n broken"),
        lambda ann, media: (ann / "Uinfy_capability/Visual_CoT.json").write_text('[{"data": 7}]'),
        lambda ann, media: (ann / "Uinfy_capability/Spot_Diff.json").write_text('{"not": "a list"}'),
        lambda ann, media: (ann / "Generation/Generation_Unified.json").write_text("[1, [2], null]"),
        lambda ann, media: (ann / "Uinfy_capability/Common_Sense_Question.json").write_text("{broken json"),
        lambda ann, media: _replace_media(media, "Visual_CoT/s1.png", os.mkfifo),  # a FIFO hung data prepare
        lambda ann, media: _replace_media(media, "Visual_CoT/s1.png", lambda p: p.symlink_to(_outside(media))),
        lambda ann, media: _edit_understanding(ann, "image", [str(_outside(media))]),  # absolute: imported
        lambda ann, media: _edit_understanding(ann, "image", ["../outside/x.png"]),  # escaping: imported
        lambda ann, media: _edit_understanding(ann, "question", {"en": "q"}),  # a dict: stringified
        lambda ann, media: _edit_understanding(ann, "choice", [["A. no"], "B. yes"]),
    ],
)
def test_a_malformed_release_is_listed_and_nothing_is_written(tmp_path, capsys, corrupt):
    ann, media = _release(tmp_path)
    _png(media, "Multiple_Images_and_Text_Interlaced/missing.png")
    corrupt(ann, media)
    out = tmp_path / "out"
    assert prepare_main(["--annotations", str(ann), "--media", str(media), "--out", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "PROBLEM" in printed and "nothing was written" in printed and "Traceback" not in printed
    assert not out.exists() or not list(out.rglob("*.parquet"))
