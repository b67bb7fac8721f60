"""data prepare mme_unify on a small fixture in the official release's schema, with missing files."""

import json

import datasets
from PIL import Image

from lmms_eval_unify.benchmarks.mme_unify.data import prepare_main, write_video
from lmms_eval_unify.benchmarks.mme_unify.prepare import prepare


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


def test_prepare_validates_files_and_reports_oddities(tmp_path):
    ann, media = _release(tmp_path)
    out, lines = tmp_path / "out", []
    assert prepare(ann, media, out, log=lines.append) == 1
    report = "\n".join(lines)
    assert "MISSING Multiple_Images_and_Text_Interlaced/missing.png" in report
    assert "sipu: 1 items" in report and "mitiu: 0 items" in report and "vpu: 1 items" in report
    assert "TVG items without reference video (skipped when scoring): 1" in report
    assert "VCoT items with malformed coordinates: 1" in report
    assert "(.jpg->.jfif): 1" in report
    csq = datasets.load_dataset("parquet", data_files=str(out / "mme_unify/csq/test.parquet"))["train"]
    assert len(csq[0]["candidates"]) == 4 and csq[0]["answer"] == "C"
    vcot = datasets.load_dataset("parquet", data_files=str(out / "mme_unify/vcot/test.parquet"))["train"]
    assert vcot[0]["grid_size"] == 5 and vcot[0]["actions"][-1] == "Finish"
    assert prepare_main(["--annotations", str(ann), "--media", str(media), "--out", str(out)]) == 1
