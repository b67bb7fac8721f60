import json

import datasets

from lmms_eval_unify.benchmarks.uni_mmmu.data import prepare_main
from lmms_eval_unify.benchmarks.uni_mmmu.jigsaw import generate_jigsaw_items
from lmms_eval_unify.benchmarks.uni_mmmu.prepare import JIGSAW_METADATA


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
    assert "missing 1_cand0_image.png" in capsys.readouterr().out
    assert len(datasets.Dataset.from_parquet(str(tmp_path / "out/uni_mmmu/jigsaw/test.parquet"))) == 1
